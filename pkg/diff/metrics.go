package diff

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/permtest"
)

// DefaultFalseAlarm is the false-alarm rate of the per-run metrics' test:
// one verification in a hundred of an unchanged stack may fail on them.
const DefaultFalseAlarm = 0.01

// The gates: a metric is reported only when the runs' median is at least
// this many times the baseline's, and fails only when the test finds the
// shift too. Below them a shift is real but too small to act on (another
// machine's load moves latencies by a few percent); "far more" usage is
// half as much again. Each metric's floor (fingerprint.RunMetric.Floor)
// is the least absolute growth reported besides.
const (
	TimingGate = 1.10
	UsageGate  = 1.50
)

// confirmLeeway lets the observed runs share the largest statistic with
// one other choice of runs and still reach the false-alarm rate.
const confirmLeeway = 2

// ConfirmRuns is how many runs verify's default takes in all when its
// first run is suspect, against a baseline of recorded runs: the fewest
// (at least two) that let the test decide at the rules' false-alarm rate.
func ConfirmRuns(recorded int, rules Rules) int {
	return permtest.RunsFor(recorded, cmp.Or(rules.FalseAlarm, DefaultFalseAlarm), confirmLeeway, 2)
}

// Gate is a metric's gate.
func Gate(m fingerprint.RunMetric) float64 {
	if m.Usage {
		return UsageGate
	}
	return TimingGate
}

// metrics tests the runs' per-run metrics against the baseline's runs and
// adds a deviation for each metric past its gate (and, for a single run,
// above every recorded run): a regression when the test rejects at the
// false-alarm rate, else tolerated (and the diff is suspect where more
// runs could decide).
func (d *Diff) metrics(b *fingerprint.Baseline, runs []*fingerprint.Fingerprint, rules Rules) {
	alpha := cmp.Or(rules.FalseAlarm, DefaultFalseAlarm)
	var ms []permtest.Metric
	var used []fingerprint.RunMetric
	var skipped []string
	if bc, rc := cmp.Or(b.Timing.Clock, observe.ServerClock), cmp.Or(runs[0].Timing.Clock, observe.ServerClock); bc != rc {
		skipped = append(skipped, fmt.Sprintf("latencies: the baseline's are read from the %s clock, the run's from the %s clock; re-record it (nodeprint record %s)", bc, rc, b.Scenario))
	}
	var absent []string
	var lacking grouped
	for _, m := range fingerprint.RunMetrics {
		s := m.In(b, false)
		if s != nil && len(s.Values) == 0 && !m.Untested && ranWith(m, runs) {
			// A metric newer than the baseline: say so rather than pass it.
			absent = append(absent, m.Path)
		}
		if m.Untested || s == nil || len(s.Values) == 0 || (!m.Usage && len(skipped) > 0) {
			continue
		}
		x := permtest.Metric{Name: m.Path, Baseline: s.Values}
		for _, fp := range runs {
			if v, ok := m.Of(fp); ok {
				x.New = append(x.New, v)
			}
		}
		if len(x.New) != len(runs) {
			// A run without it (no usage read, no pod ready): say so.
			lacking.add(fmt.Sprintf("%d of %d runs had none", len(runs)-len(x.New), len(runs)), m.Path)
			continue
		}
		ms, used = append(ms, x), append(used, m)
	}
	if len(absent) > 0 {
		skipped = append(skipped, fmt.Sprintf("%s: the baseline has no samples (recorded before the metric was, or a recorded run had none); re-record it to test them (nodeprint record %s)", strings.Join(absent, ", "), b.Scenario))
	}
	skipped = append(skipped, lacking.lines()...)
	if len(ms) == 0 {
		if len(skipped) > 0 {
			d.Test = &Test{Runs: len(runs), Recorded: b.Runs, Alpha: alpha, P: 1, MinP: 1, Skipped: strings.Join(skipped, "; ")}
		}
		return
	}
	// Compare adds the selection's and the outcomes' deviations first: a
	// metric the runs cannot decide says whether more runs will come.
	failed := d.Regressed()
	res := permtest.Test(ms)
	t := &Test{Runs: len(runs), Recorded: len(ms[0].Baseline), Alpha: alpha, P: res.P, MinP: res.MinP, Exact: res.Exact, Skipped: strings.Join(skipped, "; ")}
	d.Test = t
	for i, r := range res.Metrics {
		m := used[i]
		grew := permtest.Median(ms[i].New) - permtest.Median(ms[i].Baseline)
		if r.Ratio < Gate(m) || grew < m.Floor || (len(runs) == 1 && ms[i].New[0] <= slices.Max(ms[i].Baseline)) {
			// Under the gate or the floor, or one run no slower than a
			// recorded one.
			continue
		}
		sev, rule, gate := Tolerated, "", fmt.Sprintf("at least %.2f× the baseline's median", Gate(m))
		if m.Floor > 0 {
			gate += " and " + amount(m.Floor, m.Unit) + " more"
		}
		switch {
		case res.MinP > alpha:
			t.Suspect = true
			then := "more runs decide (verify --repeat auto)"
			if failed {
				// verify adds no run to a diff that failed (Diff.Suspect).
				then = "left undecided, the verification fails on other deviations"
			}
			rule = fmt.Sprintf("%s; not tested: %d run(s) against %d recorded cannot reach p ≤ %g (smallest p %.3g): %s",
				gate, t.Runs, t.Recorded, alpha, res.MinP, then)
		case res.P <= alpha && r.P <= alpha:
			sev = Regression
			rule = fmt.Sprintf("%s, and above its runs by an exact permutation test: p = %.3g ≤ %g over %d run(s) against %d", gate, r.P, alpha, t.Runs, t.Recorded)
		default:
			rule = fmt.Sprintf("%s, but not significant: p = %.3g > %g over %d run(s) against %d (noise)", gate, max(res.P, r.P), alpha, t.Runs, t.Recorded)
		}
		d.add(m.Path, samplesString(ms[i].Baseline, m.Unit), newString(ms[i].New, m.Unit, r.Ratio), rule, sev)
		d.Deviations[len(d.Deviations)-1].Ratio = math.Round(r.Ratio*1000) / 1000
	}
}

