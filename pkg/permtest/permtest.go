// Package permtest decides whether new runs are slower (or hungrier) than
// the recorded ones by an exact one-sided permutation test.
//
// Under the null hypothesis the N recorded and M new runs are exchangeable:
// drawn from one distribution, whatever its shape (Karpenter's batch windows
// and the scheduler's backoff make latencies skewed and lumpy, so no normal
// model is assumed). Every way of choosing which M of the N+M runs are the
// "new" ones is then equally likely; the p-value is the share of those
// choices whose statistic is at least the observed one. Rejecting at p ≤ α
// therefore raises a false alarm in at most a share α of verifications, for
// any distribution. The statistic combines several metrics (pod-ready and
// NodeClaim-ready percentiles, Karpenter's CPU, memory and API calls) as
// the largest of their standardised shifts, computed on the same choices,
// so the family of metrics shares one α without a Bonferroni penalty and
// their correlation is kept.
//
// The price of exactness: the smallest p-value is 1/C(N+M, M). One new run
// against ten recorded ones can never reach p ≤ 1% (1/11); three can
// (1/286). Feasible says so before anything is run.
package permtest

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Metric is one per-run quantity of the recorded and the new runs.
type Metric struct {
	Name     string
	Baseline []float64
	New      []float64
}

// MetricResult is one metric's part in a test.
type MetricResult struct {
	Name string
	// Ratio is the new runs' median over the recorded runs' median (0
	// when the recorded median is 0).
	Ratio float64
	// Z is the metric's standardised shift on the observed split: how far
	// the new runs' mean log value lies above the mean of all runs, in
	// standard deviations of all runs (0 for a metric that never varies).
	Z float64
	// P is the metric's own one-sided permutation p-value.
	P float64
}

// Result is a test's outcome.
type Result struct {
	// P is the p-value of the largest standardised shift across the metrics.
	P float64
	// MinP is the smallest p-value these run counts can give.
	MinP float64
	// Splits is how many choices of the new runs were evaluated;
	// Exact is true when they were all of them (else a fixed-seed sample).
	Splits  int
	Exact   bool
	Metrics []MetricResult
}

// MaxExact is the most splits enumerated; above it a fixed-seed sample of
// MaxExact splits estimates the p-value (Monte Carlo, still valid: the
// observed split is counted as one of the sample).
const MaxExact = 200_000

// Choose is C(n, k), saturating at math.MaxInt64.
func Choose(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return math.Round(c)
}

// Feasible reports whether n recorded and m new runs can reach p ≤ alpha.
func Feasible(n, m int, alpha float64) bool {
	return n > 0 && m > 0 && 1/Choose(n+m, m) <= alpha
}

// RunsFor is the fewest new runs (at least min) that give a test against n
// recorded runs room to reject at alpha: the observed choice may then share
// the largest statistic with leeway-1 others and still reach p ≤ alpha.
func RunsFor(n int, alpha float64, leeway, least int) int {
	for m := max(least, 1); m < 50; m++ {
		if Choose(n+m, m)*alpha >= float64(leeway) {
			return m
		}
	}
	return 50
}

// Test runs the test on metrics of one set of runs: every metric must have
// the same numbers of recorded and new runs (a metric that differs, or has
// none, is left out). Values are compared on a log scale (a slowdown is a
// ratio); values ≤ 0 are clamped to a millisecond.
func Test(metrics []Metric) Result {
	var ms []prepared
	n, m := -1, -1
	for _, x := range metrics {
		if len(x.Baseline) == 0 || len(x.New) == 0 {
			continue
		}
		if n < 0 {
			n, m = len(x.Baseline), len(x.New)
		}
		if len(x.Baseline) != n || len(x.New) != m {
			continue
		}
		ms = append(ms, prepare(x))
	}
	if len(ms) == 0 {
		return Result{P: 1, MinP: 1}
	}
	res := Result{MinP: 1 / Choose(n+m, m)}
	splits := newSplits(n+m, m)
	res.Exact, res.Splits = splits.exact, splits.count
	obs := make([]float64, len(ms))
	for k, p := range ms {
		obs[k] = p.z(p.observed)
	}
	tObs := slices.Max(obs)
	atLeast, atLeastK := 0, make([]int, len(ms))
	splits.each(func(chosen []int) {
		t := math.Inf(-1)
		for k, p := range ms {
			z := p.z(chosen)
			t = max(t, z)
			if z >= obs[k]-1e-12 {
				atLeastK[k]++
			}
		}
		if t >= tObs-1e-12 {
			atLeast++
		}
	})
	res.P = float64(atLeast) / float64(res.Splits)
	for k, p := range ms {
		res.Metrics = append(res.Metrics, MetricResult{Name: p.name, Ratio: p.ratio, Z: obs[k], P: float64(atLeastK[k]) / float64(res.Splits)})
	}
	return res
}

// prepared is a metric on the log scale, pooled.
type prepared struct {
	name     string
	pooled   []float64 // log values, recorded runs first
	observed []int     // the positions of the new runs
	mean, sd float64
	ratio    float64
}

func prepare(x Metric) prepared {
	p := prepared{name: x.Name}
	for _, v := range append(slices.Clone(x.Baseline), x.New...) {
		p.pooled = append(p.pooled, math.Log(max(v, 0.001)))
	}
	for i := range x.New {
		p.observed = append(p.observed, len(x.Baseline)+i)
	}
	for _, v := range p.pooled {
		p.mean += v
	}
	p.mean /= float64(len(p.pooled))
	for _, v := range p.pooled {
		p.sd += (v - p.mean) * (v - p.mean)
	}
	p.sd = math.Sqrt(p.sd / float64(len(p.pooled)))
	if b := Median(x.Baseline); b > 0 {
		p.ratio = Median(x.New) / b
	}
	return p
}

// z is the standardised shift of the runs at chosen positions: their mean
// log value above the pooled mean, in pooled standard deviations. The
// pooled mean and deviation are the same for every split, so z orders the
// splits as the new runs' mean does.
func (p prepared) z(chosen []int) float64 {
	if p.sd == 0 {
		return 0
	}
	s := 0.0
	for _, i := range chosen {
		s += p.pooled[i]
	}
	return (s/float64(len(chosen)) - p.mean) / p.sd
}

// Median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// splits enumerates the choices of m positions out of n, or samples them.
type splits struct {
	n, m  int
	exact bool
	count int
}

func newSplits(n, m int) splits {
	c := Choose(n, m)
	if c <= MaxExact {
		return splits{n: n, m: m, exact: true, count: int(c)}
	}
	return splits{n: n, m: m, count: MaxExact}
}

// each calls f with every choice (exact), or with the observed choice (the
// last m positions) and MaxExact-1 random ones from a fixed seed.
func (s splits) each(f func([]int)) {
	chosen := make([]int, s.m)
	if !s.exact {
		for i := range chosen {
			chosen[i] = s.n - s.m + i
		}
		f(chosen)
		rng := rand.New(rand.NewPCG(1, 2))
		for range s.count - 1 {
			copy(chosen, rng.Perm(s.n)[:s.m])
			f(chosen)
		}
		return
	}
	for i := range chosen {
		chosen[i] = i
	}
	for {
		f(chosen)
		i := s.m - 1
		for i >= 0 && chosen[i] == s.n-s.m+i {
			i--
		}
		if i < 0 {
			return
		}
		chosen[i]++
		for j := i + 1; j < s.m; j++ {
			chosen[j] = chosen[j-1] + 1
		}
	}
}
