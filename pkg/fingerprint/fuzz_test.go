package fingerprint

import (
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/strictyaml/strictyamltest"
)

// FuzzParseBaseline feeds the baseline decoder arbitrary bytes. It must
// never panic or hang; every error must be a *strictyaml.FieldError naming
// the file; and a baseline it accepts must encode and parse again. Seeds:
// every committed baseline, plus testdata/fuzz/FuzzParseBaseline.
func FuzzParseBaseline(f *testing.F) {
	strictyamltest.Seed(f, "../../fingerprints/*.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBaseline("fuzz.yaml", data)
		if err != nil {
			strictyamltest.CheckRejection(t, err, "fuzz.yaml")
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
