package diff

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/paired"
)

// pairedRuns are n blocks of the web fingerprint: the candidate's
// pod-ready times factor × the reference's, both with the same per-block
// machine factor and a little independent noise.
func pairedRuns(n int, factor float64) (refs, cands []*fingerprint.Fingerprint) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := map[string]int{"c-16x-amd64-linux/on-demand": 1}
	for range n {
		machine := 1 + 0.3*rng.Float64()
		refs = append(refs, fp(a, 1, 0.4344, 4*machine*(1+0.02*rng.NormFloat64())))
		cands = append(cands, fp(a, 1, 0.4344, factor*4*machine*(1+0.02*rng.NormFloat64())))
	}
	return refs, cands
}

func pairedTiming(t *testing.T, n int, factor float64) *Timing {
	t.Helper()
	refs, cands := pairedRuns(n, factor)
	ms, excluded := PairedSamples(refs, cands)
	res, err := paired.Test(ms)
	if err != nil {
		t.Fatal(err)
	}
	return PairedTiming(res, "v1 (sha256 aaaa)", "v1 (sha256 bbbb)", excluded)
}

func TestPairedSamplesTakeEveryTestedMetricWithAValueInEveryRun(t *testing.T) {
	refs, cands := pairedRuns(3, 1)
	ms, excluded := PairedSamples(refs, cands)
	var got []string
	gates := map[string]float64{}
	for _, m := range fingerprint.RunMetrics {
		gates[m.Path] = Gate(m)
	}
	for _, m := range ms {
		if m.Margin != gates[m.Name] {
			t.Errorf("%s: margin %v, want its gate %v", m.Name, m.Margin, gates[m.Name])
		}
		got = append(got, m.Name)
		if len(m.Ref) != 3 || len(m.Cand) != 3 {
			t.Errorf("%s: %d/%d values, want 3/3", m.Name, len(m.Ref), len(m.Cand))
		}
	}
	// The fingerprints have pod-ready and NodeClaim-ready only: the other
	// tested metrics (usage, podScheduled, …) are excluded and named.
	if d := cmp.Diff([]string{"timing.nodeClaimReady.p50", "timing.nodeClaimReady.p90", "timing.podReady.p50", "timing.podReady.p90"}, slices.Sorted(slices.Values(got))); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	for _, x := range excluded {
		if !strings.Contains(x, "pair 1 has no value") {
			t.Errorf("exclusion without its reason: %q", x)
		}
	}
	if len(excluded) == 0 {
		t.Error("the metrics without values were not named")
	}
	for _, m := range fingerprint.RunMetrics {
		if m.Untested && (slices.Contains(got, m.Path) || containsPrefix(excluded, m.Path)) {
			t.Errorf("untested metric %s was paired or named", m.Path)
		}
	}
}

func containsPrefix(s []string, p string) bool {
	return slices.ContainsFunc(s, func(y string) bool { return strings.HasPrefix(y, p+":") })
}

func TestAPairedSlowdownIsARegressionWithItsInterval(t *testing.T) {
	tm := pairedTiming(t, 12, 1.5)
	d := CompareTiming(baseline(t), Rules{ZonesMatter: true}, fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 6), tm)
	if !d.Regressed() {
		t.Fatalf("a 1.5× pod-ready over 12 pairs must regress:\n%s", d.Text())
	}
	var paths []string
	for _, x := range d.Deviations {
		if x.Severity == Regression {
			paths = append(paths, x.Path)
			if !strings.Contains(x.Observed, "× [") || !strings.Contains(x.Rule, "paired with the reference") {
				t.Errorf("%s: want the ratio with its interval and the paired rule, got %q / %q", x.Path, x.Observed, x.Rule)
			}
		}
	}
	if d := cmp.Diff([]string{"timing.podReady.p50", "timing.podReady.p90"}, paths); d != "" {
		t.Errorf("regressed paths (-want +got):\n%s", d)
	}
	if !strings.Contains(d.Text(), "timing: machine-dependent metrics paired with the reference over 12 pair(s)") {
		t.Errorf("the text does not say how timings were judged:\n%s", d.Text())
	}
	// The baseline's recorded pod-ready (4 s) against the candidate's
	// first run (6 s) plays no part: only the pairs do.
	if d.Test != nil {
		t.Errorf("a paired diff ran the recorded-runs test too: %+v", d.Test)
	}
}

func TestAnEqualPairingIsNoRegression(t *testing.T) {
	tm := pairedTiming(t, 12, 1)
	d := CompareTiming(baseline(t), Rules{ZonesMatter: true}, fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 40), tm)
	if d.Regressed() || len(d.Deviations) > 0 {
		t.Fatalf("equal arms must not deviate, even when the run is 10× the recorded ones:\n%s", d.Text())
	}
	if got := tm.Decided(paired.NoRegression); len(got) != 4 {
		t.Errorf("no-regression metrics %v, want all 4", got)
	}
}

