package scenario

import (
	"testing"

	"github.com/nodeprint/nodeprint/pkg/strictyaml/strictyamltest"
)

// FuzzParse feeds the scenario decoder arbitrary bytes. It must never
// panic or hang; every error must be a *FieldError naming the file; and a
// scenario it accepts must hold what validation promises. Seeds: every
// committed scenario, plus testdata/fuzz/FuzzParse (malformed inputs).
func FuzzParse(f *testing.F) {
	strictyamltest.Seed(f, "../../fixtures/scenarios/*.yaml", "../../fixtures/scenarios/*/*.yaml")
	f.Add([]byte(valid))
	l := &Loader{FixturesDir: "../../fixtures", GenericCatalog: "/nonexistent/generic.json"}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := l.Parse("fuzz.yaml", data)
		if err != nil {
			strictyamltest.CheckRejection(t, err, "fuzz.yaml")
			return
		}
		if len(s.Spec.Workloads) == 0 || s.Metadata.Name == "" {
			t.Fatalf("accepted a scenario without a name or workloads: %+v", s)
		}
		for _, w := range s.Spec.Workloads {
			if w.Replicas < 0 || w.Replicas > MaxReplicas {
				t.Fatalf("accepted %d replicas", w.Replicas)
			}
		}
		if s.Spec.Settle.Quiet.Duration <= 0 || s.Spec.Settle.Timeout.Duration <= 0 {
			t.Fatalf("defaults not applied: %+v", s.Spec.Settle)
		}
	})
}
