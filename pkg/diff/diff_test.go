package diff

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

func fp(types map[string]int, nodes int, cost, p90 float64) *fingerprint.Fingerprint {
	return &fingerprint.Fingerprint{
		Selection: fingerprint.Selection{InstanceTypes: types, Nodes: nodes, HourlyCost: cost, Zones: 1, PodsPerNodeMin: 10, PodsPerNodeMax: 10},
		Timing:    fingerprint.Timing{PodReady: fingerprint.Percentiles{Count: 10, P50: p90, P90: p90}, NodeClaimReady: fingerprint.Percentiles{Count: 1, P50: 2, P90: 2}},
		Outcomes:  fingerprint.Outcomes{Running: 10},
	}
}

func baseline(t *testing.T) *fingerprint.Baseline {
	t.Helper()
	a := map[string]int{"c-16x-amd64-linux/on-demand": 1}
	b, err := fingerprint.NewBaseline("web", fingerprint.Provenance{}, []*fingerprint.Fingerprint{
		fp(a, 1, 0.4344, 4), fp(a, 1, 0.4344, 4), fp(a, 1, 0.4344, 5), fp(a, 1, 0.4344, 4), fp(a, 1, 0.4344, 4),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSameRunHasNoDeviation(t *testing.T) {
	d := Compare(baseline(t), Rules{ZonesMatter: true}, fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 5))
	if len(d.Deviations) != 0 || d.Regressed() {
		t.Fatalf("want no deviation, got %s", d.Text())
	}
}

// The check: pods asking 3 CPU instead of 1 move Karpenter to bigger
// nodes; the diff names the instance types and the cost that changed.
func TestRequestChangeNamesTypesAndCost(t *testing.T) {
	got := Compare(baseline(t), Rules{ZonesMatter: true}, fp(map[string]int{"c-32x-amd64-linux/on-demand": 1}, 1, 0.8688, 4))
	want := []Deviation{
		{Path: "selection.hourlyCost", Baseline: "0.4344", Observed: "0.8688", Rule: "within the seen range ±0%", Severity: Regression},
		{Path: "selection.instanceTypes", Baseline: "c-16x-amd64-linux/on-demand×1", Observed: "c-32x-amd64-linux/on-demand×1", Rule: "the selection must be one the baseline saw", Severity: Regression},
	}
	if d := cmp.Diff(want, got.Deviations); d != "" {
		t.Fatalf("deviations (-want +got):\n%s", d)
	}
	text := got.Text()
	for _, s := range []string{"- c-16x-amd64-linux/on-demand×1", "+ c-32x-amd64-linux/on-demand×1", "- 0.4344", "+ 0.8688"} {
		if !strings.Contains(text, s) {
			t.Errorf("text rendering lacks %q:\n%s", s, text)
		}
	}
	if _, err := got.JSON(); err != nil {
		t.Fatal(err)
	}
}

func TestTolerancesAcceptNearbySelections(t *testing.T) {
	near := fp(map[string]int{"c-8x-amd64-linux/on-demand": 2}, 2, 0.45, 4)
	strict := Compare(baseline(t), Rules{ZonesMatter: true}, near)
	if !strict.Regressed() {
		t.Fatal("without tolerances an unseen selection regresses")
	}
	loose := Compare(baseline(t), Rules{Tolerances: scenario.Tolerances{CostPercent: 10, Nodes: 1}}, near)
	if loose.Regressed() {
		t.Fatalf("within 10%% cost and 1 node the change is tolerated:\n%s", loose.Text())
	}
	if len(loose.Deviations) == 0 || loose.Deviations[0].Severity != Tolerated {
		t.Fatalf("a tolerated change is still reported:\n%s", loose.Text())
	}
	far := Compare(baseline(t), Rules{Tolerances: scenario.Tolerances{CostPercent: 10, Nodes: 1}}, fp(map[string]int{"c-8x-amd64-linux/on-demand": 4}, 4, 0.9, 4))
	if !far.Regressed() {
		t.Fatal("beyond the tolerances the change regresses")
	}
}

// The tolerances accept batch-window noise: how much of the same kind of
// capacity the pods' batches bought. A dearer kind of instance inside the
// cost range is not that noise (measured: make mutants' expensive-types
// build on burst-1000, one m-256x for $8.60/h against c-family mixes of
// $6.95-$7.82/h, +24% a vCPU, inside the cost tolerance).
func TestTolerancesDoNotHideADearerVCPU(t *testing.T) {
	one, two := map[string]int{"c-16x-amd64-linux/on-demand": 1}, map[string]int{"c-16x-amd64-linux/on-demand": 2}
	b, err := fingerprint.NewBaseline("burst", fingerprint.Provenance{}, []*fingerprint.Fingerprint{
		fp(one, 1, 0.4344, 4), fp(two, 2, 0.8688, 4), fp(one, 1, 0.4344, 4),
	})
	if err != nil {
		t.Fatal(err)
	}
	cpu := map[string]float64{"c-16x-amd64-linux": 16, "c-8x-amd64-linux": 8, "m-16x-amd64-linux": 16}
	rules := Rules{Tolerances: scenario.Tolerances{CostPercent: 10, Nodes: 1}, CPU: func(n string) (float64, bool) { c, ok := cpu[n]; return c, ok }}
	split := Compare(b, rules, fp(map[string]int{"c-8x-amd64-linux/on-demand": 3}, 3, 0.6516, 4))
	if split.Regressed() {
		t.Fatalf("another amount of the same capacity is batching noise:\n%s", split.Text())
	}
	dearer := Compare(b, rules, fp(map[string]int{"m-16x-amd64-linux/on-demand": 1}, 1, 0.6, 4))
	if !dearer.Regressed() {
		t.Fatalf("16 vCPUs 38%% dearer each, inside the cost range, must regress:\n%s", dearer.Text())
	}
	if !slices.ContainsFunc(dearer.Deviations, func(d Deviation) bool { return d.Path == "selection.costPerCPU" && d.Severity == Regression }) {
		t.Fatalf("the regression is the cost of a vCPU:\n%s", dearer.Text())
	}
	rules.CPU = nil
	if Compare(b, rules, fp(map[string]int{"m-16x-amd64-linux/on-demand": 1}, 1, 0.6, 4)).Regressed() {
		t.Fatal("without the catalog the check cannot be made (the old behaviour)")
	}
}

// tenRuns is a baseline of ten runs whose pod-ready p50 spreads
// 2.00..2.09 s on the received clock.
func tenRuns(t *testing.T) *fingerprint.Baseline {
	t.Helper()
	a := map[string]int{"c-16x-amd64-linux/on-demand": 1}
	var runs []*fingerprint.Fingerprint
	for i := range 10 {
		r := fp(a, 1, 0.4344, 2+float64(i)/100)
		r.Timing.Clock = observe.ReceivedClock
		runs = append(runs, r)
	}
	b, err := fingerprint.NewBaseline("web", fingerprint.Provenance{}, runs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runsAt(podReady ...float64) []*fingerprint.Fingerprint {
	var out []*fingerprint.Fingerprint
	for _, v := range podReady {
		r := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, v)
		r.Timing.Clock = observe.ReceivedClock
		out = append(out, r)
	}
	return out
}

func TestTimingIsTestedAcrossRuns(t *testing.T) {
	b, rules := tenRuns(t), Rules{ZonesMatter: true}
	// One run 25% slower: past the gate, but one run against ten cannot
	// reach 1% (smallest p 1/11): reported, suspect, not failed.
	one := runsAt(2.55)
	d := Compare(b, rules, one[0])
	if d.Regressed() || !d.Suspect() || len(d.Deviations) != 2 || d.Deviations[0].Severity != Tolerated {
		t.Fatalf("one slow run: want two tolerated deviations and suspect:\n%s", d.Text())
	}
	// Three such runs: every one slower than every recorded run, p = 1/286.
	three := runsAt(2.55, 2.61, 2.58)
	d = Compare(b, rules, three[0], three[1:]...)
	if !d.Regressed() || d.Suspect() || d.Deviations[0].Path != "timing.podReady.p50" || d.Deviations[1].Path != "timing.podReady.p90" {
		t.Fatalf("three slow runs: want podReady p50/p90 regressions:\n%s", d.Text())
	}
	if math.Abs(d.Test.P-1.0/286) > 1e-9 || d.Test.Runs != 3 || d.Test.Recorded != 10 {
		t.Fatalf("test %+v, want p = 1/286 over 3 runs against 10", d.Test)
	}
	// One slow run among three is noise: past the gate, not significant.
	mixed := runsAt(2.55, 2.03, 2.05)
	if d := Compare(b, rules, mixed[0], mixed[1:]...); d.Regressed() {
		t.Fatalf("one slow run of three is not a shift:\n%s", d.Text())
	}
	// A stage of 0.2 s taking 0.3 s: 1.5× and significant, but under the
	// 0.2 s floor: nothing reported.
	stage := func(v float64) *fingerprint.Fingerprint {
		r := runsAt(2.02)[0]
		r.Timing.NodeClaimLaunch = fingerprint.Percentiles{Count: 1, P50: v, P90: v}
		return r
	}
	var recorded []*fingerprint.Fingerprint
	for i := range 10 {
		recorded = append(recorded, stage(0.2+float64(i)/1000))
	}
	sb, err := fingerprint.NewBaseline("web", fingerprint.Provenance{}, recorded)
	if err != nil {
		t.Fatal(err)
	}
	if d := Compare(sb, rules, stage(0.3), stage(0.31), stage(0.32)); len(d.Deviations) != 0 {
		t.Fatalf("a 0.1 s longer launch is under the floor:\n%s", d.Text())
	}
	if d := Compare(sb, rules, stage(0.6), stage(0.61), stage(0.62)); !d.Regressed() || d.Deviations[0].Path != "timing.nodeClaimLaunch.p50" {
		t.Fatalf("a 0.4 s longer launch shows in its own stage:\n%s", d.Text())
	}
	// Slower than every recorded run but under the gate: nothing reported.
	slight := runsAt(2.15, 2.16, 2.17)
	if d := Compare(b, rules, slight[0], slight[1:]...); len(d.Deviations) != 0 {
		t.Fatalf("7%% slower is under the 10%% gate:\n%s", d.Text())
	}
}

// A baseline whose latencies are server timestamps cannot be compared
// with received-clock runs: the timings are skipped, visibly.
func TestTimingOfAnotherClockIsSkipped(t *testing.T) {
	d := Compare(baseline(t), Rules{ZonesMatter: true}, runsAt(9)[0])
	if d.Regressed() || len(d.Deviations) != 0 || d.Test == nil || !strings.Contains(d.Test.Skipped, "server clock") {
		t.Fatalf("want the timings skipped with the reason:\n%s\n%+v", d.Text(), d.Test)
	}
}

func TestOutcomes(t *testing.T) {
	oom := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 4)
	oom.Outcomes = fingerprint.Outcomes{Running: 8, Restarting: 2, OOMKilled: 2}
	d := Compare(baseline(t), Rules{ZonesMatter: true}, oom)
	var paths []string
	for _, x := range d.Deviations {
		paths = append(paths, x.Path)
	}
	if !cmp.Equal(paths, []string{"outcomes.oomKilled", "outcomes.restarting", "outcomes.running"}) {
		t.Fatalf("outcome deviations: %v", paths)
	}
}

func TestZonesCountOnlyWhereTheScenarioConstrainsThem(t *testing.T) {
	spread := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 4)
	spread.Selection.Zones, spread.Selection.ZoneSkew = 2, 1
	if d := Compare(baseline(t), Rules{ZonesMatter: true}, spread); !d.Regressed() {
		t.Fatalf("a zone-constrained scenario regresses on another zone shape:\n%s", d.Text())
	}
	d := Compare(baseline(t), Rules{}, spread)
	if d.Regressed() || len(d.Deviations) != 2 || d.Deviations[0].Severity != Tolerated {
		t.Fatalf("elsewhere the zone shape is a tie-break, reported as tolerated:\n%s", d.Text())
	}
}

// A run that already fails on its selection is decided: it is not sent
// back for more runs however its latencies moved.
func TestARegressedRunIsNotSuspect(t *testing.T) {
	b, rules := tenRuns(t), Rules{ZonesMatter: true}
	slow := runsAt(2.55)[0]
	if d := Compare(b, rules, slow); !d.Suspect() {
		t.Fatalf("one slow run alone must be suspect:\n%s", d.Text())
	}
	over := fp(map[string]int{"c-1x-amd64-linux/on-demand": 16}, 16, 0.5, 2.55)
	over.Timing.Clock = observe.ReceivedClock
	d := Compare(b, rules, over)
	if !d.Regressed() || d.Test == nil || !d.Test.Suspect {
		t.Fatalf("want a selection regression with its latency test undecided:\n%s", d.Text())
	}
	if d.Suspect() {
		t.Fatalf("a run that already regressed asks for more runs:\n%s", d.Text())
	}
	if strings.Contains(d.Text(), "more runs decide") || !strings.Contains(d.Text(), "left undecided") {
		t.Fatalf("a run that already regressed must not promise more runs:\n%s", d.Text())
	}
}

// Karpenter's CPU seconds are tested past a floor as well as the gate: a
// small scenario's few tenths of a CPU second move with the machine (a
// fresh machine read cpu-heavy's 0.16-0.26 as 0.3-0.4 in every run), and
// the regressions the metric is for cost seconds.
func TestKarpenterCPUUnderTheFloorIsNotReported(t *testing.T) {
	withCPU := func(vals ...float64) []*fingerprint.Fingerprint {
		runs := runsAt(make([]float64, len(vals))...)
		for i, v := range vals {
			runs[i].Timing.PodReady = fingerprint.Percentiles{Count: 10, P50: 2, P90: 2}
			runs[i].Karpenter = &usage.Usage{CPUSeconds: v, PeakRSSBytes: 119 << 20, RequestsTotal: 46}
		}
		return runs
	}
	small, err := fingerprint.NewBaseline("cpu-heavy", fingerprint.Provenance{}, withCPU(0.16, 0.17, 0.16, 0.26, 0.19, 0.19, 0.25, 0.24, 0.21, 0.2))
	if err != nil {
		t.Fatal(err)
	}
	moved := withCPU(0.3, 0.32, 0.4)
	if d := Compare(small, Rules{}, moved[0], moved[1:]...); len(d.Deviations) != 0 {
		t.Fatalf("0.1-0.2 cpu-s more is under the floor:\n%s", d.Text())
	}
	large, err := fingerprint.NewBaseline("runners-twenty-pools", fingerprint.Provenance{}, withCPU(1.66, 1.66, 1.44, 1.57, 1.88, 1.42, 1.42, 1.24, 1.7, 1.6))
	if err != nil {
		t.Fatal(err)
	}
	regressed := withCPU(3.4, 3.5, 3.6)
	d := Compare(large, Rules{}, regressed[0], regressed[1:]...)
	if !d.Regressed() || len(d.Deviations) != 1 || d.Deviations[0].Path != "karpenter.cpuSeconds" || !strings.Contains(d.Deviations[0].Rule, "0.5 cpu-s more") {
		t.Fatalf("v1.11.0's 2.2x on twenty NodePools must fail on Karpenter's CPU:\n%s", d.Text())
	}
}

// A scenario's catalog that cannot be read does not skip the cost-per-vCPU
// check in silence: a selection the tolerances would accept is a
// regression that names the catalog's error, since nobody can tell that a
// vCPU of it costs what the baseline's did.
func TestACatalogThatFailsToLoadIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &scenario.Scenario{CatalogPath: path}
	s.Spec.Baseline.Tolerances = scenario.Tolerances{CostPercent: 10, Nodes: 1}
	d := Compare(baseline(t), RulesFor(s), fp(map[string]int{"c-8x-amd64-linux/on-demand": 2}, 2, 0.45, 4))
	i := slices.IndexFunc(d.Deviations, func(x Deviation) bool { return x.Path == "selection.costPerCPU" })
	if i < 0 || d.Deviations[i].Severity != Regression || !strings.Contains(d.Deviations[i].Rule, "broken.json") {
		t.Fatalf("the catalog's error must be a regression naming it:\n%s", d.Text())
	}
}

