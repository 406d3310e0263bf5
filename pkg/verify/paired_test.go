package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/paired"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func TestTimingPlan(t *testing.T) {
	pinned := inputs.Karpenter{Version: "v1.14.1", Binary: "5c331774cafe0000"}
	mutant := inputs.Karpenter{Version: "v1.14.1", Binary: "0123456789ab0000"}
	older := inputs.Karpenter{Version: "v1.13.2", Binary: "feedfacefeed0000"}
	limits := map[string]any{"limits": map[string]any{"cpu": "4"}}
	recorded := func(k inputs.Karpenter, kube string) *fingerprint.Baseline {
		return &fingerprint.Baseline{Inputs: &inputs.Inputs{Karpenter: k}, Provenance: fingerprint.Provenance{Kubernetes: kube}}
	}
	now := func(k inputs.Karpenter, nodePool map[string]any) *inputs.Inputs {
		return &inputs.Inputs{Karpenter: k, NodePool: nodePool}
	}
	settings := pinned
	settings.Settings = map[string]string{"BATCH_MAX_DURATION": "30s"}
	gone := fmt.Errorf("%w: catalog gone", run.ErrReplay)
	for _, c := range []struct {
		name       string
		b          *fingerprint.Baseline
		now        *inputs.Inputs
		ref        *inputs.Karpenter
		kubernetes string
		replayable error
		want       diff.TimingMethod
		replayed   bool
		reason     string
	}{
		{"another build against the baseline's: paired", recorded(pinned, "v1.36.0"), now(mutant, nil), &pinned, "v1.36.0", nil, diff.Paired, false, "baseline's build on the baseline's inputs"},
		{"the same build under two names: nothing differs", recorded(pinned, "v1.36.0"), now(pinned, nil), &pinned, "v1.36.0", nil, diff.Unchanged, false, "nothing recorded differs"},
		{"no reference, the baseline's build", recorded(pinned, "v1.36.0"), now(pinned, nil), nil, "v1.36.0", nil, diff.Unchanged, false, "the machine-independent checks decide"},
		{"the reference is not the baseline's build", recorded(older, "v1.36.0"), now(mutant, nil), &pinned, "v1.36.0", nil, diff.Recorded, false, "the baseline's build is not here"},
		{"no reference, another build than the baseline's", recorded(older, "v1.36.0"), now(pinned, nil), nil, "v1.36.0", nil, diff.Recorded, false, "not here to run as a reference arm"},
		{"another Kubernetes", recorded(pinned, "v1.35.0"), now(pinned, nil), nil, "v1.36.0", nil, diff.Recorded, false, "recorded on Kubernetes v1.35.0"},
		{"Karpenter outside nodeprint", recorded(inputs.Karpenter{Version: "v1.14.1"}, ""), now(inputs.Karpenter{Version: "v1.14.1"}, nil), nil, "", nil, diff.Recorded, false, "runs outside nodeprint"},
		{"a schema-1 baseline", &fingerprint.Baseline{}, now(pinned, nil), &pinned, "", nil, diff.Recorded, false, "records no inputs"},
		// The scenario changed since the baseline: the reference arm
		// replays the recorded inputs, on this cluster, whatever its
		// Kubernetes.
		{"a NodePool edit: replayed", recorded(pinned, "v1.36.0"), now(pinned, limits), nil, "v1.36.0", nil, diff.Paired, true, "replays the baseline's recorded inputs"},
		{"settings changed: replayed", recorded(pinned, "v1.36.0"), now(settings, nil), nil, "v1.36.0", nil, diff.Paired, true, "karpenter.settings.BATCH_MAX_DURATION"},
		{"an edit on another Kubernetes: replayed", recorded(pinned, "v1.35.0"), now(pinned, limits), nil, "v1.36.0", nil, diff.Paired, true, "replays"},
		{"an edit and another build: replayed", recorded(pinned, "v1.36.0"), now(mutant, limits), &pinned, "v1.36.0", nil, diff.Paired, true, "replays"},
		{"an edit that cannot be replayed", recorded(pinned, "v1.36.0"), now(pinned, limits), nil, "v1.36.0", gone, diff.Recorded, false, "catalog gone"},
		{"an edit that cannot be replayed, another build", recorded(pinned, "v1.36.0"), now(mutant, limits), &pinned, "v1.36.0", gone, diff.Paired, false, "the pairs measure the build alone"},
	} {
		got := TimingPlan(c.b, c.now, c.ref, c.kubernetes, c.replayable)
		if got.Method != c.want || got.Replayed != c.replayed || !strings.Contains(got.Reason, c.reason) {
			t.Errorf("%s: %s replayed=%v (%q), want %s replayed=%v with %q", c.name, got.Method, got.Replayed, got.Reason, c.want, c.replayed, c.reason)
		}
	}
}

