// The committed pools' replays are arithmetic over recorded numbers with
// nothing concurrent in them, and the race detector made them the unit
// tests' longest: 244 s against 67 s without it (2026-12-07, 2-core
// machine). make test runs them without it (tools/ci/test.sh); plain
// go test runs them as any test.

//go:build !race

package sensitivity

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// TestCommittedAAPools reads the A/A pools docs/performance.md reports
// ("A/A pools read against chance") and checks what it says of each: its
// independent verifications and its lean, pool by pool and the pools of a
// condition joined. A change to the judge's test or to how a pool is read
// shows here as a difference from the documented table.
func TestCommittedAAPools(t *testing.T) {
	var got []string
	for _, name := range []string{"web-service", "mixed-arch"} {
		pools := readPools(t, fmt.Sprintf("../../fixtures/sensitivity/pools/2026-12-06-aa-%s.json.gz", name))
		s := fixtureScenario(t, name)
		for _, p := range slices.Concat(pools, PoolAA(pools)) {
			got = append(got, fmt.Sprintf("%s, %s: %d blocks, %s", name, p.Condition.Name, len(p.Pairs), readAA(t, s, p.Pairs)))
		}
	}
	want := []string{
		"web-service, unchanged, one core busy: 16 blocks, 0 of 1 failed, lean 0.74 (timing.podScheduled.p50 1.04× [0.95, 1.14])",
		"web-service, unchanged, one core busy: 16 blocks, 0 of 1 failed, lean 0.66 (timing.podStart.p50 1.20× [0.85, 1.73])",
		"web-service, unchanged, one core busy: 16 blocks, 0 of 1 failed, lean 0.92 (timing.podScheduled.p50 1.03× [0.93, 1.13])",
		"web-service, unchanged: 16 blocks, 0 of 1 failed, lean 0.16 (timing.podReady.p50 1.10× [1.00, 1.20])",
		"web-service, unchanged, one core busy, 3 pools: 48 blocks, 0 of 3 failed, lean 0.97 (timing.nodeClaimLaunch.p50 1.01× [0.88, 1.17])",
		"mixed-arch, unchanged, one core busy: 16 blocks, 0 of 1 failed, lean 0.94 (timing.nodeClaimReady.p90 1.02× [0.93, 1.13])",
		"mixed-arch, unchanged, one core busy: 16 blocks, 0 of 1 failed, lean 0.64 (timing.nodeClaimLaunch.p50 1.21× [0.88, 1.68])",
		"mixed-arch, unchanged, one core busy: 16 blocks, 0 of 1 failed, lean 0.99 (timing.nodeClaimReady.p90 0.94× [0.80, 1.11])",
		"mixed-arch, unchanged, one core busy, 3 pools: 48 blocks, 0 of 3 failed, lean 0.71 (timing.nodeClaimLaunch.p50 1.09× [0.93, 1.29])",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the committed A/A pools read (-documented +now):\n%s", d)
	}
}

