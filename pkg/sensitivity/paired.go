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
	// condition, false alarms, but as a rate biased up by the pool's chance
	// lean (see ReplayPaired; Disjoint and Lean judge an A/A pool). Power is the share that declared
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
	// Disjoint is the verifications the pool holds end to end, each on
	// its own blocks in the pool's order, stopping where the judge stops
	// (a last one the pool cannot finish is dropped); DisjointFailed how
	// many of them failed. Unlike Failed, these are independent
	// verifications, and few.
	Disjoint       int `json:"disjoint"`
	DisjointFailed int `json:"disjointFailed"`
	// Lean is, for an A/A pool, how often chance alone leans a pool this
	// far towards a slower candidate: the smallest adjusted p-value of the
	// judge's joint test of all its blocks in one look (see lean). Small
	// (below LeanLevel) when the candidate arm differs from the reference
	// for a reason of its own; under exchangeable arms it is below
	// LeanLevel in LeanLevel of pools. -1 for a lever.
	Lean float64 `json:"lean"`
	// Leaning is that metric with its ratio and interval
	// ("timing.podReady.p50 1.04× [0.97, 1.12]"): a bias of the candidate
	// arm inside the interval is one the pool cannot tell from none.
	Leaning string `json:"leaning,omitempty"`
}

// LeanLevel is the Lean below which an A/A pool's arms are read as not
// exchangeable: the harness or the machine favours one arm.
const LeanLevel = 0.05

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
// verifications, and it follows the pool's own chance lean. Drawn with
// replacement, a replay repeats blocks, so it reads a pool's lean as
// firmer than independent blocks would: under an A/A condition the rate
// is biased up and says little alone (on simulated exchangeable pools of
// 16 blocks, 7% of pools replay at 4% or more while no verification of
// them fails). Lean is an A/A pool's own test of how far it leans, and
// Disjoint counts the independent verifications the pool holds.
func ReplayPaired(s *scenario.Scenario, pool Pool, o PairedOptions) (PairedCell, error) {
	o.Trials = cmp.Or(o.Trials, 400)
	o.MaxPairs = cmp.Or(o.MaxPairs, verify.DefaultMaxPairs)
	wrap := func(err error) error { return fmt.Errorf("%s, %s: %w", pool.Scenario, pool.Condition.Name, err) }
	r, err := replay(s, pool.Pairs, o, pool.Condition.Target)
	if err != nil {
		return PairedCell{}, wrap(err)
	}
	c := PairedCell{Scenario: pool.Scenario, Condition: pool.Condition, Pool: len(pool.Pairs), Trials: o.Trials,
		Regressed: r.regressed, Failed: r.failed, MeanPairs: r.meanPairs, Lean: -1}
	c.Minutes = c.MeanPairs * meanSeconds(pool.Pairs) / 60
	if pool.Condition.Target != "" {
		c.Power = r.power
		c.Realized = realized(pool.Pairs, pool.Condition.Target)
	} else if c.Lean, c.Leaning, err = lean(s, pool.Pairs); err != nil {
		return PairedCell{}, wrap(err)
	}
	if c.Whole, err = wholePool(s, pool.Pairs, o.MaxPairs, pool.Condition.Target); err != nil {
		return PairedCell{}, wrap(err)
	}
	if c.Disjoint, c.DisjointFailed, err = disjoint(s, pool.Pairs, o.MaxPairs); err != nil {
		return PairedCell{}, wrap(err)
	}
	return c, nil
}

// replayed is what o.Trials replayed verifications of some pairs read.
type replayed struct {
	failed, power, meanPairs float64
	regressed                map[string]float64
}

// replay replays o.Trials verifications from pairs (see ReplayPaired).
func replay(s *scenario.Scenario, blocks []Pair, o PairedOptions, target string) (replayed, error) {
	byOrder := map[bool][]Pair{}
	for _, p := range blocks {
		byOrder[p.RefFirst] = append(byOrder[p.RefFirst], p)
	}
	if len(byOrder[true]) < 2 || len(byOrder[false]) < 2 {
		return replayed{}, fmt.Errorf("a pool needs at least 2 blocks of each order, has %d reference-first and %d candidate-first",
			len(byOrder[true]), len(byOrder[false]))
	}
	var pairs, failed, power int
	regressed := map[string]int{}
	for t := range o.Trials {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(t)))
		res, n, err := replayOne(s, byOrder, o.MaxPairs, rng)
		if err != nil {
			return replayed{}, err
		}
		pairs += n
		reg := res.Regressed()
		if len(reg) > 0 {
			failed++
		}
		if slices.Contains(reg, target) {
			power++
		}
		for _, m := range reg {
			regressed[m]++
		}
	}
	trials := float64(o.Trials)
	r := replayed{failed: float64(failed) / trials, power: float64(power) / trials, meanPairs: float64(pairs) / trials, regressed: map[string]float64{}}
	for m, n := range regressed {
		r.regressed[m] = float64(n) / trials
	}
	return r, nil
}

