package diff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
)

// disruption compares a run's scale-in with the recorded runs' (docs/scale-in.md):
// what it ended with and every decision count, none of which depends on
// the machine; a decision that disrupted more nodes at once than the
// NodePool's budget allowed fails whatever the baseline saw. How long it
// took depends on the machine and is paired (PairedSamples), not compared
// here.
func (d *Diff) disruption(b *fingerprint.BaselineDisruption, o *fingerprint.Disruption, rules Rules) {
	switch {
	case b == nil && o == nil:
		return
	case b == nil:
		d.add("disruption", "no scale-in", "a scale-in", "the baseline was recorded without the scenario's scale-in: record it afresh", Regression)
		return
	case o == nil:
		d.add("disruption", "a scale-in", "none", "the scenario's scale-in must run as it was recorded", Regression)
		return
	case o.Skipped != "":
		d.add("disruption.outcome", outcomesOf(b), "skipped: "+o.Skipped, "the scale-in must run and end as it did in the baseline", Regression)
		return
	}
	if !slices.ContainsFunc(b.Runs, func(r fingerprint.DisruptionRun) bool { return r.Outcome == o.Outcome }) {
		d.add("disruption.outcome", outcomesOf(b), string(o.Outcome), "the scale-in must end as it did in the baseline", Regression)
	}
	d.selectionAgainst("disruption.after", b.AfterSelections(), o.After, rules)
	s := o.Summary()
	d.counts("disruption.disrupted", b, s.Disrupted, func(r fingerprint.DisruptionRun) map[string]int { return r.Disrupted }, "NodeClaims removed for this reason within the seen range", Regression)
	d.counts("disruption.decisions", b, s.Decisions, func(r fingerprint.DisruptionRun) map[string]int { return r.Decisions }, "decisions of this kind within the seen range", Regression)
	d.counts("disruption.duringSteps", b, s.DuringSteps, func(r fingerprint.DisruptionRun) map[string]int { return r.DuringSteps }, "decisions of this kind made before the scale-in's last step within the seen range", Regression)
	if s.KarpenterRemoved != nil && !slices.ContainsFunc(b.Runs, func(r fingerprint.DisruptionRun) bool { return r.KarpenterRemoved == nil }) {
		// Karpenter's own count, where the run and every recorded one read it.
		d.counts("disruption.karpenterRemoved", b, s.KarpenterRemoved, func(r fingerprint.DisruptionRun) map[string]int { return r.KarpenterRemoved }, "NodeClaims Karpenter counted as removed for this reason within the seen range", Regression)
	}
	// What pods held is reported, not failed: a count is a lower bound
	// (Karpenter deduplicates its events), and whether the hold changed
	// the scale-in is what the decisions, the end state and the paired
	// time say.
	d.counts("disruption.held", b, s.Held, func(r fingerprint.DisruptionRun) map[string]int { return r.Held },
		"NodeClaims a pod held within the seen range; reported, not failed: Karpenter's events are deduplicated, so a count is a lower bound", Tolerated)
	for _, x := range []struct {
		path string
		of   func(fingerprint.DisruptionRun) int
	}{
		{"disruption.replacements", func(r fingerprint.DisruptionRun) int { return r.Replacements }},
		{"disruption.maxDisrupting", func(r fingerprint.DisruptionRun) int { return r.MaxDisrupting }},
		{"disruption.evicted", func(r fingerprint.DisruptionRun) int { return r.Evicted }},
	} {
		seen := b.Range(func(r fingerprint.DisruptionRun) float64 { return float64(x.of(r)) })
		if v := float64(x.of(s)); !seen.Contains(v, 0) {
			d.add(x.path, rangeString(seen, "%.0f"), fmt.Sprint(v), "within the seen range", Regression)
		}
	}
	for _, x := range o.Decisions {
		if x.Allowed >= 0 && x.Disrupting > x.Allowed {
			d.add("disruption.budget", fmt.Sprintf("at most %d disrupting (the NodePool's budget for %s then)", x.Allowed, x.Reason),
				fmt.Sprintf("%d disrupting at %.0f s (%s %s of %d node(s))", x.Disrupting, x.At, x.Kind, x.Reason, len(x.Nodes)),
				"no decision may disrupt more nodes at once than the budget in force allows", Regression)
		}
	}
}

// counts compares each key's count with the range the recorded runs saw
// (a key a run lacks counts 0 there) and adds one of sev outside it.
func (d *Diff) counts(path string, b *fingerprint.BaselineDisruption, got map[string]int, of func(fingerprint.DisruptionRun) map[string]int, rule string, sev Severity) {
	keys := maps.Clone(got)
	if keys == nil {
		keys = map[string]int{}
	}
	for _, r := range b.Runs {
		for k := range of(r) {
			keys[k] += 0
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		seen := b.Range(func(r fingerprint.DisruptionRun) float64 { return float64(of(r)[k]) })
		if v := float64(got[k]); !seen.Contains(v, 0) {
			d.add(path+"."+k, rangeString(seen, "%.0f"), fmt.Sprint(v), rule, sev)
		}
	}
}

func outcomesOf(b *fingerprint.BaselineDisruption) string {
	var out []string
	for _, r := range b.Runs {
		if !slices.Contains(out, string(r.Outcome)) {
			out = append(out, string(r.Outcome))
		}
	}
	return strings.Join(out, " | ")
}
