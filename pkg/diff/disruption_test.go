package diff

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// scaledIn is a run whose scale-in went from four nodes to one: one
// multi-node consolidation (replace) of four, then nothing.
func scaledIn(after map[string]int, nodes int, cost float64, decisions ...fingerprint.Decision) *fingerprint.Fingerprint {
	f := fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 4)
	d := &fingerprint.Disruption{Outcome: observe.Settled, After: fingerprint.Selection{InstanceTypes: after, Nodes: nodes, HourlyCost: cost},
		Disrupted: map[string]int{}, Decisions: decisions}
	for _, x := range decisions {
		d.Disrupted[x.Reason] += len(x.Nodes)
		d.Replacements += len(x.Replacements)
		d.MaxDisrupting = max(d.MaxDisrupting, x.Disrupting)
	}
	f.Disruption = d
	return f
}

var (
	small     = map[string]int{"c-4x-amd64-linux/on-demand": 1}
	multi     = fingerprint.Decision{Reason: "Underutilized", Kind: "replace", Nodes: []string{"a", "b", "c", "d"}, Replacements: []string{"c-4x"}, Disrupting: 4, Allowed: 4}
	singleOne = fingerprint.Decision{Reason: "Underutilized", Kind: "delete", Nodes: []string{"a"}, Disrupting: 1, Allowed: 4}
)