func TestUnchangedJudgesOnlyWhatDoesNotDependOnTheMachine(t *testing.T) {
	tm := &Timing{Method: Unchanged, Reason: "nothing recorded differs"}
	slow := CompareTiming(baseline(t), Rules{ZonesMatter: true}, fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 40), tm)
	if len(slow.Deviations) != 0 {
		t.Fatalf("unchanged: a slower run is the machine's, got:\n%s", slow.Text())
	}
	moved := CompareTiming(baseline(t), Rules{ZonesMatter: true}, fp(map[string]int{"c-32x-amd64-linux/on-demand": 1}, 1, 0.8688, 4), tm)
	if !moved.Regressed() {
		t.Fatalf("unchanged: the selection is still checked:\n%s", moved.Text())
	}
	if !strings.Contains(slow.Text(), "machine-dependent metrics not compared: nothing recorded differs") {
		t.Errorf("the text does not say the timings were not compared:\n%s", slow.Text())
	}
}

func TestAnUnboundedIntervalEncodesAsZero(t *testing.T) {
	tm := pairedTiming(t, 3, 2)
	b, err := json.Marshal(tm)
	if err != nil {
		t.Fatalf("a timing with an unbounded interval must encode: %v", err)
	}
	for _, m := range tm.Metrics {
		if m.Hi != 0 || m.Lo != 0 {
			t.Errorf("%s: 3 pairs cannot bound a 95%% interval, got [%v, %v]", m.Path, m.Lo, m.Hi)
		}
		if !strings.HasSuffix(m.String(), ", ∞]") {
			t.Errorf("%s: want an open upper end, got %s", m.Path, m)
		}
	}
	if !strings.Contains(string(b), `"method":"paired"`) {
		t.Errorf("json: %s", b)
	}
}

// withScaleIn gives each run a settled scale-in that took steady(i) s.
func withScaleIn(fps []*fingerprint.Fingerprint, steady func(i int) float64) {
	for i, f := range fps {
		f.Disruption = &fingerprint.Disruption{Outcome: observe.Settled, SteadyAfter: steady(i)}
	}
}

func TestAScaleInIsTimedOnlyWhereTheRunsHadOne(t *testing.T) {
	refs, cands := pairedRuns(3, 1)
	ms, excluded := PairedSamples(refs, cands)
	for _, m := range ms {
		if m.Name == "disruption.steadyAfter" {
			t.Fatal("a scenario without a scale-in paired its scale-in time")
		}
	}
	if containsPrefix(excluded, "disruption.steadyAfter") {
		t.Errorf("a scenario without a scale-in named its scale-in time as excluded: %v", excluded)
	}

	withScaleIn(refs, func(i int) float64 { return 70 + float64(i) })
	withScaleIn(cands, func(i int) float64 { return 105 + float64(i) })
	ms, _ = PairedSamples(refs, cands)
	i := slices.IndexFunc(ms, func(m paired.Metric) bool { return m.Name == "disruption.steadyAfter" })
	if i < 0 {
		t.Fatalf("the scale-in's time was not paired: %v", ms)
	}
	if d := cmp.Diff(paired.Metric{Name: "disruption.steadyAfter", Unit: "s", Margin: TimingGate, Ref: []float64{70, 71, 72}, Cand: []float64{105, 106, 107}}, ms[i]); d != "" {
		t.Errorf("steadyAfter (-want +got):\n%s", d)
	}

	// A scale-in that timed out has no time to compare: named, not paired.
	cands[1].Disruption.Outcome = observe.TimedOut
	ms, excluded = PairedSamples(refs, cands)
	if slices.ContainsFunc(ms, func(m paired.Metric) bool { return m.Name == "disruption.steadyAfter" }) || !slices.Contains(excluded, "disruption.steadyAfter: pair 2 has no value") {
		t.Errorf("a timed-out scale-in: want steadyAfter excluded at pair 2, got excluded %v", excluded)
	}
}

func TestASlowerScaleInIsAPairedRegression(t *testing.T) {
	refs, cands := pairedRuns(12, 1)
	rng := rand.New(rand.NewPCG(3, 4))
	withScaleIn(refs, func(int) float64 { return 75 * (1 + 0.08*rng.NormFloat64()) })
	withScaleIn(cands, func(int) float64 { return 1.4 * 75 * (1 + 0.08*rng.NormFloat64()) })
	ms, excluded := PairedSamples(refs, cands)
	res, err := paired.Test(ms)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]int{"c-16x-amd64-linux/on-demand": 1}
	d := CompareTiming(baseline(t), Rules{ZonesMatter: true}, fp(a, 1, 0.4344, 4), PairedTiming(res, "ref", "cand", excluded))
	var paths []string
	for _, x := range d.Deviations {
		if x.Severity == Regression {
			paths = append(paths, x.Path)
		}
	}
	if d := cmp.Diff([]string{"disruption.steadyAfter"}, paths); d != "" {
		t.Errorf("a scale-in 1.4× slower with the scale-out unchanged: regressed paths (-want +got):\n%s", d)
	}
}