// fixtureScenario loads the committed scenario fixtures/scenarios/<name>.yaml.
func fixtureScenario(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json", ValidateFault: faults.Validate}
	ss, err := l.LoadFiles(filepath.Join("../../fixtures/scenarios", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return ss[0]
}

// readAA is what the docs' A/A tables say of a pool: its independent
// verifications (failed of run) and its lean, with the metric leaning most.
func readAA(t *testing.T, s *scenario.Scenario, pairs []Pair) string {
	t.Helper()
	lean, leaning, err := lean(s, pairs)
	if err != nil {
		t.Fatal(err)
	}
	n, failed, err := disjoint(s, pairs, 16)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d of %d failed, lean %.2f (%s)", failed, n, lean, leaning)
}

func readPools(t *testing.T, path string) []Pool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var pools []Pool
	if err := json.NewDecoder(z).Decode(&pools); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pools
}

// TestCommittedFreshAAPools reads the A/A pools of docs/performance.md's
// "Three more baselines" and "memory-heavy, spot-fallback and burst-1000":
// every run on a Karpenter just started, the pinned build in both arms.
func TestCommittedFreshAAPools(t *testing.T) {
	var got []string
	for _, p := range readPools(t, "../../fixtures/sensitivity/pools/2026-12-06-aa-fresh.json.gz") {
		got = append(got, fmt.Sprintf("%s: %s", p.Scenario, readAA(t, fixtureScenario(t, p.Scenario), p.Pairs)))
	}
	want := []string{
		"cpu-heavy: 0 of 1 failed, lean 0.99 (timing.podStart.p50 0.97× [0.74, 1.27])",
		"zone-spread: 1 of 1 failed, lean 0.05 (timing.nodeRegistration.p50 1.07× [1.02, 1.12])",
		"aws-families: 0 of 1 failed, lean 0.94 (timing.podReady.p90 0.99× [0.89, 1.11])",
		"zone-spread: 0 of 1 failed, lean 0.97 (timing.podStart.p50 1.03× [0.78, 1.36])",
		"memory-heavy: 0 of 1 failed, lean 0.44 (timing.podReady.p90 1.07× [0.97, 1.17])",
		"spot-fallback: 0 of 1 failed, lean 0.05 (timing.nodeClaimLaunch.p50 1.18× [1.04, 1.34])",
		"burst-1000: 0 of 1 failed, lean 1.00 (timing.podStart.p50 1.00× [0.90, 1.12])",
		"spot-fallback: 0 of 1 failed, lean 0.87 (timing.podStart.p50 1.06× [0.87, 1.31])",
		"web-service: 0 of 1 failed, lean 0.98 (timing.nodeClaimLaunch.p50 0.99× [0.72, 1.36])",
		"burst-1000: 0 of 0 failed, lean 0.85 (timing.nodeClaimLaunch.p50 1.07× [0.80, 1.45])",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the committed fresh A/A pools read (-documented +now):\n%s", d)
	}
}

// burst-1000's decision lever has no whole pool: both attempts stopped at
// block 10 on an API server that did not answer (docs/performance.md,
// "fifth"). The blocks they kept, replayed together as make sensitivity
// -analyze reads them, are what the docs and README report.
func TestCommittedBurstDecisionBlocks(t *testing.T) {
	stopped := readPools(t, "../../fixtures/sensitivity/pools/2026-12-06-burst-1000-decide-stopped.json.gz")
	if len(stopped) != 2 {
		t.Fatalf("%d stopped pools, want 2", len(stopped))
	}
	pool := stopped[0]
	pool.Pairs = append(append([]Pair(nil), stopped[0].Pairs...), stopped[1].Pairs...)
	cell, err := ReplayPaired(fixtureScenario(t, "burst-1000"), pool, PairedOptions{Trials: 500, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d blocks, realized ×%.2f, caught %.1f%%, on the target %.1f%%, %.1f pairs", len(pool.Pairs), cell.Realized, 100*cell.Failed, 100*cell.Power, cell.MeanPairs)
	want := "18 blocks, realized ×1.24, caught 100.0%, on the target 96.8%, 11.1 pairs"
	if got != want {
		t.Errorf("the committed blocks read %q, documented %q", got, want)
	}
}

// burst-1000's decision lever as one whole pool: twelve blocks on one
// cluster of a fresh machine, no stall (docs/performance.md, "sixth").
// Replayed as make sensitivity -analyze reads it.
func TestCommittedBurstDecisionPool(t *testing.T) {
	pools := readPools(t, "../../fixtures/sensitivity/pools/2026-12-06-burst-1000-decide.json.gz")
	if len(pools) != 1 {
		t.Fatalf("%d pools, want 1", len(pools))
	}
	cell, err := ReplayPaired(fixtureScenario(t, "burst-1000"), pools[0], PairedOptions{Trials: 500, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s: %d blocks, realized ×%.2f, caught %.1f%%, on the target %.1f%%, %.1f pairs", pools[0].Condition.Name, len(pools[0].Pairs), cell.Realized, 100*cell.Failed, 100*cell.Power, cell.MeanPairs)
	want := "decide ×1.25: 12 blocks, realized ×1.30, caught 100.0%, on the target 98.0%, 11.0 pairs"
	if got != want {
		t.Errorf("the committed pool reads %q, documented %q", got, want)
	}
}

// The pools of docs/performance.md's "Karpenter's decision as a stage":
// per scenario an A/A pool and a decision lever's, recorded with the
// decision stage, each replayed as recorded and with the stage taken out
// of every run (the test as it was before the stage), and the A/A pool
// with a slower decision and a slower launch injected at exactly 1.25×.
func TestCommittedDecisionStagePools(t *testing.T) {
	pools := readPools(t, "../../fixtures/sensitivity/pools/2026-12-07-decision-stage.json.gz")
	ins, err := ParseInjections("decide:1.25,launch:1.25")
	if err != nil {
		t.Fatal(err)
	}
	injected, err := InjectAll(pools, ins)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range slices.Concat(pools, injected) {
		s := fixtureScenario(t, p.Scenario)
		with := replayCell(t, s, p)
		without := replayCell(t, s, withoutDecisions(p))
		got = append(got, fmt.Sprintf("%s, %s: %s; without the stage %s", p.Scenario, p.Condition.Name, with, without))
	}
	want := []string{
		"cpu-heavy, unchanged: replayed 5.8%, 0 of 1 failed, 16.0 pairs; without the stage replayed 5.8%, 0 of 1 failed, 16.0 pairs",
		"cpu-heavy, decide ×1.25: realized ×1.41, caught 100.0%, 11.0 pairs; without the stage realized ×1.41, caught 100.0%, 12.8 pairs",
		"aws-families, unchanged: replayed 9.0%, 0 of 1 failed, 16.0 pairs; without the stage replayed 9.0%, 0 of 1 failed, 16.0 pairs",
		"aws-families, decide ×1.25: realized ×1.34, caught 100.0%, 11.0 pairs; without the stage realized ×1.34, caught 100.0%, 13.1 pairs",
		"cpu-heavy, decide ×1.25, injected into unchanged: realized ×1.28, caught 100.0%, 11.0 pairs; without the stage realized ×1.28, caught 100.0%, 11.1 pairs",
		"cpu-heavy, launch ×1.25, injected into unchanged: realized ×1.23, caught 100.0%, 11.0 pairs; without the stage realized ×1.23, caught 100.0%, 11.0 pairs",
		"aws-families, decide ×1.25, injected into unchanged: realized ×1.20, caught 100.0%, 11.0 pairs; without the stage realized ×1.20, caught 100.0%, 13.7 pairs",
		"aws-families, launch ×1.25, injected into unchanged: realized ×1.29, caught 100.0%, 11.1 pairs; without the stage realized ×1.29, caught 100.0%, 11.1 pairs",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the committed decision-stage pools read (-documented +now):\n%s", d)
	}
}

// The A/A pools with the decision stage on five more baselines
// (docs/performance.md, "The decision stage on five more baselines"): each
// pool's own verification and lean, its replayed rate, and a slower
// decision and a slower launch injected at exactly 1.25×, the decision
// also with the stage taken out.
func TestCommittedFiveAAPools(t *testing.T) {
	got := aaWithStageRows(t, "../../fixtures/sensitivity/pools/2026-12-07-aa-five.json.gz")
	want := []string{
		"web-service: 0 of 1 failed, lean 0.66 (timing.podStart.p50 1.23× [0.85, 1.79]); replayed 0.6%, 0 of 1 failed, 16.0 pairs; decide ×1.25, injected into unchanged: realized ×1.19, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.25, caught 100.0%, 11.8 pairs; decide without the stage: realized ×1.19, caught 98.8%, 14.6 pairs",
		"memory-heavy: 0 of 1 failed, lean 0.81 (timing.podStart.p50 1.20× [0.79, 1.80]); replayed 0.4%, 0 of 1 failed, 16.0 pairs; decide ×1.25, injected into unchanged: realized ×1.28, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.27, caught 100.0%, 11.1 pairs; decide without the stage: realized ×1.28, caught 94.2%, 15.0 pairs",
		"mixed-arch: 0 of 1 failed, lean 0.97 (timing.podStart.p50 1.04× [0.77, 1.41]); replayed 0.0%, 0 of 1 failed, 16.0 pairs; decide ×1.25, injected into unchanged: realized ×1.26, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.25, caught 100.0%, 11.2 pairs; decide without the stage: realized ×1.26, caught 100.0%, 11.6 pairs",
		"spot-fallback: 0 of 1 failed, lean 0.68 (timing.nodeClaimLaunch.p50 1.18× [0.90, 1.57]); replayed 2.6%, 0 of 1 failed, 16.0 pairs; decide ×1.25, injected into unchanged: realized ×1.27, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.27, caught 100.0%, 11.0 pairs; decide without the stage: realized ×1.27, caught 99.2%, 13.5 pairs",
		"zone-spread: 0 of 1 failed, lean 0.24 (timing.podReady.p50 1.05× [1.00, 1.11]); replayed 2.8%, 0 of 1 failed, 16.0 pairs; decide ×1.25, injected into unchanged: realized ×1.30, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.32, caught 100.0%, 11.1 pairs; decide without the stage: realized ×1.30, caught 100.0%, 11.0 pairs",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the five A/A pools with the decision stage read (-documented +now):\n%s", d)
	}
}

// The decision stage on the last baseline, burst-1000, and zone-spread's
// fourth A/A pool, its second with the stage (the scenario whose pools leaned most when read
// alone), run as the five above were (docs/performance.md): the same
// columns.
func TestCommittedBurstAndZoneAAPools(t *testing.T) {
	got := aaWithStageRows(t, "../../fixtures/sensitivity/pools/2026-12-07-aa-burst-zone.json.gz")
	want := []string{
		"burst-1000: 0 of 1 failed, lean 0.36 (timing.nodeClaimReady.p90 1.12× [0.98, 1.28]); replayed 3.4%, 0 of 1 failed, 16.0 pairs; decide ×1.25, injected into unchanged: realized ×1.25, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.31, caught 100.0%, 12.0 pairs; decide without the stage: realized ×1.25, caught 100.0%, 11.0 pairs",
		"zone-spread: 0 of 1 failed, lean 0.32 (timing.podStart.p50 1.36× [0.96, 1.92]); replayed 11.6%, 0 of 1 failed, 15.9 pairs; decide ×1.25, injected into unchanged: realized ×1.27, caught 100.0%, 11.0 pairs; launch ×1.25, injected into unchanged: realized ×1.11, caught 100.0%, 12.3 pairs; decide without the stage: realized ×1.27, caught 99.8%, 13.8 pairs",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("burst-1000's and zone-spread's A/A pools with the decision stage read (-documented +now):\n%s", d)
	}
}

// aaWithStageRows reads each A/A pool of path with the decision stage as
// the docs' tables give it: the pool's own verification and replay, a
// slower decision and a slower launch injected at exactly 1.25×, and the
// decision injected with the stage taken out.
func aaWithStageRows(t *testing.T, path string) []string {
	t.Helper()
	ins, err := ParseInjections("decide:1.25,launch:1.25")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range readPools(t, path) {
		s := fixtureScenario(t, p.Scenario)
		row := []string{p.Scenario + ": " + readAA(t, s, p.Pairs), replayCell(t, s, p)}
		injected, err := InjectAll([]Pool{p}, ins)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range injected {
			row = append(row, q.Condition.Name+": "+replayCell(t, s, q))
		}
		row = append(row, "decide without the stage: "+replayCell(t, s, withoutDecisions(injected[0])))
		got = append(got, strings.Join(row, "; "))
	}
	return got
}

// replayCell is a pool's replay as the docs' tables give it: realized,
// caught (for an A/A pool its biased replayed rate) and pairs.
func replayCell(t *testing.T, s *scenario.Scenario, p Pool) string {
	t.Helper()
	c, err := ReplayPaired(s, p, PairedOptions{Trials: 500, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.Condition.Target == "" {
		return fmt.Sprintf("replayed %.1f%%, %d of %d failed, %.1f pairs", 100*c.Failed, c.DisjointFailed, c.Disjoint, c.MeanPairs)
	}
	return fmt.Sprintf("realized ×%.2f, caught %.1f%%, %.1f pairs", c.Realized, 100*c.Failed, c.MeanPairs)
}

// withoutDecisions is p with the decision stage taken out of every run,
// as the runs recorded before it read.
func withoutDecisions(p Pool) Pool {
	q := p
	q.Pairs = nil
	for _, b := range p.Pairs {
		r, c := *b.Ref, *b.Cand
		r.Timing.PodDecision, c.Timing.PodDecision = fingerprint.Percentiles{}, fingerprint.Percentiles{}
		b.Ref, b.Cand = &r, &c
		q.Pairs = append(q.Pairs, b)
	}
	return q
}

// The committed A/A pools with a slower decision and a slower launch
// injected at exactly 1.25× (docs/performance.md, "Karpenter's decision
// as a stage"): recorded before the decision stage, so a slower decision
// shows only in pod-scheduled and pod-ready. A scenario with two or more
// pools of one condition is read joined, as the docs' table reads it.
func TestCommittedAAPoolsInjected(t *testing.T) {
	var pools []Pool
	for _, f := range []string{"aa-fresh", "aa-web-service", "aa-mixed-arch"} {
		pools = append(pools, readPools(t, fmt.Sprintf("../../fixtures/sensitivity/pools/2026-12-06-%s.json.gz", f))...)
	}
	joined := PoolAA(pools)
	read := map[string]bool{}
	var rows []Pool
	for _, p := range joined {
		read[p.Scenario] = true
		rows = append(rows, p)
	}
	for _, p := range pools {
		if !read[p.Scenario] {
			read[p.Scenario] = true
			rows = append(rows, p)
		}
	}
	ins, err := ParseInjections("decide:1.25,launch:1.25")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range rows {
		injected, err := InjectAll([]Pool{p}, ins)
		if err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, q := range injected {
			c, err := ReplayPaired(fixtureScenario(t, q.Scenario), q, PairedOptions{Trials: 500, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			cells = append(cells, fmt.Sprintf("%.1f%%, %.1f", 100*c.Failed, c.MeanPairs))
		}
		got[p.Scenario] = strings.Join(cells, " | ")
	}
	want := map[string]string{
		"aws-families":  "91.8%, 14.3 | 100.0%, 11.1",
		"burst-1000":    "100.0%, 11.5 | 100.0%, 11.0",
		"cpu-heavy":     "57.6%, 15.5 | 100.0%, 11.0",
		"memory-heavy":  "100.0%, 12.6 | 100.0%, 11.2",
		"mixed-arch":    "100.0%, 12.1 | 100.0%, 11.2",
		"spot-fallback": "98.4%, 14.0 | 100.0%, 11.0",
		"web-service":   "99.8%, 12.9 | 100.0%, 11.0",
		"zone-spread":   "95.2%, 14.8 | 100.0%, 11.1",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the committed A/A pools with 1.25× injected read, decide | launch (-documented +now):\n%s", d)
	}
}

// TestCommittedAAPremise checks the paired test's premise on every A/A
// pool run as verification runs today (every run on a Karpenter just
// started, the pinned build in both arms): per metric, how many pools lean
// towards a slower candidate at p ≤ 0.05, and all pools' p-values
// combined. docs/performance.md reports this table.
func TestCommittedAAPremise(t *testing.T) {
	var pools []Pool
	for _, f := range []string{"2026-12-06-aa-fresh", "2026-12-07-decision-stage", "2026-12-07-aa-five", "2026-12-07-aa-burst-zone"} {
		pools = append(pools, readPools(t, "../../fixtures/sensitivity/pools/"+f+".json.gz")...)
	}
	rows, err := Premise(pools, func(name string) (*scenario.Scenario, error) { return fixtureScenario(t, name), nil })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s: %d of %d pools at p ≤ 0.05, lowest %.3f (%s), combined %.3f", r.Metric, r.Small, r.Pools, r.Lowest, r.LowestPool, r.Fisher))
	}
	want := []string{
		"timing.podReady.p50: 2 of 19 pools at p ≤ 0.05, lowest 0.028 (zone-spread, unchanged), combined 0.490",
		"timing.podReady.p90: 1 of 19 pools at p ≤ 0.05, lowest 0.032 (spot-fallback, unchanged), combined 0.406",
		"timing.nodeClaimReady.p50: 0 of 19 pools at p ≤ 0.05, lowest 0.099 (spot-fallback, unchanged), combined 0.631",
		"timing.nodeClaimReady.p90: 0 of 19 pools at p ≤ 0.05, lowest 0.050 (burst-1000, unchanged), combined 0.659",
		"timing.podScheduled.p50: 2 of 19 pools at p ≤ 0.05, lowest 0.036 (spot-fallback, unchanged), combined 0.448",
		"timing.podStart.p50: 1 of 19 pools at p ≤ 0.05, lowest 0.038 (zone-spread, unchanged), combined 0.292",
		"timing.nodeClaimLaunch.p50: 2 of 19 pools at p ≤ 0.05, lowest 0.006 (spot-fallback, unchanged), combined 0.208",
		"timing.nodeRegistration.p50: 3 of 19 pools at p ≤ 0.05, lowest 0.008 (zone-spread, unchanged), combined 0.177",
		"karpenter.cpuSeconds: 1 of 19 pools at p ≤ 0.05, lowest 0.004 (zone-spread, unchanged), combined 0.400",
		"karpenter.peakRSSMiB: 1 of 19 pools at p ≤ 0.05, lowest 0.001 (zone-spread, unchanged), combined 0.226",
		"karpenter.requests: 0 of 19 pools at p ≤ 0.05, lowest 0.313 (cpu-heavy, unchanged), combined 0.904",
		"timing.podDecision.p50: 1 of 9 pools at p ≤ 0.05, lowest 0.003 (zone-spread, unchanged), combined 0.343",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the premise across the committed A/A pools (-documented +now):\n%s", d)
	}
}
