package paired

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// The simulation's machine: every run's value is its metric's base times
// lognormal noise with a CV of 10%, times the block's machine factor,
// lognormal with a CV of 20% and shared by both arms (and all metrics) of
// the block, as a slow or busy machine would be.
const (
	runCV     = 0.10
	machineCV = 0.20
)

// verification is one simulated sequential verification's outcome.
type verification struct {
	pairs     int        // pairs used when it stopped
	decisions []Decision // per metric, at the stop
	regressed []bool     // per metric: declared regressed at the stop
	cleared   int        // metrics "no-regression" at the stop
	// lows and highs count the metrics whose final interval lies wholly
	// above (below) the true ratio, at the cap.
	above, below int
	atCap        bool
}

// simulate runs verifications of len(ratios) metrics whose candidate is
// ratios[j] times the reference, each up to the cap: a block, a Test
// call, and another block while NeedMore. Each verification has its own
// seeded stream, so the outcome does not depend on the workers' timing.
func simulate(t *testing.T, ratios []float64, runs int, seed uint64, opts ...Option) []verification {
	t.Helper()
	c, err := newConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]verification, runs)
	work := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var failure error
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range work {
				v, err := verify(ratios, c.maxPairs, rand.New(rand.NewPCG(seed, uint64(i))), opts)
				if err != nil {
					once.Do(func() { failure = err })
				}
				out[i] = v
			}
		})
	}
	for i := range runs {
		work <- i
	}
	close(work)
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	return out
}

func verify(ratios []float64, maxPairs int, rng *rand.Rand, opts []Option) (verification, error) {
	sRun := math.Sqrt(math.Log1p(runCV * runCV))
	sMachine := math.Sqrt(math.Log1p(machineCV * machineCV))
	lognormal := func(s float64) float64 { return math.Exp(s*rng.NormFloat64() - s*s/2) }
	ms := make([]Metric, len(ratios))
	for j := range ms {
		ms[j].Name = fmt.Sprintf("metric %d", j)
	}
	for n := 1; n <= maxPairs; n++ {
		machine := lognormal(sMachine)
		for j := range ms {
			base := 10 + float64(j)
			ms[j].Ref = append(ms[j].Ref, base*machine*lognormal(sRun))
			ms[j].Cand = append(ms[j].Cand, ratios[j]*base*machine*lognormal(sRun))
		}
		r, err := Test(ms, opts...)
		if err != nil {
			return verification{}, err
		}
		if r.NeedMore() {
			continue
		}
		v := verification{pairs: n, regressed: make([]bool, len(ms)), atCap: n == maxPairs}
		for j, m := range r.Metrics {
			v.decisions = append(v.decisions, m.Decision)
			v.regressed[j] = m.Decision == Regressed
			if m.Decision == NoRegression {
				v.cleared++
			}
			if m.Lo > ratios[j] {
				v.above++
			}
			if m.Hi < ratios[j] {
				v.below++
			}
		}
		return v, nil
	}
	panic("NeedMore past the cap")
}

// binomialBound is the most false alarms in runs verifications consistent
// with a rate of alpha: the mean plus three standard deviations (a check
// that is itself wrong about once in 700).
func binomialBound(runs int, alpha float64) int {
	mean := float64(runs) * alpha
	return int(math.Floor(mean + 3*math.Sqrt(mean*(1-alpha))))
}

func ones(m int) []float64 {
	r := make([]float64, m)
	for i := range r {
		r[i] = 1
	}
	return r
}

// Under the null (ratio 1 on all 12 metrics), at most a share alpha of
// verifications declares any regression: about 20 of 2000 at most are
// expected and the bound is 33 (α plus three binomial standard
// deviations). With the defaults the looks are at 10, 11 and 12 pairs;
// without any adjustment for the 12 metrics the rate would be about 11%
// (220), which the bound catches. TestSimulationPower counts the false
// alarms at a cap of 16 as well.
//
// The same runs check the intervals: at the cap each of the 95%
// interval's tails misses the true ratio in 2.5% of metrics (102/4096 at
// 12 pairs, by construction). A one-sided interval, or one at the wrong
// level, misses 5% on one side and 0% on the other.
func TestSimulationFalseAlarms(t *testing.T) {
	// A cap of 16 costs 4 s more under -race; measured once: 5 false
	// alarms in 1000 verifications, intervals missing 2.47% above and
	// 2.44% below.
	falseAlarms(t, 12, DefaultMaxPairs, 2000)
}

