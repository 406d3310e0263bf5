package fingerprint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// FuzzParseBaseline feeds the baseline decoder arbitrary bytes. It must
// never panic or hang; every error must be a *strictyaml.FieldError naming
// the file; and a baseline it accepts must encode and parse again. Seeds:
// every committed baseline, plus testdata/fuzz/FuzzParseBaseline.
func FuzzParseBaseline(f *testing.F) {
	files, _ := filepath.Glob("../../fingerprints/*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBaseline("fuzz.yaml", data)
		if err != nil {
			var fe *strictyaml.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *strictyaml.FieldError, got %T: %v", err, err)
			}
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if b.Runs < 1 || len(b.Selections) == 0 {
			t.Fatalf("accepted a baseline without runs: %+v", b)
		}
		out, err := yaml.Marshal(b)
		if err != nil {
			t.Fatalf("an accepted baseline does not encode: %v", err)
		}
		if _, err := ParseBaseline("fuzz.yaml", out); err != nil {
			t.Fatalf("an accepted baseline does not parse again after encoding: %v", err)
		}
	})
}
