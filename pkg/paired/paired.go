package paired

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrInput wraps the errors of Test and Schedule about their metrics.
var ErrInput = errors.New("paired: invalid input")

// ErrOption wraps the errors about an option's value.
var ErrOption = errors.New("paired: invalid option")

// Metric is one metric's paired samples: Ref[i] and Cand[i] come from the
// same block i (one reference and one candidate run, in either order).
type Metric struct {
	// Name identifies the metric, e.g. "pod-ready p50"; unique in a call.
	Name string
	// Unit is for formatting only: "s", "cpu-s", "MiB", "calls".
	Unit string
	// Ref and Cand are the reference and candidate arms' values, finite
	// and positive, of equal length.
	Ref, Cand []float64
	// Margin, when above 1, is this metric's margin instead of
	// WithMargin's: the ratio below which a regression does not matter
	// for it (Karpenter's usage matters at 1.5×, a latency at 1.1×).
	Margin float64
}

// Decision is a metric's verdict at one look.
type Decision string

// The verdicts.
const (
	// Regressed: the candidate is slower (larger) than the reference,
	// with the family-wise error control of the package doc.
	Regressed Decision = "regressed"
	// NoRegression: the ratio's interval lies wholly below the margin,
	// so any regression is smaller than the one that matters.
	NoRegression Decision = "no-regression"
	// Undecided: neither yet; more pairs may decide it.
	Undecided Decision = "undecided"
)

// MetricResult is one metric's outcome of a Test call.
type MetricResult struct {
	Name  string
	Unit  string
	Pairs int
	// Margin is the margin its no-regression decision used.
	Margin float64
	// Ratio is the point estimate of cand/ref: exp(mean of ln(cand/ref)),
	// the geometric mean of the pairs' ratios.
	Ratio float64
	// Lo and Hi bound the ratio: the two-sided interval at the configured
	// confidence, from inverting the sign-flip test. Lo is 0 and Hi is
	// +Inf when the pairs are too few for that confidence (2^-n above
	// (1−confidence)/2, i.e. fewer than 6 pairs at 0.95).
	Lo, Hi float64
	// RefMean and CandMean are the arms' geometric means, in Unit.
	RefMean, CandMean float64
	// P is the one-sided p-value of H0 "the candidate is not slower"
	// (the log ratio's centre ≤ 0) by the exact sign-flip test on the
	// mean log ratio.
	P float64
	// AdjustedP is P adjusted for the metrics of one Test call by the
	// joint step-down max-T test (see the package doc); a regression is declared when it is at most the look's
	// share of alpha (Result.LookAlpha).
	AdjustedP float64
	Decision  Decision
}

// String formats the ratio and its interval: "pod-ready p50 1.31× [1.18, 1.46]".
func (m MetricResult) String() string {
	return fmt.Sprintf("%s %s× [%s, %s]", m.Name, ratio(m.Ratio), ratio(m.Lo), ratio(m.Hi))
}

func ratio(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.2f", x)
}

// Result is the outcome of one Test call: one look at a verification.
type Result struct {
	// Metrics are in the order given to Test.
	Metrics []MetricResult
	// Pairs is the number of pairs per metric.
	Pairs int
	// Alpha is the family-wise false-alarm rate of the whole
	// verification (every metric, every look).
	Alpha float64
	// Look is this call's place among the planned looks (1-based), 0 when
	// Pairs is not a planned look: then no regression can be declared.
	Look int
	// Looks is the number of planned looks.
	Looks int
	// LookAlpha is this look's share of Alpha (0 when Look is 0).
	LookAlpha float64
	// MinPairs is the first look at which a regression can be declared
	// at all (see MinPairs); MaxPairs is the cap, the final look.
	MinPairs, MaxPairs int
	// Margin and Confidence are the settings the decisions used.
	Margin, Confidence float64
	// Exact is true when all 2^Pairs sign vectors were enumerated, false
	// for the fixed-seed Monte Carlo sample (above ExactPairs).
	Exact bool
}

// Undecided is the names of the undecided metrics.
func (r *Result) Undecided() []string { return r.names(Undecided) }

// Regressed is the names of the regressed metrics.
func (r *Result) Regressed() []string { return r.names(Regressed) }

func (r *Result) names(d Decision) []string {
	var out []string
	for _, m := range r.Metrics {
		if m.Decision == d {
			out = append(out, m.Name)
		}
	}
	return out
}

// NeedMore reports whether the verification should run another block:
// some metric is undecided, none is regressed and the cap is not reached.
//
// A regression stops the verification (fail fast): the error bound
// already paid for the look that declared it, and a later look that no
// longer rejects would not withdraw it. A caller that keeps running to
// decide the other metrics must keep that verdict. Stopping for any other
// reason is also safe for the false-alarm bound.
func (r *Result) NeedMore() bool {
	if r.Pairs >= r.MaxPairs || len(r.Regressed()) > 0 {
		return false
	}
	return len(r.Undecided()) > 0
}

