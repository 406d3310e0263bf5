package diff

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func fp(types map[string]int, nodes int, cost, p90 float64) *fingerprint.Fingerprint {
	return &fingerprint.Fingerprint{
		Selection: fingerprint.Selection{InstanceTypes: types, Nodes: nodes, HourlyCost: cost, Zones: 1, PodsPerNodeMin: 10, PodsPerNodeMax: 10},
		Timing:    fingerprint.Timing{PodReady: fingerprint.Percentiles{P50: p90, P90: p90}, NodeClaimReady: fingerprint.Percentiles{P50: 2, P90: 2}},
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
	d := Compare(baseline(t), fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 5), Rules{ZonesMatter: true})
	if len(d.Deviations) != 0 || d.Regressed() {
		t.Fatalf("want no deviation, got %s", d.Text())
	}
}

// The check: pods asking 3 CPU instead of 1 move Karpenter to bigger
// nodes; the diff names the instance types and the cost that changed.
func TestRequestChangeNamesTypesAndCost(t *testing.T) {
	got := Compare(baseline(t), fp(map[string]int{"c-32x-amd64-linux/on-demand": 1}, 1, 0.8688, 4), Rules{ZonesMatter: true})
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
	strict := Compare(baseline(t), near, Rules{ZonesMatter: true})
	if !strict.Regressed() {
		t.Fatal("without tolerances an unseen selection regresses")
	}
	loose := Compare(baseline(t), near, Rules{Tolerances: scenario.Tolerances{CostPercent: 10, Nodes: 1}})
	if loose.Regressed() {
		t.Fatalf("within 10%% cost and 1 node the change is tolerated:\n%s", loose.Text())
	}
	if len(loose.Deviations) == 0 || loose.Deviations[0].Severity != Tolerated {
		t.Fatalf("a tolerated change is still reported:\n%s", loose.Text())
	}
	far := Compare(baseline(t), fp(map[string]int{"c-8x-amd64-linux/on-demand": 4}, 4, 0.9, 4), Rules{Tolerances: scenario.Tolerances{CostPercent: 10, Nodes: 1}})
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
	split := Compare(b, fp(map[string]int{"c-8x-amd64-linux/on-demand": 3}, 3, 0.6516, 4), rules)
	if split.Regressed() {
		t.Fatalf("another amount of the same capacity is batching noise:\n%s", split.Text())
	}
	dearer := Compare(b, fp(map[string]int{"m-16x-amd64-linux/on-demand": 1}, 1, 0.6, 4), rules)
	if !dearer.Regressed() {
		t.Fatalf("16 vCPUs 38%% dearer each, inside the cost range, must regress:\n%s", dearer.Text())
	}
	if !slices.ContainsFunc(dearer.Deviations, func(d Deviation) bool { return d.Path == "selection.costPerCPU" && d.Severity == Regression }) {
		t.Fatalf("the regression is the cost of a vCPU:\n%s", dearer.Text())
	}
	rules.CPU = nil
	if Compare(b, fp(map[string]int{"m-16x-amd64-linux/on-demand": 1}, 1, 0.6, 4), rules).Regressed() {
		t.Fatal("without the catalog the check cannot be made (the old behaviour)")
	}
}

func TestTimingAndOutcomes(t *testing.T) {
	slow := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 8) // limit is max(5, 4)+2 = 7
	d := Compare(baseline(t), slow, Rules{ZonesMatter: true})
	if !d.Regressed() || d.Deviations[0].Path != "timing.podReady.p50" || d.Deviations[1].Path != "timing.podReady.p90" {
		t.Fatalf("want podReady p50/p90 regressions:\n%s", d.Text())
	}
	ok := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 7)
	if d := Compare(baseline(t), ok, Rules{ZonesMatter: true}); d.Regressed() {
		t.Fatalf("7s is within the limit:\n%s", d.Text())
	}
	oom := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 4)
	oom.Outcomes = fingerprint.Outcomes{Running: 8, Restarting: 2, OOMKilled: 2}
	d = Compare(baseline(t), oom, Rules{ZonesMatter: true})
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
	if d := Compare(baseline(t), spread, Rules{ZonesMatter: true}); !d.Regressed() {
		t.Fatalf("a zone-constrained scenario regresses on another zone shape:\n%s", d.Text())
	}
	d := Compare(baseline(t), spread, Rules{})
	if d.Regressed() || len(d.Deviations) != 2 || d.Deviations[0].Severity != Tolerated {
		t.Fatalf("elsewhere the zone shape is a tie-break, reported as tolerated:\n%s", d.Text())
	}
}
