package sensitivity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// run is a fingerprint whose pod-ready median is podReady seconds.
func run(podReady float64) *fingerprint.Fingerprint {
	return &fingerprint.Fingerprint{
		Selection: fingerprint.Selection{InstanceTypes: map[string]int{"c-8x/on-demand": 1}, Nodes: 1, Zones: 1},
		Timing: fingerprint.Timing{Clock: observe.ReceivedClock,
			PodReady:       fingerprint.Percentiles{Count: 10, P50: podReady, P90: podReady + 0.1},
			NodeClaimReady: fingerprint.Percentiles{Count: 1, P50: 1, P90: 1}},
		Outcomes: fingerprint.Outcomes{Running: 10},
	}
}

// runs draws n runs with a pod-ready median around median·factor, with a
// 3% spread.
func runs(rng *rand.Rand, n int, median, factor float64) []*fingerprint.Fingerprint {
	var out []*fingerprint.Fingerprint
	for range n {
		out = append(out, run(median*factor*math.Exp(0.03*rng.NormFloat64())))
	}
	return out
}

func TestAnalyze(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	r := Runs{Scenario: "s", Pool: runs(rng, 30, 2, 1)}
	for _, f := range []float64{1.25, 1.02} {
		r.Slowed = append(r.Slowed, SlowedRuns{Slowdown: For(PodReady, f, 2), Runs: runs(rng, 12, 2, f)})
	}
	cells, err := Analyze(r, Options{Trials: 200})
	if err != nil {
		t.Fatal(err)
	}
	rate := map[string]float64{}
	for _, c := range cells {
		rate[c.Mode+"/"+c.Condition] = c.Rate
		if c.Mode == "auto" && c.Condition == Unchanged && (c.MeanRuns < 1 || c.MeanRuns > 1.5) {
			t.Errorf("auto on the unchanged stack took %.2f runs on average, want about one", c.MeanRuns)
		}
	}
	for key, want := range map[string][2]float64{
		"auto/" + Unchanged:          {0, 0.02},
		"repeat 3/" + Unchanged:      {0, 0.02},
		"auto/podReady ×1.25":        {0.95, 1},
		"repeat 3/podReady ×1.25":    {0.95, 1},
		"repeat 5/podReady ×1.25":    {0.95, 1},
		"repeat 3/podReady ×1.02":    {0, 0.02}, // under the 10% gate
		"repeat 5/" + UnchangedLater: {0, 0.05},
	} {
		if got, ok := rate[key]; !ok || got < want[0] || got > want[1] {
			t.Errorf("%s: rate %v (present %v), want within %v", key, got, ok, want)
		}
	}
	if _, err := Analyze(Runs{Scenario: "s", Pool: r.Pool[:12]}, Options{}); err == nil || !strings.Contains(err.Error(), "need") {
		t.Errorf("a pool too small for the baseline and the runs: %v, want an error", err)
	}
}

func TestFor(t *testing.T) {
	if s := For(NodeClaimReady, 1.5, 1.234); s.Delay != 617*time.Millisecond || s.Name() != "nodeClaimReady ×1.5" {
		t.Errorf("For: %+v %q", s, s.Name())
	}
	u, err := stage("node-ready-delay", 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if ms, _, _ := unstructured.NestedInt64(u.Object, "spec", "delay", "durationMilliseconds"); ms != 1500 {
		t.Errorf("stage delay %d ms, want 1500", ms)
	}
}