func scaleInBaseline(t *testing.T) *fingerprint.Baseline {
	t.Helper()
	b, err := fingerprint.NewBaseline("shrink", fingerprint.Provenance{}, []*fingerprint.Fingerprint{
		scaledIn(small, 1, 0.1, multi), scaledIn(small, 1, 0.1, multi), scaledIn(small, 1, 0.1, multi),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func paths(d *Diff) []string {
	var out []string
	for _, x := range d.Deviations {
		if x.Severity == Regression {
			out = append(out, x.Path)
		}
	}
	slices.Sort(out)
	return out
}

func TestDisruption(t *testing.T) {
	cases := []struct {
		name string
		run  *fingerprint.Fingerprint
		want []string
	}{
		{"the same scale-in", scaledIn(small, 1, 0.1, multi), nil},
		// The class of kubernetes-sigs/karpenter#3225: single-node deletes
		// instead of one multi-node consolidation, more nodes left.
		{"fewer multi-node consolidations", scaledIn(map[string]int{"c-4x-amd64-linux/on-demand": 3}, 3, 0.3, singleOne),
			[]string{"disruption.after.hourlyCost", "disruption.after.instanceTypes", "disruption.after.nodes", "disruption.decisions.delete/Underutilized/single",
				"disruption.decisions.replace/Underutilized/multi", "disruption.disrupted.Underutilized", "disruption.maxDisrupting", "disruption.replacements"}},
		{"consolidation stopped", scaledIn(map[string]int{"c-16x-amd64-linux/on-demand": 4}, 4, 1.6),
			[]string{"disruption.after.hourlyCost", "disruption.after.instanceTypes", "disruption.after.nodes", "disruption.decisions.replace/Underutilized/multi",
				"disruption.disrupted.Underutilized", "disruption.maxDisrupting", "disruption.replacements"}},
		// The same decisions at another moment of the load: the baseline's
		// came after the steps, this one while they still ran (and the
		// class of kubernetes-sigs/karpenter#3006 the other way round).
		{"a consolidation made during the steps", func() *fingerprint.Fingerprint {
			early := multi
			early.Step = 1
			f := scaledIn(small, 1, 0.1, early)
			f.Disruption.Steps = []float64{0, 30}
			return f
		}(), []string{"disruption.duringSteps.replace/Underutilized/multi"}},
		{"budget exceeded", scaledIn(small, 1, 0.1, fingerprint.Decision{Reason: "Underutilized", Kind: "replace", Nodes: []string{"a", "b", "c", "d"}, Replacements: []string{"c-4x"}, Disrupting: 4, Allowed: 2}),
			[]string{"disruption.budget"}},
		{"skipped", func() *fingerprint.Fingerprint {
			f := scaledIn(small, 1, 0.1, multi)
			f.Disruption = &fingerprint.Disruption{Skipped: "the scale-out stalled"}
			return f
		}(), []string{"disruption.outcome"}},
		{"no scale-in", fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 4), []string{"disruption"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Compare(scaleInBaseline(t), Rules{ZonesMatter: true}, c.run)
			if diff := cmp.Diff(c.want, paths(d)); diff != "" {
				t.Fatalf("regressions (-want +got):\n%s\n%s", diff, d.Text())
			}
		})
	}
}

// A baseline without a scale-in and a run with one: the baseline must be
// recorded afresh, not passed.
func TestDisruptionNotRecorded(t *testing.T) {
	d := Compare(baseline(t), Rules{ZonesMatter: true}, scaledIn(small, 1, 0.1, multi))
	if diff := cmp.Diff([]string{"disruption"}, paths(d)); diff != "" {
		t.Fatalf("regressions (-want +got):\n%s", diff)
	}
}

func TestDisruptionBaselineRefusesMixedRuns(t *testing.T) {
	_, err := fingerprint.NewBaseline("shrink", fingerprint.Provenance{}, []*fingerprint.Fingerprint{
		scaledIn(small, 1, 0.1, multi), fp(map[string]int{"c-16x-amd64-linux/on-demand": 1}, 1, 0.4344, 4),
	})
	if err == nil {
		t.Fatal("a baseline of runs with and without a scale-in must be refused")
	}
	skipped := scaledIn(small, 1, 0.1, multi)
	skipped.Disruption.Skipped = "the scale-out stalled"
	if _, err := fingerprint.NewBaseline("shrink", fingerprint.Provenance{}, []*fingerprint.Fingerprint{skipped}); err == nil {
		t.Fatal("a baseline of a skipped scale-in must be refused")
	}
}

// Expiry publishes no event: Karpenter's own count of the run's removals
// is what shows it, compared where every run read it.
func TestDisruptionKarpenterRemoved(t *testing.T) {
	withRemoved := func(removed map[string]int) *fingerprint.Fingerprint {
		f := scaledIn(small, 1, 0.1, multi)
		f.Disruption.KarpenterRemoved = removed
		return f
	}
	b, err := fingerprint.NewBaseline("shrink", fingerprint.Provenance{}, []*fingerprint.Fingerprint{
		withRemoved(map[string]int{"underutilized": 4}), withRemoved(map[string]int{"underutilized": 4}),
	})
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(b, Rules{}, withRemoved(map[string]int{"underutilized": 4, "expired": 7}))
	if diff := cmp.Diff([]string{"disruption.karpenterRemoved.expired"}, paths(d)); diff != "" {
		t.Fatalf("regressions (-want +got):\n%s", diff)
	}
	if d := Compare(b, Rules{}, withRemoved(nil)); len(paths(d)) != 0 {
		t.Fatalf("a run that could not read Karpenter's count is not compared on it: %s", d.Text())
	}
}

// A pod that holds a drain the recorded runs never saw held is reported
// with its kind and count, and does not fail on its own: the decisions
// and the end state say whether it changed the scale-in.
func TestDisruptionHeldIsReportedNotFailed(t *testing.T) {
	held := scaledIn(small, 1, 0.1, multi)
	held.Disruption.Held = []fingerprint.Hold{{NodeClaim: "a", By: fingerprint.HeldByPDB}, {NodeClaim: "b", By: fingerprint.HeldByPDB}}
	d := Compare(scaleInBaseline(t), Rules{ZonesMatter: true}, held)
	if d.Regressed() {
		t.Fatalf("a hold alone failed verification:\n%s", d.Text())
	}
	var got []Deviation
	for _, x := range d.Deviations {
		if x.Path == "disruption.held.pdb" {
			got = append(got, x)
		}
	}
	if len(got) != 1 || got[0].Severity != Tolerated || got[0].Baseline != "0" || got[0].Observed != "2" {
		t.Fatalf("want one tolerated disruption.held.pdb 0 → 2, got %+v\n%s", got, d.Text())
	}

	// Recorded with the hold, a run with it again reads nothing; one
	// without it reads the hold gone.
	b, err := fingerprint.NewBaseline("shrink", fingerprint.Provenance{}, []*fingerprint.Fingerprint{held, held})
	if err != nil {
		t.Fatal(err)
	}
	if d := Compare(b, Rules{ZonesMatter: true}, held); len(d.Deviations) != 0 {
		t.Errorf("the recorded hold again: want no deviation, got\n%s", d.Text())
	}
	if d := Compare(b, Rules{ZonesMatter: true}, scaledIn(small, 1, 0.1, multi)); len(d.Deviations) != 1 || d.Deviations[0].Path != "disruption.held.pdb" {
		t.Errorf("the recorded hold gone: want disruption.held.pdb, got\n%s", d.Text())
	}
}