func falseAlarms(t *testing.T, metrics, maxPairs, runs int) {
	vs := simulate(t, ones(metrics), runs, 1, WithMaxPairs(maxPairs))
	alarms, pairs, allCleared, cleared, intervals, above, below := 0, 0, 0, 0, 0, 0, 0
	for _, v := range vs {
		cleared += v.cleared
		for _, r := range v.regressed {
			if r {
				alarms++
				break
			}
		}
		pairs += v.pairs
		if v.cleared == metrics {
			allCleared++
		}
		if v.atCap {
			intervals += metrics
			above += v.above
			below += v.below
		}
	}
	t.Logf("ratio 1, %d metrics, cap %d: false alarms %d of %d (%.2f%%), mean pairs %.2f, all metrics no-regression %.1f%% (each metric %.1f%%)",
		metrics, maxPairs, alarms, runs, 100*float64(alarms)/float64(runs), float64(pairs)/float64(runs),
		100*float64(allCleared)/float64(runs), 100*float64(cleared)/float64(runs*metrics))
	if bound := binomialBound(runs, DefaultAlpha); alarms > bound {
		t.Errorf("%d false alarms in %d verifications, more than %d (alpha %v)", alarms, runs, bound, DefaultAlpha)
	}
	t.Logf("%d intervals at the cap: %.2f%% wholly above the true ratio, %.2f%% wholly below", intervals,
		100*float64(above)/float64(intervals), 100*float64(below)/float64(intervals))
	for side, miss := range map[string]int{"above": above, "below": below} {
		if share := float64(miss) / float64(intervals); share < 0.015 || share > 0.035 {
			t.Errorf("%.2f%% of intervals lie wholly %s the true ratio, want 2.5%% ± 1%%", 100*share, side)
		}
	}
}

// A 1.25× regression on one metric of 12, with the false-alarm rate held
// at 1%. The target is to declare it in at least 95% of verifications.
//
// The simulation's metrics are independent (the machine factor cancels in
// each ratio), the joint test's worst case: each null metric adds its own
// extreme sign vectors. Measured (1000 verifications each, 2026-12-04):
// cap 12, 80.9% (Holm: 77%); cap 14, 92.0%; cap 16, 97.7% in 13.5 pairs
// on average (Holm: 97–98% in 14.9). So the default cap of 12 cannot meet
// the target; the test checks it at 16 and reports 12.
func TestSimulationPower(t *testing.T) {
	const metrics = 12
	ratios := ones(metrics)
	ratios[0] = 1.25
	for _, c := range []struct {
		cap, runs int
		check     bool
	}{{12, 2000, false}, {16, 1000, true}} {
		vs := simulate(t, ratios, c.runs, 2, WithMaxPairs(c.cap))
		found, alarms, pairs, cleared := 0, 0, 0, 0
		for _, v := range vs {
			if v.regressed[0] {
				found++
			}
			for _, r := range v.regressed[1:] {
				if r {
					alarms++
					break
				}
			}
			pairs += v.pairs
			if v.decisions[0] == NoRegression {
				cleared++
			}
		}
		power := float64(found) / float64(c.runs)
		t.Logf("1.25× on one of %d metrics, cap %d: power %.1f%%, mean pairs %.2f, false alarms on the others %d of %d",
			metrics, c.cap, 100*power, float64(pairs)/float64(c.runs), alarms, c.runs)
		if bound := binomialBound(c.runs, DefaultAlpha); alarms > bound {
			t.Errorf("cap %d: %d false alarms on the null metrics, more than %d", c.cap, alarms, bound)
		}
		// The regressed metric is never cleared: its interval would have
		// to end below 1.10 with the truth at 1.25.
		if cleared > 0 {
			t.Errorf("cap %d: the 1.25× regression was cleared in %d verifications", c.cap, cleared)
		}
		if c.check && power < 0.95 {
			t.Errorf("cap %d: power %.1f%% < 95%%", c.cap, 100*power)
		}
	}
}
