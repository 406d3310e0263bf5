package sensitivity

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func TestChiSquareEvenSurvival(t *testing.T) {
	for _, c := range []struct {
		x    float64
		df   int
		want float64
	}{
		{2, 2, math.Exp(-1)}, // df 2 is the exponential with mean 2
		{9.4877, 4, 0.05},    // tables: χ²(4) at 0.95
		{31.410, 20, 0.05},   // χ²(20) at 0.95
		{0, 8, 1},
	} {
		if got := chiSquareEvenSurvival(c.x, c.df); math.Abs(got-c.want) > 1e-4 {
			t.Errorf("P(χ²(%d) ≥ %g) = %.5f, want %.5f", c.df, c.x, got, c.want)
		}
	}
}

// Exchangeable pools leave every metric's combined p-value unremarkable;
// a candidate 3% slower in pod-ready in every pool (5% run noise, 20%
// machine noise), which no pool alone shows at p ≤ 0.01 (its lowest:
// 0.012), stands out across twelve of them (combined p 1.6e-5).
// Fails when the rows read the wrong tail (a faster candidate counted) or
// combine nothing.
func TestPremiseFindsALeanNoPoolShowsAlone(t *testing.T) {
	of := func(string) (*scenario.Scenario, error) { return plain(), nil }
	read := func(ratio float64) map[string]PremiseRow {
		var pools []Pool
		for seed := range 12 {
			pools = append(pools, pool(rand.New(rand.NewPCG(uint64(seed), 5)), 16, ratio, Condition{Name: "unchanged"}))
		}
		rows, err := Premise(pools, of)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]PremiseRow{}
		for _, r := range rows {
			if r.Pools != 12 {
				t.Fatalf("%s: %d pools, want 12", r.Metric, r.Pools)
			}
			out[r.Metric] = r
		}
		return out
	}
	for name, r := range read(1) {
		if r.Fisher < 0.01 {
			t.Errorf("exchangeable arms: %s combined p %.3g (%d of 12 pools at p ≤ %.2f)", name, r.Fisher, r.Small, SmallP)
		}
	}
	leaning := read(1.03)
	r := leaning[podReadyP50]
	t.Logf("a 3%% lean: pod-ready combined p %.3g, %d of 12 pools at p ≤ %.2f, lowest %.3g", r.Fisher, r.Small, SmallP, r.Lowest)
	if r.Fisher > 0.001 {
		t.Errorf("a 3%% lean in every pool: pod-ready combined p %.3g, want ≤ 0.001", r.Fisher)
	}
	if r := leaning["timing.nodeClaimReady.p50"]; r.Fisher < 0.01 {
		t.Errorf("NodeClaim-ready did not lean: combined p %.3g", r.Fisher)
	}
	if r := read(1 / 1.03)[podReadyP50]; r.Fisher < 0.5 {
		t.Errorf("a faster candidate raises no false alarm and is no lean: combined p %.3g", r.Fisher)
	}
}
