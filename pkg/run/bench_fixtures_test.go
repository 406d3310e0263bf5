package run

import (
	"path/filepath"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// The benchmark scenarios (fixtures/bench) load and build like any other.
func TestBenchScenariosBuild(t *testing.T) {
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json", ValidateFault: faults.Validate}
	files, err := filepath.Glob("../../fixtures/bench/*.yaml")
	if err != nil || len(files) != 4 {
		t.Fatalf("fixtures/bench: %v, %d files, want 4", err, len(files))
	}
	ss, err := l.LoadFiles(files...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if _, err := Build(s, s.Metadata.Name+"-x"); err != nil {
			t.Errorf("%s: %v", s.Path, err)
		}
	}
}