// A metric newer than the baseline (recorded before it was) is not
// tested, and the timing line says so with the fix, instead of passing
// it without a word.
func TestAMetricNewerThanTheBaselineIsNamed(t *testing.T) {
	b := tenRuns(t)
	b.Timing.PodDecisionP50 = fingerprint.Samples{} // as a file written before it reads
	run := runsAt(2.02)[0]
	run.Timing.PodDecision = fingerprint.Percentiles{Count: 10, P50: 1.2, P90: 1.3}
	d := Compare(b, Rules{ZonesMatter: true}, run)
	d.Timing = &Timing{Method: Recorded, Reason: "the baseline was recorded with another build"}
	want := "machine-dependent metrics compared with the baseline's recorded runs (not paired): the baseline was recorded with another build; not tested: timing.podDecision.p50: the baseline has no samples (recorded before the metric was, or a recorded run had none); re-record it to test them (nodeprint record web)"
	if got := d.TimingSummary(); got != want {
		t.Errorf("timing line\n got %q\nwant %q", got, want)
	}
	// A run without the metric says nothing of it.
	d = Compare(b, Rules{ZonesMatter: true}, runsAt(2.02)[0])
	d.Timing = &Timing{Method: Recorded, Reason: "r"}
	if got := d.TimingSummary(); strings.Contains(got, "not tested") {
		t.Errorf("a run without the metric: %q", got)
	}
}

// A run without a latency the baseline has (no pod reached that stage) is
// not tested on it, and the timing line says so. Fails on the code that
// left the metric out without a word.
func TestALatencyARunLacksIsNamed(t *testing.T) {
	runs := runsAt(2.02, 2.03)
	runs[1].Timing.NodeClaimReady = fingerprint.Percentiles{}
	d := Compare(tenRuns(t), Rules{ZonesMatter: true}, runs[0], runs[1:]...)
	d.Timing = &Timing{Method: Recorded, Reason: "r"}
	if got, want := d.TimingSummary(), "not tested: timing.nodeClaimReady.p50, timing.nodeClaimReady.p90: 1 of 2 runs had none"; !strings.Contains(got, want) {
		t.Errorf("timing line\n got %q\nwant it to contain %q", got, want)
	}
}