// String is a table of the metrics with their p-values and verdicts.
func (r *Result) String() string {
	var b strings.Builder
	look := "not a planned look"
	if r.Look > 0 {
		look = fmt.Sprintf("look %d of %d, α %.3g of %.3g", r.Look, r.Looks, r.LookAlpha, r.Alpha)
	}
	fmt.Fprintf(&b, "%d pairs (%s; margin %.2f×, %.0f%% intervals)\n", r.Pairs, look, r.Margin, 100*r.Confidence)
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "  %-40s p=%.2g adj=%.2g  %-13s ref %.4g %s, cand %.4g %s\n",
			m.String(), m.P, m.AdjustedP, m.Decision, m.RefMean, m.Unit, m.CandMean, m.Unit)
	}
	return b.String()
}

// Test looks at one verification after len(Ref) pairs: every metric's
// sign-flip p-value and ratio interval, the joint adjustment across the
// metrics, and each metric's verdict:
//
//   - no-regression when Hi < the metric's margin (Metric.Margin, else
//     WithMargin's);
//   - otherwise regressed when this is a planned look, AdjustedP ≤ the
//     look's share of alpha and Lo > 1;
//   - otherwise undecided.
//
// It is an error when there are no metrics, when a metric's arms differ
// in length or are empty, when the metrics differ in their number of
// pairs, when a value is not finite and positive, when two metrics share a
// name, when the pairs exceed the cap (the schedule, and so the error
// bound, ends there), or when an option is invalid.
func Test(metrics []Metric, opts ...Option) (*Result, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	n, err := check(metrics, c.maxPairs)
	if err != nil {
		return nil, err
	}
	looks := c.schedule()
	r := &Result{Pairs: n, Alpha: c.alpha, MinPairs: c.minPairs(looks), MaxPairs: c.maxPairs,
		Margin: c.margin, Confidence: c.confidence, Exact: n <= ExactPairs}
	r.Looks = len(looks)
	for i, l := range looks {
		if l.Pairs == n {
			r.Look, r.LookAlpha = i+1, l.Alpha
		}
	}
	ds := make([][]float64, len(metrics))
	for i, m := range metrics {
		d := make([]float64, n)
		ds[i] = d
		sum, sumRef := 0.0, 0.0
		for j := range d {
			lr := math.Log(m.Ref[j])
			d[j] = math.Log(m.Cand[j]) - lr
			sum += d[j]
			sumRef += lr
		}
		f := signFlip(d, c.confidence)
		mean := sum / float64(n)
		margin := c.margin
		if m.Margin > 1 && !math.IsInf(m.Margin, 0) {
			margin = m.Margin
		}
		r.Metrics = append(r.Metrics, MetricResult{
			Name: m.Name, Unit: m.Unit, Pairs: n, Margin: margin,
			Ratio: math.Exp(mean), Lo: math.Exp(f.lo), Hi: math.Exp(f.hi),
			RefMean: math.Exp(sumRef / float64(n)), CandMean: math.Exp((sumRef + sum) / float64(n)),
			P: float64(f.atLeast) / float64(f.outOf),
		})
	}
	for i, adj := range stepDownMaxT(ds) {
		m := &r.Metrics[i]
		m.AdjustedP = adj
		switch {
		case m.Hi < m.Margin:
			m.Decision = NoRegression
		case r.Look > 0 && atMost(adj, r.LookAlpha) && m.Lo > 1:
			m.Decision = Regressed
		default:
			m.Decision = Undecided
		}
	}
	return r, nil
}

// check validates the metrics and returns their number of pairs.
func check(metrics []Metric, maxPairs int) (int, error) {
	if len(metrics) == 0 {
		return 0, fmt.Errorf("%w: no metrics", ErrInput)
	}
	n := len(metrics[0].Ref)
	seen := map[string]bool{}
	for _, m := range metrics {
		switch {
		case seen[m.Name]:
			return 0, fmt.Errorf("%w: two metrics named %q", ErrInput, m.Name)
		case len(m.Ref) != len(m.Cand):
			return 0, fmt.Errorf("%w: %q has %d reference and %d candidate values", ErrInput, m.Name, len(m.Ref), len(m.Cand))
		case len(m.Ref) == 0:
			return 0, fmt.Errorf("%w: %q has no pairs", ErrInput, m.Name)
		case len(m.Ref) != n:
			return 0, fmt.Errorf("%w: %q has %d pairs, %q %d", ErrInput, m.Name, len(m.Ref), metrics[0].Name, n)
		}
		seen[m.Name] = true
		for i := range m.Ref {
			for arm, v := range [2]float64{m.Ref[i], m.Cand[i]} {
				if !(v > 0) || math.IsInf(v, 1) {
					return 0, fmt.Errorf("%w: %q pair %d: %s value %v is not finite and positive", ErrInput, m.Name, i, [2]string{"reference", "candidate"}[arm], v)
				}
			}
		}
	}
	if n > maxPairs {
		return 0, fmt.Errorf("%w: %d pairs exceed the cap of %d (WithMaxPairs): the look schedule and its error bound end there", ErrInput, n, maxPairs)
	}
	return n, nil
}
