package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPrivateFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{
		"pki/ca.key": true, "pki/admin.key": true, "pki/ca.crt": false,
		"kubeconfig.yaml": true, "karpenter-via-kubeconfig.yaml": true, "logs/karpenter.log": false,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := PrivateFiles(dir); err != nil {
		t.Fatal(err)
	}
	for name, secret := range files {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); secret && got != 0o600 || !secret && got != 0o644 {
			t.Errorf("%s: mode %o (secret: %v)", name, got, secret)
		}
	}
}
