package diff

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/paired"
)

// TimingMethod is how a diff judged the metrics that depend on the machine
// (latencies, Karpenter's CPU, memory and API calls).
type TimingMethod string

// The methods.
const (
	// Paired: against a reference arm run interleaved with the candidate
	// in the same invocation on the same cluster (pkg/paired).
	Paired TimingMethod = "paired"
	// Unchanged: nothing recorded differs (inputs, Karpenter build and
	// settings, Kubernetes), so a reference arm would be the candidate run
	// twice; the machine-dependent metrics are not compared and the
	// machine-independent checks decide.
	Unchanged TimingMethod = "unchanged"
	// Recorded: against the baseline's recorded runs (another machine's
	// numbers, unpaired), the fallback when no reference arm can run.
	Recorded TimingMethod = "recorded"
)

// Timing says how the machine-dependent metrics were judged, and why.
type Timing struct {
	Method TimingMethod `json:"method"`
	// Reason says why this method: for Recorded, why no reference arm
	// could run; for Unchanged, what was found equal.
	Reason string `json:"reason"`
	// Replayed says the reference arm applied the baseline's recorded
	// inputs, not the scenario's (Paired, when the scenario changed).
	Replayed bool `json:"replayed,omitempty"`
	// Reference and Candidate name the arms' Karpenter builds (Paired).
	Reference string `json:"reference,omitempty"`
	Candidate string `json:"candidate,omitempty"`
	// Pairs is the blocks run (one reference and one candidate run
	// each); MinPairs the fewest at which a regression can be declared,
	// MaxPairs the cap.
	Pairs    int `json:"pairs,omitempty"`
	MinPairs int `json:"minPairs,omitempty"`
	MaxPairs int `json:"maxPairs,omitempty"`
	// Alpha is the family-wise false-alarm rate over every metric and
	// look; Margin the default ratio below which a metric reads
	// no-regression (each metric's own is PairedMetric.Margin);
	// Confidence the intervals' level.
	Alpha      float64 `json:"alpha,omitempty"`
	Margin     float64 `json:"margin,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	// Metrics are the paired tests, one per metric.
	Metrics []PairedMetric `json:"metrics,omitempty"`
	// Excluded names the metrics not tested, with why.
	Excluded []string `json:"excluded,omitempty"`
	// Stopped says why the pairing ended before its metrics were decided
	// (the cap, or a machine-independent regression found first).
	Stopped string `json:"stopped,omitempty"`
}

// PairedMetric is one metric's paired test.
type PairedMetric struct {
	Path string `json:"path"`
	Unit string `json:"unit"`
	// Ratio is candidate over reference (the geometric mean of the
	// pairs' ratios); Lo and Hi bound it at Timing.Confidence, 0 where
	// the pairs are too few to bound it.
	Ratio float64 `json:"ratio"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	// Reference and Candidate are the arms' geometric means, in Unit.
	Reference float64 `json:"reference"`
	Candidate float64 `json:"candidate"`
	// P is the one-sided p-value, AdjustedP after the joint adjustment across the metrics (pkg/paired).
	P         float64 `json:"p"`
	AdjustedP float64 `json:"adjustedP"`
	// Decision is regressed, no-regression (the interval below Margin)
	// or undecided.
	Decision paired.Decision `json:"decision"`
	Margin   float64         `json:"margin"`
}

// String is "pod-ready p50 1.31× [1.18, 1.46]".
func (m PairedMetric) String() string {
	hi := "∞"
	if m.Hi > 0 {
		hi = fmt.Sprintf("%.2f", m.Hi)
	}
	return fmt.Sprintf("%s %.2f× [%.2f, %s]", m.Path, m.Ratio, m.Lo, hi)
}

// PairedSamples are the paired test's input: each machine-dependent
// metric tested by verification, with the value of every reference and
// candidate run (refs[i] and cands[i] are block i). A metric some run
// lacks, or with a value that is not positive, is excluded and named;
// the scale-in's metrics are left out without a word where no run had a
// scale-in (a scenario without one).
func PairedSamples(refs, cands []*fingerprint.Fingerprint) (ms []paired.Metric, excluded []string) {
	scaleIn := slices.ContainsFunc(slices.Concat(refs, cands), func(f *fingerprint.Fingerprint) bool { return f.Disruption != nil })
	for _, m := range fingerprint.RunMetrics {
		if m.Untested || (m.ScaleIn && !scaleIn) {
			continue
		}
		// No-regression below the metric's gate: a latency 1.1×,
		// Karpenter's usage 1.5× ("far more").
		x := paired.Metric{Name: m.Path, Unit: m.Unit, Margin: Gate(m)}
		why := ""
		for i := range refs {
			r, rok := m.Of(refs[i])
			c, cok := m.Of(cands[i])
			switch {
			case !rok || !cok:
				why = fmt.Sprintf("pair %d has no value", i+1)
			case !(r > 0) || !(c > 0):
				why = fmt.Sprintf("pair %d has a value that is not positive (%g, %g)", i+1, r, c)
			}
			if why != "" {
				break
			}
			x.Ref, x.Cand = append(x.Ref, r), append(x.Cand, c)
		}
		if why != "" {
			excluded = append(excluded, m.Path+": "+why)
			continue
		}
		ms = append(ms, x)
	}
	return ms, excluded
}

