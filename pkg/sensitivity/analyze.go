package sensitivity

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/permtest"
)

// Runs are the measured runs of one scenario: the unchanged stack's in
// the order they ran (the pool baselines and null verifications are drawn
// from), and each slowdown's.
type Runs struct {
	Scenario string                     `json:"scenario"`
	Pool     []*fingerprint.Fingerprint `json:"pool"`
	Slowed   []SlowedRuns               `json:"slowed"`
}

// SlowedRuns are the runs made under one slowdown.
type SlowedRuns struct {
	Slowdown Slowdown                   `json:"slowdown"`
	Runs     []*fingerprint.Fingerprint `json:"runs"`
}

// Mode is how many runs verify: Fixed runs, or 0 for verify's default
// (one run, and as many more as the test needs when it is suspect).
type Mode struct {
	Name  string `json:"name"`
	Fixed int    `json:"fixed,omitempty"`
}

// Modes are the verify settings measured: the default and fixed repeats.
var Modes = []Mode{{Name: "auto"}, {Name: "repeat 3", Fixed: 3}, {Name: "repeat 5", Fixed: 5}}

// The null conditions: the unchanged stack, verified against baselines of
// random runs of the pool, or of the runs recorded first (what drifts
// during a session shows there).
const (
	Unchanged      = "unchanged"
	UnchangedLater = "unchanged, recorded first"
)

// Cell is one condition under one mode.
type Cell struct {
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Mode      string `json:"mode"`
	Trials    int    `json:"trials"`
	// Detected counts trials whose latencies or usage failed
	// verification (a false alarm under a null condition, a detection
	// under a slowdown); Failed those that failed for any reason.
	Detected int     `json:"detected"`
	Failed   int     `json:"failed"`
	Rate     float64 `json:"rate"`
	// MeanRuns is how many runs a verification took on average.
	MeanRuns float64 `json:"meanRuns"`
	// Realized is, under a slowdown, the slowed runs' median of the
	// target over the unchanged runs' (a delay does not always add its
	// whole self: Karpenter's lifecycle retries on a one-second backoff can
	// absorb part of a launch delay); 0 under a null condition.
	Realized float64 `json:"realized,omitempty"`
}

// Realized is the slowed runs' median of the slowdown's target over the
// pool's.
func Realized(pool, slowed []*fingerprint.Fingerprint, t Target) float64 {
	of := func(fps []*fingerprint.Fingerprint) float64 {
		var xs []float64
		for _, f := range fps {
			xs = append(xs, t.Metric(f.Timing))
		}
		return permtest.Median(xs)
	}
	if base := of(pool); base > 0 {
		return math.Round(of(slowed)/base*100) / 100
	}
	return 0
}

// Options say how the runs are resampled.
type Options struct {
	// Recorded is how many runs a baseline is made of (default 10, as
	// the committed baselines).
	Recorded int
	// Trials is how many resamples a cell gets (default 500).
	Trials int
	// Seed makes the resampling repeatable (default 1).
	Seed uint64
	// Rules are the scenario's verification rules.
	Rules diff.Rules
	// Modes default to Modes.
	Modes []Mode
}

// Analyze applies verification to resamples of the runs: every trial
// draws a baseline of Recorded runs from the pool and verifies runs of a
// condition against it, as `nodeprint verify` would with each mode.
func Analyze(r Runs, o Options) ([]Cell, error) {
	o.Recorded, o.Trials, o.Seed = cmp.Or(o.Recorded, 10), cmp.Or(o.Trials, 500), cmp.Or(o.Seed, 1)
	if o.Modes == nil {
		o.Modes = Modes
	}
	need := o.Recorded + maxRuns(o)
	if len(r.Pool) < need {
		return nil, fmt.Errorf("%s: %d unchanged runs; a baseline of %d and verifications of up to %d runs need %d", r.Scenario, len(r.Pool), o.Recorded, maxRuns(o), need)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5e5))
	var out []Cell
	for _, m := range o.Modes {
		type condition struct {
			name     string
			realized float64
			draw     func() (base, cand []*fingerprint.Fingerprint)
		}
		conds := []condition{
			{Unchanged, 0, func() ([]*fingerprint.Fingerprint, []*fingerprint.Fingerprint) {
				p := shuffled(rng, r.Pool)
				return p[:o.Recorded], p[o.Recorded:]
			}},
			{UnchangedLater, 0, func() ([]*fingerprint.Fingerprint, []*fingerprint.Fingerprint) {
				return r.Pool[:o.Recorded], shuffled(rng, r.Pool[o.Recorded:])
			}},
		}
		for _, s := range r.Slowed {
			conds = append(conds, condition{s.Slowdown.Name(), Realized(r.Pool, s.Runs, s.Slowdown.Target), func() ([]*fingerprint.Fingerprint, []*fingerprint.Fingerprint) {
				return shuffled(rng, r.Pool)[:o.Recorded], shuffled(rng, s.Runs)
			}})
		}
		for _, c := range conds {
			cell := Cell{Scenario: r.Scenario, Condition: c.name, Mode: m.Name, Realized: c.realized}
			runs := 0
			for range o.Trials {
				base, cand := c.draw()
				b, err := fingerprint.NewBaseline(r.Scenario, fingerprint.Provenance{}, base)
				if err != nil {
					return nil, fmt.Errorf("%s: a baseline of the pool's runs: %w", r.Scenario, err)
				}
				d, n, err := verifyRuns(b, o, m, cand)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", r.Scenario, c.name, err)
				}
				cell.Trials++
				runs += n
				if metricRegressed(d) {
					cell.Detected++
				}
				if d.Regressed() {
					cell.Failed++
				}
			}
			cell.Rate = float64(cell.Detected) / float64(cell.Trials)
			cell.MeanRuns = float64(runs) / float64(cell.Trials)
			out = append(out, cell)
		}
	}
	return out, nil
}

// verifyRuns is one verification of cand's first runs against b in mode m:
// its diff and how many runs it took.
func verifyRuns(b *fingerprint.Baseline, o Options, m Mode, cand []*fingerprint.Fingerprint) (*diff.Diff, int, error) {
	n := m.Fixed
	if n == 0 {
		d := diff.Compare(b, o.Rules, cand[0])
		if !d.Suspect() {
			return d, 1, nil
		}
		n = diff.ConfirmRuns(b.Runs, o.Rules)
	}
	if len(cand) < n {
		return nil, 0, fmt.Errorf("%d runs to verify with, %d needed", len(cand), n)
	}
	return diff.Compare(b, o.Rules, cand[0], cand[1:n]...), n, nil
}

func maxRuns(o Options) int {
	n := diff.ConfirmRuns(o.Recorded, o.Rules)
	for _, m := range o.Modes {
		n = max(n, m.Fixed)
	}
	return n
}

// metricRegressed says a latency or Karpenter's usage failed verification.
func metricRegressed(d *diff.Diff) bool {
	for _, x := range d.Deviations {
		if x.Severity == diff.Regression && (strings.HasPrefix(x.Path, "timing.") || strings.HasPrefix(x.Path, "karpenter.")) {
			return true
		}
	}
	return false
}

func shuffled(rng *rand.Rand, xs []*fingerprint.Fingerprint) []*fingerprint.Fingerprint {
	out := make([]*fingerprint.Fingerprint, len(xs))
	for i, j := range rng.Perm(len(xs)) {
		out[i] = xs[j]
	}
	return out
}