// grouped collects metrics under the reason each was not tested, in the
// order the reasons came.
type grouped struct {
	reasons []string
	paths   map[string][]string
}

func (g *grouped) add(reason, path string) {
	if g.paths == nil {
		g.paths = map[string][]string{}
	}
	if _, ok := g.paths[reason]; !ok {
		g.reasons = append(g.reasons, reason)
	}
	g.paths[reason] = append(g.paths[reason], path)
}

// lines are "path, path: reason", one a reason.
func (g *grouped) lines() []string {
	var out []string
	for _, r := range g.reasons {
		out = append(out, strings.Join(g.paths[r], ", ")+": "+r)
	}
	return out
}

// ranWith says whether some run has a value of m.
func ranWith(m fingerprint.RunMetric, runs []*fingerprint.Fingerprint) bool {
	return slices.ContainsFunc(runs, func(f *fingerprint.Fingerprint) bool { _, ok := m.Of(f); return ok })
}

func samplesString(vals []float64, unit string) string {
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf("median %s of %d runs (%s..%s)", value(permtest.Median(vals), unit), len(vals), value(lo, unit), value(hi, unit))
}

func newString(vals []float64, unit string, ratio float64) string {
	if len(vals) == 1 {
		return fmt.Sprintf("%s (%.2f×)", value(vals[0], unit), ratio)
	}
	return fmt.Sprintf("median %s of %d runs (%.2f×)", value(permtest.Median(vals), unit), len(vals), ratio)
}

// amount is a floor as the gate's text says it: "0.2s", "0.5 cpu-s".
func amount(v float64, unit string) string {
	if unit == "s" {
		return fmt.Sprintf("%gs", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

func value(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.3fs", v)
	case "requests":
		return fmt.Sprintf("%.0f requests", v)
	default:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
}
