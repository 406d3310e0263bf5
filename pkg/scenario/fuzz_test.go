package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds the scenario decoder arbitrary bytes. It must never
// panic or hang; every error must be a *FieldError naming the file; and a
// scenario it accepts must hold what validation promises. Seeds: every
// committed scenario, plus testdata/fuzz/FuzzParse (malformed inputs).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../fixtures/scenarios/*.yaml")
	more, _ := filepath.Glob("../../fixtures/scenarios/*/*.yaml")
	for _, p := range append(files, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(valid))
	l := &Loader{FixturesDir: "../../fixtures", GenericCatalog: "/nonexistent/generic.json"}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := l.Parse("fuzz.yaml", data)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *FieldError, got %T: %v", err, err)
			}
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("the error does not name the file: %v", err)
			}
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