// lean is an A/A pool's own test of its arms' exchangeability: the
// joint sign-flip test of every block (the judge's test, all pairs in
// one look, no share of alpha spent), whose smallest adjusted p-value is
// the share of the pool's 2^n arm swaps (each block's arms swapped or
// not, what the pool could equally have been had the arms been the same)
// in which some metric leans towards a slower candidate at least as far.
// It also gives that metric with its ratio and interval: the candidate
// bias the pool cannot tell from none.
//
// Only a lean that could raise a false alarm counts: a metric the pool's
// own test clears (its interval wholly below its margin, such as a peak
// resident set 1.01× [1.01, 1.02] under the 1.5× usage margin) is never
// declared regressed, since clearing wins over significance. With every
// metric cleared the lean is 1, and the string says so.
func lean(s *scenario.Scenario, pairs []Pair) (float64, string, error) {
	res, err := look(s, max(len(pairs), verify.DefaultMaxPairs), pairs)
	if err != nil {
		return 0, "", err
	}
	var most *paired.MetricResult
	for i, m := range res.Metrics {
		if m.Decision != paired.NoRegression && (most == nil || m.AdjustedP < most.AdjustedP) {
			most = &res.Metrics[i]
		}
	}
	if most == nil {
		return 1, fmt.Sprintf("every metric cleared below its margin at %d pairs", res.Pairs), nil
	}
	return most.AdjustedP, most.String(), nil
}

// disjoint runs the pool's blocks in order as back-to-back verifications,
// each starting on a reference-first block as verify's first block is,
// and counts them and their failures; a last verification the pool
// cannot finish is dropped.
func disjoint(s *scenario.Scenario, pairs []Pair, maxPairs int) (n, failed int, err error) {
	for start := 0; start < len(pairs); {
		if !pairs[start].RefFirst {
			start++
			continue
		}
		res, used, err := verification(s, maxPairs, func(b int) (Pair, bool) {
			if start+b < len(pairs) {
				return pairs[start+b], true
			}
			return Pair{}, false
		})
		if err != nil || res == nil {
			return n, failed, err
		}
		n++
		if len(res.Regressed()) > 0 {
			failed++
		}
		start += used
	}
	return n, failed, nil
}

// replayOne is one verification: blocks until the judge would stop.
func replayOne(s *scenario.Scenario, byOrder map[bool][]Pair, maxPairs int, rng *rand.Rand) (*paired.Result, int, error) {
	return verification(s, maxPairs, func(b int) (Pair, bool) {
		from := byOrder[verify.ReferenceFirst(b)]
		return from[rng.IntN(len(from))], true
	})
}

// verification is one verification as the judge runs it: block b from
// next, a look after each, until the judge stops; a nil result when next
// runs out first.
func verification(s *scenario.Scenario, maxPairs int, next func(b int) (Pair, bool)) (*paired.Result, int, error) {
	var blocks []Pair
	for b := 0; ; b++ {
		p, ok := next(b)
		if !ok {
			return nil, b, nil
		}
		blocks = append(blocks, p)
		res, err := look(s, maxPairs, blocks)
		if err != nil {
			return nil, 0, err
		}
		if !res.NeedMore() {
			return res, b + 1, nil
		}
	}
}

// look is the judge's look at blocks (verify.PairedLook); an error when
// no machine-dependent metric is in every pair.
func look(s *scenario.Scenario, maxPairs int, blocks []Pair) (*paired.Result, error) {
	refs, cands := make([]*fingerprint.Fingerprint, len(blocks)), make([]*fingerprint.Fingerprint, len(blocks))
	for i, p := range blocks {
		refs[i], cands[i] = p.Ref, p.Cand
	}
	res, excluded, err := verify.PairedLook(s, maxPairs, refs, cands)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("no machine-dependent metric in every pair: %v", excluded)
	}
	return res, nil
}

// wholePool tests the pool's first maxPairs blocks once and says what the
// target (every regressed metric for an A/A pool) read; a pool with no
// metric in every pair is an error, as in look.
func wholePool(s *scenario.Scenario, pairs []Pair, maxPairs int, target string) (string, error) {
	res, err := look(s, maxPairs, pairs[:min(len(pairs), maxPairs)])
	if err != nil {
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

// PoolAA joins every A/A condition's pools of one scenario (two or more
// pools of the same condition name) into one pool, named "NAME, N pools":
// blocks of the same arms on the same machine, so their lean is tested
// with more blocks (a narrower interval on the candidate's bias) and
// they hold more independent verifications. A pool joins only when it
// starts reference-first and has an even number of blocks, so that the
// join keeps verify's A B / B A alternation.
func PoolAA(pools []Pool) []Pool {
	type key struct{ scenario, condition string }
	var order []key
	joined := map[key][]Pool{}
	for _, p := range pools {
		if p.Condition.Target != "" || len(p.Pairs)%2 != 0 || len(p.Pairs) == 0 || !p.Pairs[0].RefFirst {
			continue
		}
		k := key{p.Scenario, p.Condition.Name}
		if _, ok := joined[k]; !ok {
			order = append(order, k)
		}
		joined[k] = append(joined[k], p)
	}
	var out []Pool
	for _, k := range order {
		ps := joined[k]
		if len(ps) < 2 {
			continue
		}
		j := Pool{Scenario: k.scenario, Condition: ps[0].Condition}
		j.Condition.Name = fmt.Sprintf("%s, %d pools", k.condition, len(ps))
		for _, p := range ps {
			j.Pairs = append(j.Pairs, p.Pairs...)
		}
		out = append(out, j)
	}
	return out
}