// A B, B A, A B, B A: neither arm always runs first.
func TestBlocksAlternateWhichArmRunsFirst(t *testing.T) {
	var got []string
	for i := range 4 {
		if ReferenceFirst(i) {
			got = append(got, "A B")
		} else {
			got = append(got, "B A")
		}
	}
	if strings.Join(got, ", ") != "A B, B A, A B, B A" {
		t.Errorf("blocks %v", got)
	}
}

// A falseAlarm and cap with which no look can ever declare a regression
// among the tested metrics is refused before anything runs.
func TestAPairingThatCannotDecideIsRefused(t *testing.T) {
	s := load(t, "web-service")
	if err := CheckPairable(s, DefaultMaxPairs); err != nil {
		t.Errorf("the default cap: %v", err)
	}
	err := CheckPairable(s, 4)
	if err == nil || !strings.Contains(err.Error(), "at most 4 pairs") || !strings.Contains(err.Error(), "raise --max-pairs") {
		t.Errorf("a cap of 4 pairs: %v, want refused with the fix", err)
	}
	s.Spec.Baseline.FalseAlarm = 1e-6
	if err := CheckPairable(s, DefaultMaxPairs); err == nil || !strings.Contains(err.Error(), "falseAlarm 1e-06") {
		t.Errorf("falseAlarm 1e-6: %v, want refused naming it", err)
	}
}

// A scenario's paired family holds the scale-in's time only where it has
// a scale-in: a web service's thirteen metrics are not diluted by it.
func TestOnlyAScaleInScenarioPairsItsScaleInTime(t *testing.T) {
	web, drift := PairedMetrics(load(t, "web-service")), PairedMetrics(load(t, "scale-in/drift-one-at-a-time"))
	if web != 13 || drift != 14 {
		t.Errorf("paired metrics: web-service %d, drift-one-at-a-time %d; want 13 and 14 (with disruption.steadyAfter)", web, drift)
	}
}

// fakeArm returns fingerprints whose pod-ready and NodeClaim-ready are
// base × factor × the block's machine factor; it logs its name per run.
type fakeArm struct {
	name   string
	factor float64
	types  map[string]int
	in     *inputs.Inputs
	log    *[]string
	runs   int
}

func (a *fakeArm) Run(_ context.Context, s *scenario.Scenario, _ ...run.FaultOption) (*run.Result, error) {
	*a.log = append(*a.log, a.name)
	machine := 1 + 0.25*float64((len(*a.log)*7)%5)/5 // drifts from block to block
	a.runs++
	jitter := 1 + 0.01*float64(a.runs%3)
	v := 4 * a.factor * machine * jitter
	fp := &fingerprint.Fingerprint{
		Selection: fingerprint.Selection{InstanceTypes: a.types, Nodes: 1, HourlyCost: 0.4344, Zones: 1, PodsPerNodeMin: 10, PodsPerNodeMax: 10},
		Timing:    fingerprint.Timing{PodReady: fingerprint.Percentiles{Count: 10, P50: v, P90: v}, NodeClaimReady: fingerprint.Percentiles{Count: 1, P50: v / 2, P90: v / 2}},
		Outcomes:  fingerprint.Outcomes{Running: 10},
	}
	return &run.Result{ID: fmt.Sprintf("%s-%d", a.name, a.runs), Fingerprint: fp, Inputs: a.in}, nil
}

func (a *fakeArm) Karpenter() inputs.Karpenter { return inputs.Karpenter{Binary: a.name} }

func pairedJudge(t *testing.T, candFactor float64, candTypes map[string]int) (*Judge, *[]string, *fingerprint.Baseline) {
	t.Helper()
	log := &[]string{}
	web := map[string]int{"c-16x-amd64-linux/on-demand": 1}
	in := &inputs.Inputs{}
	ref := &fakeArm{name: "A", factor: 1, types: web, in: in, log: log}
	cand := &fakeArm{name: "B", factor: candFactor, types: candTypes, in: in, log: log}
	if candTypes == nil {
		cand.types = web
	}
	var runs []*fingerprint.Fingerprint
	for range 5 {
		r, _ := (&fakeArm{name: "rec", factor: 1, types: web, in: in, log: &[]string{}}).Run(context.Background(), nil)
		runs = append(runs, r.Fingerprint)
	}
	b, err := fingerprint.NewBaseline("web-service", fingerprint.Provenance{}, runs)
	if err != nil {
		t.Fatal(err)
	}
	return New(nil, WithPairedArms(ref, cand)), log, b
}

