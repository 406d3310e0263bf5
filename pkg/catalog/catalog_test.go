package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadAndPrice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	data := `[{"name":"m5.large","architecture":"amd64","resources":{"cpu":"2"},"offerings":[
	 {"Price":0.1,"Available":true,"Requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]},{"key":"topology.kubernetes.io/zone","operator":"In","values":["a"]}]},
	 {"Price":0.03,"Available":true,"Requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["spot"]},{"key":"topology.kubernetes.io/zone","operator":"In","values":["a"]}]}]}]`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := c.Price("m5.large", "a", "spot"); !ok || p != 0.03 {
		t.Fatalf("spot price: got %v %v", p, ok)
	}
	if _, ok := c.Price("m5.large", "b", "spot"); ok {
		t.Fatal("zone b has no offering")
	}
	if _, ok := c.Price("m6.large", "a", "spot"); ok {
		t.Fatal("unknown type has no price")
	}
	if len(c.Digest) != 64 {
		t.Fatalf("digest %q", c.Digest)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("want an error for a missing file")
	}
}
