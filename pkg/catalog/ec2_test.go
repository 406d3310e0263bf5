package catalog

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/ec2/catalog.golden.json")

// The committed sample (describe-instance-types of six types, a price
// file, describe-instance-type-offerings) converts to the golden catalog:
// amd64 and arm64, a GPU, the VPC CNI's pods, an offering per zone that
// has the type and capacity type with a price; a type without a price and
// a Mac left out with the reason.
func TestFromEC2Sample(t *testing.T) {
	dir := "testdata/ec2"
	got, notes, err := FromEC2Files(filepath.Join(dir, "describe-instance-types.json"), filepath.Join(dir, "prices.yaml"),
		filepath.Join(dir, "describe-instance-type-offerings.json"), "us-west-2")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(dir, "catalog.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("catalog (-want +got):\n%s", d)
	}
	wantNotes := []string{"mac1.metal: architecture [x86_64_mac] is not one Kubernetes nodes run", "t2.micro: no price in the price file"}
	if d := cmp.Diff(wantNotes, notes); d != "" {
		t.Errorf("notes (-want +got):\n%s", d)
	}
	// What it wrote is a catalog nodeprint reads, with its prices.
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, got, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := c.Price("m5.large", "us-west-2b", "spot"); !ok || p != 0.0371 {
		t.Errorf("m5.large spot in us-west-2b: %v %v, want 0.0371", p, ok)
	}
	if _, ok := c.Price("g4dn.xlarge", "us-west-2a", "on-demand"); ok {
		t.Error("g4dn.xlarge is offered only in us-west-2b")
	}
}

func TestFromEC2RefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	types := "testdata/ec2/describe-instance-types.json"
	for _, c := range []struct{ name, types, prices, region, want string }{
		{"a price with a typo", types, "region: us-west-2\nzones: [us-west-2a]\nprices:\n  m5.large: {on-demnd: 0.096}\n", "", "prices.m5.large.on-demnd: unknown field"},
		{"no zones", types, "region: us-west-2\nprices:\n  m5.large: {on-demand: 0.096}\n", "", "zones: list the zones"},
		{"a zone of another region", types, "region: us-west-2\nzones: [eu-west-1a]\nprices:\n  m5.large: {on-demand: 0.096}\n", "", `zones[0]: "eu-west-1a" is not a zone of region us-west-2`},
		{"another region asked for", types, "region: us-west-2\nzones: [us-west-2a]\nprices:\n  m5.large: {on-demand: 0.096}\n", "eu-west-1", "region: \"us-west-2\", but --region eu-west-1"},
		{"no price for any type", types, "zones: [us-west-2a]\nprices:\n  x1.huge: {on-demand: 9}\n", "", "the catalog would be empty"},
		{"not describe-instance-types", write("t.json", `{"Reservations": []}`), "zones: [a]\nprices:\n  m5.large: {on-demand: 1}\n", "", "no instance types"},
	} {
		prices := write("p.yaml", c.prices)
		_, _, err := FromEC2Files(c.types, prices, "", c.region)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