func TestPairedRunsInterleaveUntilDecided(t *testing.T) {
	s := load(t, "web-service")
	j, log, b := pairedJudge(t, 1.5, nil)
	a, tm, err := j.pairedRuns(context.Background(), s, b, &diff.Timing{Method: diff.Paired}, j.reference)
	if err != nil {
		t.Fatal(err)
	}
	if tm.Method != diff.Paired || len(tm.Decided(paired.Regressed)) == 0 {
		t.Fatalf("a 1.5× candidate: %s", tm.Summary())
	}
	if tm.Pairs < tm.MinPairs || tm.Pairs > tm.MaxPairs || len(a.refs) != tm.Pairs {
		t.Errorf("stopped after %d pairs (min %d, cap %d), %d kept", tm.Pairs, tm.MinPairs, tm.MaxPairs, len(a.refs))
	}
	want := strings.Repeat("A B B A ", tm.Pairs/2)
	if tm.Pairs%2 == 1 {
		want += "A B "
	}
	if got := strings.Join(*log, " ") + " "; got != want {
		t.Errorf("run order %q, want %q", got, want)
	}
}

func TestEqualArmsStopAtTheCapOrNoRegression(t *testing.T) {
	s := load(t, "web-service")
	j, _, b := pairedJudge(t, 1, nil)
	_, tm, err := j.pairedRuns(context.Background(), s, b, &diff.Timing{Method: diff.Paired}, j.reference)
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Decided(paired.Regressed); len(got) > 0 {
		t.Fatalf("equal arms regressed %v: %s", got, tm.Summary())
	}
	if u := tm.Decided(paired.Undecided); len(u) > 0 && (tm.Pairs != tm.MaxPairs || !strings.Contains(tm.Stopped, "undecided at the cap")) {
		t.Errorf("undecided %v after %d of %d pairs without saying so: %q", u, tm.Pairs, tm.MaxPairs, tm.Stopped)
	}
}

// A candidate whose selection already regressed stops after one pair:
// more pairs cannot undo it.
func TestAStaticRegressionStopsThePairing(t *testing.T) {
	s := load(t, "web-service")
	j, log, b := pairedJudge(t, 1, map[string]int{"c-32x-amd64-linux/on-demand": 1})
	_, tm, err := j.pairedRuns(context.Background(), s, b, &diff.Timing{Method: diff.Paired}, j.reference)
	if err != nil {
		t.Fatal(err)
	}
	if len(*log) != 2 || !strings.Contains(tm.Stopped, "stopped after 1 pair") {
		t.Errorf("%d runs, stopped %q; want one pair and the reason", len(*log), tm.Stopped)
	}
}

// A replay whose run records other inputs than the baseline's is an
// error, not a measurement: the pairs would compare the candidate with
// something the baseline never ran.
func TestAnUnfaithfulReplayIsAnError(t *testing.T) {
	s := load(t, "web-service")
	j, _, b := pairedJudge(t, 1, nil)
	b.Inputs = &inputs.Inputs{NodePool: map[string]any{"limits": map[string]any{"cpu": "4"}}}
	plan := &diff.Timing{Method: diff.Paired, Replayed: true}
	_, _, err := j.pairedRuns(context.Background(), s, b, plan, j.reference)
	if err == nil || !strings.Contains(err.Error(), "not faithful") || !strings.Contains(err.Error(), "nodePool.limits.cpu") {
		t.Errorf("an unfaithful replay: %v, want an error naming the difference", err)
	}
	b.Inputs = &inputs.Inputs{}
	if _, tm, err := j.pairedRuns(context.Background(), s, b, plan, j.reference); err != nil || !tm.Replayed {
		t.Errorf("a faithful replay: %v, replayed %v", err, tm != nil && tm.Replayed)
	}
}

// The cap of pairs a user asks for (run's --max-pairs, the mutants
// tool's -max-pairs) is one check: 1 to MaxPairsLimit.
func TestCheckMaxPairs(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, 16: true, MaxPairsLimit: true, MaxPairsLimit + 1: false, -3: false} {
		err := CheckMaxPairs("--max-pairs", n)
		if (err == nil) != ok {
			t.Errorf("%d pairs: err = %v, want accepted %v", n, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--max-pairs") {
			t.Errorf("%d pairs: %v does not name the flag", n, err)
		}
	}
}
