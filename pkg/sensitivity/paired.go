package sensitivity

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/paired"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// Condition is one experiment of paired sensitivity: the candidate arm's
// Karpenter build (a Lever), whether the machine is kept busy for both
// arms, and the metric it should slow (none for an A/A condition).
type Condition struct {
	Name  string `json:"name"`
	Lever Lever  `json:"lever"`
	// Load keeps one core busy during both arms' runs.
	Load bool `json:"load,omitempty"`
	// Target is the metric the lever slows (fingerprint.RunMetrics'
	// path), "" for an A/A condition; Factor is the slowdown asked for.
	Target string  `json:"target,omitempty"`
	Factor float64 `json:"factor,omitempty"`
}

// Pair is one block of a pool: both arms' fingerprints and whether the
// reference ran first (verify.ReferenceFirst of the block's index).
type Pair struct {
	RefFirst bool                     `json:"refFirst"`
	Ref      *fingerprint.Fingerprint `json:"ref"`
	Cand     *fingerprint.Fingerprint `json:"cand"`
	// Seconds is the block's wall time, both runs and the switches.
	Seconds float64 `json:"seconds"`
}

// Pool is one scenario's pairs under one condition, run A B, B A, … on one
// cluster as paired verification runs them, but past any stop, so that
// verifications can be replayed from it.
type Pool struct {
	Scenario  string    `json:"scenario"`
	Condition Condition `json:"condition"`
	Pairs     []Pair    `json:"pairs"`
}

// PairedCell is what replaying paired verifications from one pool found.
type PairedCell struct {
	Scenario  string    `json:"scenario"`
	Condition Condition `json:"condition"`
	// Pool is the number of pairs replayed from; Trials the verifications.
	Pool   int `json:"pool"`
	Trials int `json:"trials"`
	// Realized is the target's ratio over the whole pool (the geometric
	// mean of its pairs' ratios), 0 for an A/A condition.
	Realized float64 `json:"realized,omitempty"`
	// Failed is the share of verifications that declared any metric
	// regressed: for a lever, the regression caught; for an A/A
	// condition, the false-alarm rate. Power is the share that declared
	// the target itself regressed before stopping (a verification stops
	// at its first regression, which may be another metric the lever
	// slows).
	Failed float64 `json:"failed"`
	Power  float64 `json:"power,omitempty"`
	// Regressed is, per metric, the share of verifications that declared
	// it regressed.
	Regressed map[string]float64 `json:"regressed"`
	// MeanPairs is the pairs a verification took on average; Minutes its
	// mean wall time (pairs × the pool's mean block time).
	MeanPairs float64 `json:"meanPairs"`
	Minutes   float64 `json:"minutes"`
	// Whole is the paired test of the pool's first cap pairs, once, as one
	// verification that never stopped early would read them.
	Whole string `json:"whole"`
}

// PairedOptions configure ReplayPaired.
type PairedOptions struct {
	// Trials is the number of verifications replayed (default 400).
	Trials int
	// MaxPairs caps each (default verify.DefaultMaxPairs).
	MaxPairs int
	// Seed makes the draws repeatable.
	Seed uint64
}

