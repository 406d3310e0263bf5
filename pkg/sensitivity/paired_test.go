package sensitivity

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

const podReadyP50 = "timing.podReady.p50"

// timed is a fingerprint whose pod-ready and NodeClaim-ready latencies
// are podReady and nodeClaimReady seconds (p90 10% above).
func timed(podReady, nodeClaimReady float64) *fingerprint.Fingerprint {
	return &fingerprint.Fingerprint{Timing: fingerprint.Timing{Clock: observe.ReceivedClock,
		PodReady:       fingerprint.Percentiles{Count: 10, P50: podReady, P90: 1.1 * podReady},
		NodeClaimReady: fingerprint.Percentiles{Count: 2, P50: nodeClaimReady, P90: 1.1 * nodeClaimReady}}}
}

// pool draws n blocks A B, B A, …: each block's machine multiplies both
// of its runs (lognormal, CV 20%), each run has its own 5% noise, and the
// candidate's pod-ready is ratio times the reference's.
func pool(rng *rand.Rand, n int, ratio float64, c Condition) Pool {
	noise := func(cv float64) float64 { return math.Exp(cv * rng.NormFloat64()) }
	p := Pool{Scenario: "s", Condition: c}
	for b := range n {
		m := noise(0.2)
		ref := timed(4*m*noise(0.05), 2*m*noise(0.05))
		cand := timed(4*ratio*m*noise(0.05), 2*m*noise(0.05))
		p.Pairs = append(p.Pairs, Pair{RefFirst: verify.ReferenceFirst(b), Ref: ref, Cand: cand, Seconds: 20})
	}
	return p
}

func plain() *scenario.Scenario {
	s := &scenario.Scenario{}
	s.Metadata.Name = "s"
	return s
}