// PairedTiming is a paired result as a diff reports it.
func PairedTiming(res *paired.Result, reference, candidate string, excluded []string) *Timing {
	t := &Timing{Method: Paired, Reference: reference, Candidate: candidate, Pairs: res.Pairs,
		MinPairs: res.MinPairs, MaxPairs: res.MaxPairs, Alpha: res.Alpha, Margin: res.Margin,
		Confidence: res.Confidence, Excluded: excluded,
		Reason: fmt.Sprintf("the candidate (%s) and the reference (%s) ran interleaved on this cluster, A B B A", candidate, reference)}
	for _, m := range res.Metrics {
		t.Metrics = append(t.Metrics, PairedMetric{Path: m.Name, Unit: m.Unit, Ratio: round3(m.Ratio), Lo: bound(m.Lo), Hi: bound(m.Hi),
			Reference: m.RefMean, Candidate: m.CandMean, P: m.P, AdjustedP: m.AdjustedP, Decision: m.Decision, Margin: m.Margin})
	}
	return t
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// bound is an interval's end for JSON: 0 where it is unbounded.
func bound(x float64) float64 {
	if math.IsInf(x, 0) || x == 0 {
		return 0
	}
	return round3(x)
}

// Decided reports the metrics in d, by decision.
func (t *Timing) Decided(d paired.Decision) []string {
	var out []string
	for _, m := range t.Metrics {
		if m.Decision == d {
			out = append(out, m.Path)
		}
	}
	return out
}

// Summary is the timing judgement in one line, for every report format.
func (t *Timing) Summary() string {
	switch t.Method {
	case Paired:
		var parts []string
		for _, m := range t.Metrics {
			if m.Decision != paired.NoRegression {
				parts = append(parts, fmt.Sprintf("%s %s", m, m.Decision))
			}
		}
		s := fmt.Sprintf("machine-dependent metrics paired with the reference over %d pair(s) (α %.3g; no-regression below %.2f× for a latency, %.2f× for Karpenter's usage): ", t.Pairs, t.Alpha, TimingGate, UsageGate)
		if len(parts) == 0 {
			s += "every metric below its margin"
		} else {
			s += strings.Join(parts, "; ")
		}
		if t.Stopped != "" {
			s += "; " + t.Stopped
		}
		return s
	case Unchanged:
		return "machine-dependent metrics not compared: " + t.Reason
	default:
		return "machine-dependent metrics compared with the baseline's recorded runs (not paired): " + t.Reason
	}
}

// CompareTiming is Compare with the machine-dependent metrics judged as t
// says: the selection, zones and outcomes against the baseline as
// Compare does; for Paired a deviation per regressed metric (and per
// undecided one whose ratio is past its gate); for Unchanged none. For
// Recorded use Compare and set Timing.
func CompareTiming(b *fingerprint.Baseline, rules Rules, fp *fingerprint.Fingerprint, t *Timing) *Diff {
	d := &Diff{Scenario: b.Scenario, Timing: t}
	d.static(b, rules, fp)
	if t.Method == Paired {
		d.paired(t)
	}
	sort.SliceStable(d.Deviations, func(i, j int) bool { return d.Deviations[i].Path < d.Deviations[j].Path })
	return d
}

// CompareStatic is the machine-independent part of Compare alone: the
// selection, cost, zones and outcomes.
func CompareStatic(b *fingerprint.Baseline, rules Rules, fp *fingerprint.Fingerprint) *Diff {
	d := &Diff{Scenario: b.Scenario}
	d.static(b, rules, fp)
	return d
}

func (d *Diff) paired(t *Timing) {
	gates := map[string]float64{}
	for _, m := range fingerprint.RunMetrics {
		gates[m.Path] = Gate(m)
	}
	for _, m := range t.Metrics {
		sev, rule := Tolerated, ""
		switch {
		case m.Decision == paired.Regressed:
			sev = Regression
			rule = fmt.Sprintf("paired with the reference in this run: slower by an exact sign-flip test over %d pair(s), adjusted p = %.3g across the metrics (family α %.3g), and the %.0f%% interval excludes 1", t.Pairs, m.AdjustedP, t.Alpha, 100*t.Confidence)
		case m.Decision == paired.Undecided && m.Ratio >= gates[m.Path]:
			rule = fmt.Sprintf("paired with the reference in this run: %.2f× is past the %.2f× gate but undecided after %d pair(s) (adjusted p = %.3g; at least %d pairs can declare a regression, the cap is %d)", m.Ratio, gates[m.Path], t.Pairs, m.AdjustedP, t.MinPairs, t.MaxPairs)
		default:
			continue
		}
		d.Deviations = append(d.Deviations, Deviation{Path: m.Path, Severity: sev, Rule: rule, Ratio: m.Ratio,
			Baseline: fmt.Sprintf("reference %s (geometric mean of %d runs)", value(m.Reference, m.Unit), t.Pairs),
			Observed: fmt.Sprintf("candidate %s (%s)", value(m.Candidate, m.Unit), strings.TrimPrefix(m.String(), m.Path+" "))})
	}
}
