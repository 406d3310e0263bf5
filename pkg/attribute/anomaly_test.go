package attribute

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnomalyRoundTripAndStrictLoad(t *testing.T) {
	in := healthy()
	in.Observation.Pods["p1"].LastTermination, in.Observation.Pods["p1"].Restarts = "OOMKilled", 1
	v := classify(t, in)
	a := NewAnomaly("leak", "memory-leak", map[string]string{"rate": "20Mi"}, in.Observed, in.Observed, in.Diff, v)
	if a.Rule != "L3-oom-killed" || len(a.Evidence) == 0 {
		t.Fatalf("anomaly: %+v", a)
	}
	for _, s := range a.Signals {
		if !s.Available || s.Value == 0 {
			t.Errorf("signals should hold the available, non-zero ones: %+v", s)
		}
	}
	path := filepath.Join(t.TempDir(), "leak.yaml")
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadAnomaly(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(a, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	b, _ := os.ReadFile(path)
	bad := filepath.Join(filepath.Dir(path), "bad.yaml")
	if err := os.WriteFile(bad, append(b, []byte("colour: blue\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadAnomaly(bad); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown field: got %v", err)
	}
}