func TestReplayPairedCatchesASlowdownAndNotItsAbsence(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	slow := Condition{Name: "podReady ×1.3", Target: podReadyP50, Factor: 1.3}
	c, err := ReplayPaired(plain(), pool(rng, 24, 1.3, slow), PairedOptions{Trials: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Power < 0.95 || math.Abs(c.Realized-1.3) > 0.05 || c.MeanPairs >= verify.DefaultMaxPairs || c.Minutes != c.MeanPairs*20/60 {
		t.Errorf("a 1.3× pod-ready slowdown under 20%% machine noise: power %.3f (want ≥ 0.95), realized %.3f (want 1.3), %.1f pairs, %.1f min",
			c.Power, c.Realized, c.MeanPairs, c.Minutes)
	}
	if !strings.Contains(c.Whole, podReadyP50) || !strings.Contains(c.Whole, "1.3") {
		t.Errorf("the whole pool's test names the target and its ratio: %q", c.Whole)
	}
	// A/A: one pool's estimate varies with the pool (its own mean is off
	// zero by chance, and the draws follow it); over pools it is the
	// test's level, under 1%.
	sum := 0.0
	for seed := range 8 {
		c, err := ReplayPaired(plain(), pool(rand.New(rand.NewPCG(uint64(seed), 9)), 24, 1, Condition{Name: "unchanged"}), PairedOptions{Trials: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c.Power != 0 || c.Realized != 0 {
			t.Errorf("A/A: power %g and realized %g, want none", c.Power, c.Realized)
		}
		sum += c.Failed
	}
	if sum/8 > 0.01 {
		t.Errorf("A/A: %.3f of verifications failed over 8 pools, want at most 1%%", sum/8)
	}
}

// TestAnAAPoolsLeanIsWeighedAgainstChance: a pool of exchangeable arms
// that replays at 4% or more false alarms by chance (pools of 16 blocks do
// in about 7% of cases) reads a lean that chance gives and meets the
// target; the same blocks with the candidate's pod-ready 3% slower in
// every one, a bias its one verification passes, read a lean chance
// rarely gives, and do not.
func TestAnAAPoolsLeanIsWeighedAgainstChance(t *testing.T) {
	aa := Condition{Name: "unchanged"}
	o := PairedOptions{Trials: 200, Seed: 1}
	for _, tc := range []struct {
		name  string
		ratio float64
		meets bool
	}{{"exchangeable", 1, true}, {"candidate 3% slower", 1.03, false}} {
		c, err := ReplayPaired(plain(), pool(rand.New(rand.NewPCG(leaningSeed, 77)), 16, tc.ratio, aa), o)
		if err != nil {
			t.Fatal(err)
		}
		meets, _ := c.Meets()
		t.Logf("%s: replayed %.3f, lean %.2f, independent %d of %d failed, %s", tc.name, c.Failed, c.Lean, c.DisjointFailed, c.Disjoint, c.Whole)
		if c.Failed < 0.04 || c.Disjoint != 1 || c.DisjointFailed != 0 || meets != tc.meets {
			t.Errorf("%s: replayed %.3f (want ≥ 0.04), lean %.2f, %d of %d independent verifications failed (want 0 of 1): meets %v, want %v",
				tc.name, c.Failed, c.Lean, c.DisjointFailed, c.Disjoint, meets, tc.meets)
		}
	}
}

// leaningSeed draws an exchangeable pool of 16 blocks whose replay reads
// at least 4% false alarms.
const leaningSeed = 35

func TestDisjointVerificationsAreIndependent(t *testing.T) {
	slow := Condition{Name: "podReady ×1.3", Target: podReadyP50, Factor: 1.3}
	c, err := ReplayPaired(plain(), pool(rand.New(rand.NewPCG(3, 3)), 24, 1.3, slow), PairedOptions{Trials: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Each stops at 11 pairs, the first look that can decide: blocks
	// 1–11, then 13–23 (a verification starts reference-first).
	if c.Disjoint != 2 || c.DisjointFailed != 2 || c.Lean != -1 {
		t.Errorf("24 blocks of a 1.3× slowdown: %d of %d independent verifications failed (want 2 of 2), lean %g (want -1, a lever)", c.DisjointFailed, c.Disjoint, c.Lean)
	}
}

// TestReplayPairedSeesATooWeakTest: a 1.12× slowdown meets the 95% power
// target at the default cap and not at a cap of 7 pairs, the fewest at
// which four metrics can decide at all: the table tells a weak test.
func TestReplayPairedSeesATooWeakTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	p := pool(rng, 24, 1.12, Condition{Name: "podReady ×1.12", Target: podReadyP50, Factor: 1.12})
	strong, err := ReplayPaired(plain(), p, PairedOptions{Trials: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	weak, err := ReplayPaired(plain(), p, PairedOptions{Trials: 200, Seed: 1, MaxPairs: 7})
	if err != nil {
		t.Fatal(err)
	}
	if strong.Power < 0.95 || weak.Power >= 0.95 || weak.MeanPairs > 7 {
		t.Errorf("cap 7: power %.3f in %.1f pairs; cap %d: %.3f: the weaker test must read lower", weak.Power, weak.MeanPairs, verify.DefaultMaxPairs, strong.Power)
	}
}

func TestReplayPairedRefusesAPoolWithoutBothOrders(t *testing.T) {
	p := pool(rand.New(rand.NewPCG(1, 1)), 6, 1, Condition{Name: "unchanged"})
	for i := range p.Pairs {
		p.Pairs[i].RefFirst = true
	}
	_, err := ReplayPaired(plain(), p, PairedOptions{})
	if err == nil || !strings.Contains(err.Error(), "0 candidate-first") {
		t.Errorf("a pool of reference-first blocks only: %v", err)
	}
}

func TestLeverPatch(t *testing.T) {
	tmpl, err := os.ReadFile("../../fixtures/sensitivity/levers.patch")
	if err != nil {
		t.Fatal(err)
	}
	l := Lever{LaunchDelay: 1250 * time.Millisecond, CPUFactor: 1.5}
	got, err := l.Patch(string(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"leverLaunchDelay = 1250 * time.Millisecond", "leverDecisionDelay = 0 * time.Millisecond",
		"leverCPUFactor = 1.5", "leverMemoryMiB = 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("the filled patch lacks %q", want)
		}
	}
	if strings.Contains(got, "{{") {
		t.Error("the filled patch still has a placeholder")
	}
	if _, err := l.Patch(strings.ReplaceAll(string(tmpl), "{{CPU_FACTOR}}", "2")); err == nil {
		t.Error("a template without the CPU placeholder must be refused")
	}
	names := []string{Lever{}.Name(), l.Name(), Lever{DecisionDelay: time.Second, MemoryMiB: 55}.Name()}
	if d := cmp.Diff([]string{"levers", "levers-launch1250ms-cpu1p5", "levers-decide1000ms-mem55mib"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
}

func TestParseCondition(t *testing.T) {
	b := &fingerprint.Baseline{Timing: fingerprint.BaselineTiming{
		PodReadyP50:       fingerprint.Samples{Values: []float64{4, 3.8, 4.2}},
		NodeClaimReadyP50: fingerprint.Samples{Values: []float64{2, 2.2, 1.8, 2}}},
		Karpenter: &fingerprint.BaselineKarpenter{PeakRSSMiB: fingerprint.Samples{Values: []float64{110.4, 108.5, 112}}}}
	var got []Condition
	for _, spec := range []string{"unchanged", "loaded", "launch:1.25", "decide:1.5", "cpu:2", "memory:1.5"} {
		c, err := ParseCondition(spec, b)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	want := []Condition{{Name: "unchanged"}, {Name: "unchanged, one core busy", Load: true},
		{Name: "launch ×1.25", Lever: Lever{LaunchDelay: 500 * time.Millisecond}, Target: "timing.nodeClaimReady.p50", Factor: 1.25},
		{Name: "decide ×1.5", Lever: Lever{DecisionDelay: 2 * time.Second}, Target: podReadyP50, Factor: 1.5},
		{Name: "cpu ×2", Lever: Lever{CPUFactor: 2}, Target: "karpenter.cpuSeconds", Factor: 2},
		{Name: "memory ×1.5", Lever: Lever{MemoryMiB: 55}, Target: "karpenter.peakRSSMiB", Factor: 1.5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("conditions (-want +got):\n%s", d)
	}
	for _, spec := range []string{"launch:1", "cpu:x", "boot:1.5", "cpu"} {
		if err := CheckCondition(spec); err == nil || !strings.Contains(err.Error(), spec) {
			t.Errorf("%q: want an error naming it, got %v", spec, err)
		}
	}
	if _, err := ParseCondition("launch:1.25", &fingerprint.Baseline{}); err == nil || !strings.Contains(err.Error(), "no median") {
		t.Errorf("a baseline without NodeClaim-ready samples cannot size a launch delay: %v", err)
	}
	if _, err := ParseCondition("memory:1.5", &fingerprint.Baseline{}); err == nil || !strings.Contains(err.Error(), "peak resident set") {
		t.Errorf("a baseline without Karpenter's usage cannot size the memory held: %v", err)
	}
}

func TestMeets(t *testing.T) {
	launch := Condition{Target: "timing.nodeClaimReady.p50", Factor: 1.25}
	cpu := Condition{Target: "karpenter.cpuSeconds", Factor: 1.25}
	for _, tc := range []struct {
		name      string
		c         PairedCell
		meets, ok bool
	}{
		{"A/A under 1%", PairedCell{Failed: 0.008, Lean: 1, Disjoint: 1}, true, true},
		// The replayed rate follows the pool's chance lean: not the criterion.
		{"A/A replayed at 4%, a lean chance gives", PairedCell{Failed: 0.04, Lean: 0.3, Disjoint: 1}, true, true},
		{"A/A replayed at 4%, a lean chance rarely gives", PairedCell{Failed: 0.04, Lean: 0.02, Disjoint: 1}, false, true},
		{"A/A whose independent verification failed", PairedCell{Failed: 0.008, Lean: 0.9, Disjoint: 1, DisjointFailed: 1}, false, true},
		// Caught on the launch latency before NodeClaim-ready was declared.
		{"a launch 1.25x caught, its target declared in 73%", PairedCell{Condition: launch, Realized: 1.247, Failed: 1, Power: 0.73}, true, true},
		{"a launch 1.25x caught in 90%", PairedCell{Condition: launch, Realized: 1.3, Failed: 0.9, Power: 0.9}, false, true},
		{"a launch asked 1.25x that realized 1.1x", PairedCell{Condition: launch, Realized: 1.1, Failed: 0.5}, false, false},
		{"CPU realized 1.41x is below the usage target's 1.5x", PairedCell{Condition: cpu, Realized: 1.41, Failed: 0.7}, false, false},
		{"memory asked 2x that realized 1.6x, caught", PairedCell{Condition: Condition{Target: "karpenter.peakRSSMiB", Factor: 2}, Realized: 1.6, Failed: 0.97}, true, true},
	} {
		if meets, ok := tc.c.Meets(); meets != tc.meets || ok != tc.ok {
			t.Errorf("%s: Meets() = %v, %v, want %v, %v", tc.name, meets, ok, tc.meets, tc.ok)
		}
	}
}

func TestPoolAAJoinsTheSameAAConditionOnly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	loaded := Condition{Name: "unchanged, one core busy", Load: true}
	odd := pool(rng, 5, 1, loaded)
	decide := Condition{Name: "decide ×1.3", Target: podReadyP50}
	pools := []Pool{pool(rng, 16, 1, loaded), pool(rng, 16, 1.3, decide), pool(rng, 16, 1.3, decide),
		pool(rng, 16, 1, Condition{Name: "unchanged"}), pool(rng, 16, 1, loaded), odd}
	got := PoolAA(pools)
	if len(got) != 1 || got[0].Condition.Name != "unchanged, one core busy, 2 pools" || !got[0].Condition.Load || len(got[0].Pairs) != 32 {
		t.Fatalf("want one joined pool of the two loaded pools of 16 (not the levers', not the single unchanged, not the odd one), got %d: %+v", len(got), got)
	}
	for b, p := range got[0].Pairs {
		if p.RefFirst != verify.ReferenceFirst(b) {
			t.Fatalf("block %d of the join breaks the alternation", b)
		}
	}
}

func TestReplayPairedRefusesAPoolWithoutAMetricInEveryPair(t *testing.T) {
	p := pool(rand.New(rand.NewPCG(5, 5)), 16, 1, Condition{Name: "unchanged"})
	for i := range p.Pairs {
		if i%2 == 0 {
			p.Pairs[i].Cand = &fingerprint.Fingerprint{} // no timing recorded
		}
	}
	if _, err := ReplayPaired(plain(), p, PairedOptions{Trials: 20, Seed: 1}); err == nil || !strings.Contains(err.Error(), "no machine-dependent metric in every pair") {
		t.Errorf("a pool no metric is in every pair of cannot be judged: %v", err)
	}
}