// ReplayPaired replays paired verifications of s from pool: each draws
// blocks one at a time, with replacement, from the pool's blocks of the
// same order (reference first or second, as verify.ReferenceFirst gives
// the block's index), and asks verify.PairedLook after each, stopping
// where the judge stops. The verifications share the pool's pairs: a rate
// is an estimate from len(pool.Pairs) pairs, not from Trials independent
// verifications.
func ReplayPaired(s *scenario.Scenario, pool Pool, o PairedOptions) (PairedCell, error) {
	o.Trials = cmp.Or(o.Trials, 400)
	o.MaxPairs = cmp.Or(o.MaxPairs, verify.DefaultMaxPairs)
	byOrder := map[bool][]Pair{}
	for _, p := range pool.Pairs {
		byOrder[p.RefFirst] = append(byOrder[p.RefFirst], p)
	}
	if len(byOrder[true]) < 2 || len(byOrder[false]) < 2 {
		return PairedCell{}, fmt.Errorf("%s, %s: a pool needs at least 2 blocks of each order, has %d reference-first and %d candidate-first",
			pool.Scenario, pool.Condition.Name, len(byOrder[true]), len(byOrder[false]))
	}
	c := PairedCell{Scenario: pool.Scenario, Condition: pool.Condition, Pool: len(pool.Pairs), Trials: o.Trials, Regressed: map[string]float64{}}
	var pairs, failed, power int
	for t := range o.Trials {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(t)))
		res, n, err := replayOne(s, byOrder, o.MaxPairs, rng)
		if err != nil {
			return PairedCell{}, fmt.Errorf("%s, %s: %w", pool.Scenario, pool.Condition.Name, err)
		}
		pairs += n
		reg := res.Regressed()
		if len(reg) > 0 {
			failed++
		}
		if slices.Contains(reg, pool.Condition.Target) {
			power++
		}
		for _, m := range reg {
			c.Regressed[m]++
		}
	}
	for m := range c.Regressed {
		c.Regressed[m] /= float64(o.Trials)
	}
	c.Failed = float64(failed) / float64(o.Trials)
	c.MeanPairs = float64(pairs) / float64(o.Trials)
	c.Minutes = c.MeanPairs * meanSeconds(pool.Pairs) / 60
	if pool.Condition.Target != "" {
		c.Power = float64(power) / float64(o.Trials)
		c.Realized = realized(pool.Pairs, pool.Condition.Target)
	}
	whole, err := wholePool(s, pool.Pairs, o.MaxPairs, pool.Condition.Target)
	if err != nil {
		return PairedCell{}, fmt.Errorf("%s, %s: %w", pool.Scenario, pool.Condition.Name, err)
	}
	c.Whole = whole
	return c, nil
}

// replayOne is one verification: blocks until the judge would stop.
func replayOne(s *scenario.Scenario, byOrder map[bool][]Pair, maxPairs int, rng *rand.Rand) (*paired.Result, int, error) {
	var refs, cands []*fingerprint.Fingerprint
	for b := 0; ; b++ {
		from := byOrder[verify.ReferenceFirst(b)]
		p := from[rng.IntN(len(from))]
		refs, cands = append(refs, p.Ref), append(cands, p.Cand)
		res, excluded, err := verify.PairedLook(s, maxPairs, refs, cands)
		if err != nil {
			return nil, 0, err
		}
		if res == nil {
			return nil, 0, fmt.Errorf("no machine-dependent metric in every pair: %v", excluded)
		}
		if !res.NeedMore() {
			return res, b + 1, nil
		}
	}
}

// wholePool tests the pool's first maxPairs blocks once and says what the
// target (every regressed metric for an A/A pool) read.
func wholePool(s *scenario.Scenario, pairs []Pair, maxPairs int, target string) (string, error) {
	var refs, cands []*fingerprint.Fingerprint
	for _, p := range pairs[:min(len(pairs), maxPairs)] {
		refs, cands = append(refs, p.Ref), append(cands, p.Cand)
	}
	res, _, err := verify.PairedLook(s, maxPairs, refs, cands)
	if err != nil || res == nil {
		return "", err
	}
	for _, m := range res.Metrics {
		if m.Name == target {
			return m.String(), nil
		}
	}
	if reg := res.Regressed(); len(reg) > 0 {
		return fmt.Sprintf("regressed: %v", reg), nil
	}
	return "nothing regressed", nil
}

// realized is the geometric mean of the pairs' candidate/reference
// ratios of metric path.
func realized(pairs []Pair, path string) float64 {
	m, ok := RunMetric(path)
	if !ok {
		return 0
	}
	sum, n := 0.0, 0
	for _, p := range pairs {
		r, rok := m.Of(p.Ref)
		c, cok := m.Of(p.Cand)
		if rok && cok && r > 0 && c > 0 {
			sum += math.Log(c / r)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return math.Exp(sum / float64(n))
}

// RunMetric is the per-run metric of path.
func RunMetric(path string) (fingerprint.RunMetric, bool) {
	for _, m := range fingerprint.RunMetrics {
		if m.Path == path {
			return m, true
		}
	}
	return fingerprint.RunMetric{}, false
}

func meanSeconds(pairs []Pair) float64 {
	sum := 0.0
	for _, p := range pairs {
		sum += p.Seconds
	}
	return sum / float64(len(pairs))
}
