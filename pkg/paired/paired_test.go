package paired

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fromLogRatios is a metric whose pairs have the given log ratios
// (candidate over reference), with references that vary from block to
// block as a machine would.
func fromLogRatios(name string, d ...float64) Metric {
	m := Metric{Name: name, Unit: "s"}
	for i, x := range d {
		ref := 10 + float64(i%3)
		m.Ref = append(m.Ref, ref)
		m.Cand = append(m.Cand, ref*math.Exp(x))
	}
	return m
}

// bruteForce is the definition, independently: the share of the 2^n sign
// vectors s whose Σ s_i·d_i is at least the observed Σ d_i, and the
// interval's bounds as the k-th smallest and largest of all nonempty subset
// means, sorted.
func bruteForce(d []float64, conf float64) (p, lo, hi float64) {
	obs, scale := 0.0, 0.0
	for _, x := range d {
		obs += x
		scale += math.Abs(x)
	}
	atLeast := 0
	var means []float64
	for mask := range 1 << len(d) {
		flipped, sub, size := 0.0, 0.0, 0
		for i, x := range d {
			if mask>>i&1 == 1 {
				flipped -= x
				sub += x
				size++
			} else {
				flipped += x
			}
		}
		if flipped >= obs-1e-9*scale {
			atLeast++
		}
		if size > 0 {
			means = append(means, sub/float64(size))
		}
	}
	slices.Sort(means)
	lo, hi = math.Inf(-1), math.Inf(1)
	if k := int(math.Floor((1 - conf) / 2 * float64(int(1)<<len(d)))); k > 0 {
		lo, hi = means[k-1], means[len(means)-k]
	}
	return float64(atLeast) / float64(int(1)<<len(d)), math.Exp(lo), math.Exp(hi)
}

// Hand-computed p-values. n=3, d = (0.1, 0.2, −0.05): of the 8 sign
// vectors, the observed (sum 0.25) and the one flipping −0.05 (0.35) are
// at least 0.25, so p = 2/8. n=4, d = (0.3, 0.1, −0.2, 0.4): flipping ∅,
// {−0.2} or {0.1, −0.2} keeps the sum at least 0.6, p = 3/16. Ties count
// against the candidate: d = (ln 2, −ln 2, ln 4), flipping {ln 2, −ln 2}
// leaves the sum equal, p = 3/8 (2/8 if ties were dropped).
func TestExactPValues(t *testing.T) {
	ln2 := math.Log(2)
	for _, c := range []struct {
		name string
		d    []float64
		want float64
	}{
		{"n=3", []float64{0.1, 0.2, -0.05}, 2.0 / 8},
		{"n=4", []float64{0.3, 0.1, -0.2, 0.4}, 3.0 / 16},
		{"n=4 all slower", []float64{0.3, 0.1, 0.2, 0.4}, 1.0 / 16},
		{"n=3 all faster", []float64{-0.3, -0.1, -0.2}, 1},
		{"n=3 tie", []float64{ln2, -ln2, 2 * ln2}, 3.0 / 8},
		// The same at 6 pairs, where the interval is computed too: ∅,
		// {−0.1} and the tie {0.1, −0.1}.
		{"n=6 tie", []float64{0.1, -0.1, 1, 1.1, 1.2, 1.3}, 3.0 / 64},
		{"n=2 no change", []float64{0, 0}, 1},
		{"n=1 slower", []float64{0.5}, 1.0 / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Test([]Metric{fromLogRatios("x", c.d...)})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Metrics[0].P; math.Abs(got-c.want) > 1e-15 {
				t.Errorf("P = %v, want %v", got, c.want)
			}
			if p, _, _ := bruteForce(c.d, 0.95); math.Abs(p-c.want) > 1e-15 {
				t.Errorf("brute force P = %v, want %v (test table is wrong)", p, c.want)
			}
		})
	}
}

// The interval is two-sided at the configured level, read off the sorted
// subset means. n=4, d = (0.3, 0.1, −0.2, 0.4), 75%: k = ⌊0.125·16⌋ = 2,
// and the 15 subset means sorted start −0.2, −0.05, 0.05, 0.067 and end
// 0.2667, 0.3, 0.35, 0.4, so the interval is [e^−0.05, e^0.35]. A
// one-sided 75% bound (k = 4) would be e^0.067; a 95% two-sided one at
// n=6 is the extreme pairs' ratios (k = ⌊0.025·64⌋ = 1), and below 6 pairs
// there is no finite 95% interval.
func TestIntervals(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      []float64
		conf   float64
		lo, hi float64
	}{
		{"n=4 75%", []float64{0.3, 0.1, -0.2, 0.4}, 0.75, math.Exp(-0.05), math.Exp(0.35)},
		{"n=6 95%", []float64{0.3, 0.1, -0.2, 0.4, 0.05, 0.15}, 0.95, math.Exp(-0.2), math.Exp(0.4)},
		{"n=5 95%", []float64{0.3, 0.1, -0.2, 0.4, 0.05}, 0.95, 0, math.Inf(1)},
		{"n=3 all equal 50%", []float64{0.2, 0.2, 0.2}, 0.5, math.Exp(0.2), math.Exp(0.2)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Test([]Metric{fromLogRatios("x", c.d...)}, WithConfidence(c.conf))
			if err != nil {
				t.Fatal(err)
			}
			m := r.Metrics[0]
			if !closeTo(m.Lo, c.lo) || !closeTo(m.Hi, c.hi) {
				t.Errorf("interval [%v, %v], want [%v, %v]", m.Lo, m.Hi, c.lo, c.hi)
			}
		})
	}
}

func closeTo(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// Against the brute-force definition on random data, every n up to 14 and
// several levels: the two-pass histogram selection finds exactly the
// sorted subset means' order statistics, and the p-value is exact.
func TestAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for n := 1; n <= 14; n++ {
		for _, conf := range []float64{0.5, 0.8, 0.95, 0.99} {
			d := make([]float64, n)
			for i := range d {
				d[i] = 0.05 + 0.15*rng.NormFloat64()
			}
			r, err := Test([]Metric{fromLogRatios("x", d...)}, WithConfidence(conf), WithMaxPairs(16))
			if err != nil {
				t.Fatal(err)
			}
			p, lo, hi := bruteForce(d, conf)
			m := r.Metrics[0]
			// The metric's log ratios are recomputed from values, so
			// the bounds agree to rounding.
			if m.P != p || !near(m.Lo, lo) || !near(m.Hi, hi) {
				t.Errorf("n=%d conf=%v: P %v [%v, %v], brute force %v [%v, %v]", n, conf, m.P, m.Lo, m.Hi, p, lo, hi)
			}
		}
	}
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// The interval is the inversion of the test: at level c, a centre μ just
// below Lo is rejected by the one-sided test of the shifted log ratios at
// (1−c)/2, one just above is not, and symmetrically at Hi. This fails for
// a one-sided interval (its lower bound rejects at 1−c) as it does for an
// off-by-one rank.
func TestIntervalInvertsTheTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for _, n := range []int{7, 10, 12} {
		d := make([]float64, n)
		for i := range d {
			d[i] = 0.1 + 0.2*rng.NormFloat64()
		}
		const conf = 0.9
		r, err := Test([]Metric{fromLogRatios("x", d...)}, WithConfidence(conf))
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := math.Log(r.Metrics[0].Lo), math.Log(r.Metrics[0].Hi)
		// p of "centre > μ" and of "centre < μ", by brute force.
		pAbove := func(mu float64) float64 {
			s := make([]float64, n)
			for i := range d {
				s[i] = d[i] - mu
			}
			p, _, _ := bruteForce(s, conf)
			return p
		}
		pBelow := func(mu float64) float64 {
			s := make([]float64, n)
			for i := range d {
				s[i] = mu - d[i]
			}
			p, _, _ := bruteForce(s, conf)
			return p
		}
		const eps = 1e-7
		tail := (1 - conf) / 2
		if p := pAbove(lo - eps); p > tail {
			t.Errorf("n=%d: just below Lo, p = %v > %v: not rejected", n, p, tail)
		}
		if p := pAbove(lo + eps); p <= tail {
			t.Errorf("n=%d: just above Lo, p = %v ≤ %v: rejected, the interval is too short", n, p, tail)
		}
		if p := pBelow(hi + eps); p > tail {
			t.Errorf("n=%d: just above Hi, p = %v > %v: not rejected", n, p, tail)
		}
		if p := pBelow(hi - eps); p <= tail {
			t.Errorf("n=%d: just below Hi, p = %v ≤ %v: rejected, the interval is too short", n, p, tail)
		}
	}
}

// The test is exact: over all 2^n sign patterns of one set of distinct
// magnitudes (each pattern equally likely under the null), p ≤ j/2^n in
// exactly j patterns.
func TestExactUnderTheNull(t *testing.T) {
	const n = 8
	rng := rand.New(rand.NewPCG(7, 7))
	mag := make([]float64, n)
	for i := range mag {
		mag[i] = 0.05 + rng.Float64()
	}
	var ps []float64
	for mask := range 1 << n {
		d := slices.Clone(mag)
		for i := range d {
			if mask>>i&1 == 1 {
				d[i] = -d[i]
			}
		}
		r, err := Test([]Metric{fromLogRatios("x", d...)})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, r.Metrics[0].P)
	}
	for _, j := range []int{1, 2, 3, 10, 64, 128, 256} {
		got := 0
		for _, p := range ps {
			if p <= float64(j)/(1<<n)+1e-12 {
				got++
			}
		}
		if got != j {
			t.Errorf("p ≤ %d/256 in %d patterns, want %d", j, got, j)
		}
	}
}

func TestSchedule(t *testing.T) {
	for _, c := range []struct {
		name    string
		metrics int
		opts    []Option
		want    []Look
	}{
		// At 1% the interim looks share 0.0025 and the joint test's
		// smallest p is 2^-n for any number of metrics: n = 10 is the
		// first with 2^-n ≤ 0.0025/(12−n) (0.00098 ≤ 0.00125; 2^-9 =
		// 0.00195 > 0.0025/3). Holm would have needed 12·2^-n.
		{"defaults, 12 metrics", 12, nil, []Look{{10, 0.00125}, {11, 0.00125}, {12, 0.0075}}},
		{"defaults, 1 metric", 1, nil, []Look{{10, 0.00125}, {11, 0.00125}, {12, 0.0075}}},
		// 2^-11 = 0.00049 ≤ 0.0025/5; 2^-10 > 0.0025/6.
		{"12 metrics, cap 16", 12, []Option{WithMaxPairs(16)}, []Look{{11, 0.0005}, {12, 0.0005}, {13, 0.0005}, {14, 0.0005}, {15, 0.0005}, {16, 0.0075}}},
		{"single look", 4, []Option{WithInterimLooks()}, []Look{{12, 0.01}}},
		{"explicit looks", 4, []Option{WithInterimLooks(6, 9), WithFinalShare(0.5), WithAlpha(0.02)}, []Look{{6, 0.005}, {9, 0.005}, {12, 0.01}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Schedule(c.metrics, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			sum := 0.0
			for _, l := range got {
				sum += l.Alpha
			}
			if alpha := 0.01 * map[bool]float64{true: 2, false: 1}[c.name == "explicit looks"]; math.Abs(sum-alpha) > 1e-12 {
				t.Errorf("looks spend %v, want all of alpha %v", sum, alpha)
			}
		})
	}
}

// MinPairs is the package doc's table. A single look needs 2^-n ≤ α
// (7 pairs at 1%) for any number of metrics; the default spending needs
// more, since the interim looks share a quarter of α.
func TestMinPairs(t *testing.T) {
	type row struct{ Single, Cap12, Cap16, Cap20 int }
	got := map[int]row{}
	for _, m := range []int{1, 12, 24} {
		got[m] = row{
			Single: MinPairs(m, WithInterimLooks(), WithMaxPairs(ceilLog2(1/0.01))),
			Cap12:  MinPairs(m),
			Cap16:  MinPairs(m, WithMaxPairs(16)),
			Cap20:  MinPairs(m, WithMaxPairs(20)),
		}
	}
	want := map[int]row{
		1:  {7, 10, 11, 12},
		12: {7, 10, 11, 12},
		24: {7, 10, 11, 12},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MinPairs (-want +got):\n%s", diff)
	}
	// Below the single-look bound nothing can be declared.
	if n := MinPairs(12, WithMaxPairs(6)); n != 0 {
		t.Errorf("cap 6: MinPairs %d, want 0 (2^-6 > 0.01)", n)
	}
	// The interval must be able to exclude 1 as well: at 99.9% that
	// needs 2^n ≥ 2000.
	if n := MinPairs(1, WithInterimLooks(), WithMaxPairs(10), WithConfidence(0.999)); n != 0 {
		t.Errorf("99.9%% intervals at 10 pairs: MinPairs %d, want 0", n)
	}
	if n := MinPairs(1, WithAlpha(0)); n != 0 {
		t.Errorf("invalid option: MinPairs %d, want 0", n)
	}
	if n := MinPairs(0); n != 0 {
		t.Errorf("no metrics: MinPairs %d, want 0", n)
	}
}

func ceilLog2(x float64) int { return int(math.Ceil(math.Log2(x))) }

// Decisions at a look: the joint test across the metrics of the call, the look's
// share of alpha, the interval's lower bound, and the margin.
func TestDecisions(t *testing.T) {
	up := func(name string, n int) Metric { // every pair slower: p = 2^-n
		d := make([]float64, n)
		for i := range d {
			d[i] = 0.3 + 0.01*float64(i)
		}
		return fromLogRatios(name, d...)
	}
	patterned := func(name string, signs ...int) Metric { // 1% either way, extreme at its own signs
		d := make([]float64, len(signs))
		for i, s := range signs {
			d[i] = 0.01 * float64(s)
		}
		return fromLogRatios(name, d...)
	}
	flat := func(name string, n int) Metric { // a hair either way
		d := make([]float64, n)
		for i := range d {
			d[i] = 0.001 * float64(i%2*2-1)
		}
		return fromLogRatios(name, d...)
	}
	for _, c := range []struct {
		name    string
		metrics []Metric
		opts    []Option
		want    []Decision
	}{
		// One look at 8 pairs, α 1%: 2^-8 = 0.0039.
		{"one metric", []Metric{up("a", 8)}, []Option{WithMaxPairs(8)}, []Decision{Regressed}},
		// The joint test: metrics that move together pay nothing for
		// their number (Holm would need 3·0.0039 ≤ 0.01 and fail);
		// nulls with their own sign patterns each add the sign vector
		// that makes them extreme: p = 4/256 > 0.01, where the slower
		// metric alone (no adjustment) would be regressed.
		{"joint, three together", []Metric{up("a", 8), up("b", 8), up("c", 8)}, []Option{WithMaxPairs(8)}, []Decision{Regressed, Regressed, Regressed}},
		{"joint, three nulls", []Metric{up("a", 8), patterned("f", 1, -1, 1, -1, 1, -1, 1, -1), patterned("g", 1, 1, -1, -1, 1, 1, -1, -1),
			patterned("h", -1, -1, -1, -1, 1, 1, 1, 1)}, []Option{WithMaxPairs(8)}, []Decision{Undecided, NoRegression, NoRegression, NoRegression}},
		{"joint, one null", []Metric{up("a", 8), patterned("f", 1, -1, 1, -1, 1, -1, 1, -1)}, []Option{WithMaxPairs(8)}, []Decision{Regressed, NoRegression}},
		// The look's share: an interim look at 8 of cap 9 with half
		// of α gets 0.005: one metric passes; with one null beside it
		// (p = 2/256 = 0.0078) it does not, although 0.0078 ≤ α.
		{"look share, one", []Metric{up("a", 8)}, []Option{WithMaxPairs(9), WithInterimLooks(8), WithFinalShare(0.5)}, []Decision{Regressed}},
		{"look share, with a null", []Metric{up("a", 8), patterned("f", 1, -1, 1, -1, 1, -1, 1, -1)}, []Option{WithMaxPairs(9), WithInterimLooks(8), WithFinalShare(0.5)},
			[]Decision{Undecided, NoRegression}},
		// Not a planned look: nothing is declared regressed, neither
		// before the only look nor between two looks.
		{"not a look", []Metric{up("a", 10)}, []Option{WithInterimLooks()}, []Decision{Undecided}},
		{"between looks", []Metric{up("a", 10)}, []Option{WithInterimLooks(6, 9), WithFinalShare(0.5)}, []Decision{Undecided}},
		{"at an interim look", []Metric{up("a", 9)}, []Option{WithInterimLooks(6, 9), WithFinalShare(0.5)}, []Decision{Regressed}},
		// p = 2^-8 passes but a 99.9% interval has no finite bound
		// at 8 pairs, so Lo = 0 is not above 1.
		{"interval must exclude 1", []Metric{up("a", 8)}, []Option{WithMaxPairs(8), WithConfidence(0.999)}, []Decision{Undecided}},
		// Margin: a 3% change measured to ±0.5% is below 1.10 however
		// significant; with a 1.02 margin it is a regression.
		{"below the margin", []Metric{fromLogRatios("a", 0.03, 0.031, 0.029, 0.03, 0.032, 0.028, 0.03, 0.03)}, []Option{WithMaxPairs(8)}, []Decision{NoRegression}},
		{"above a small margin", []Metric{fromLogRatios("a", 0.03, 0.031, 0.029, 0.03, 0.032, 0.028, 0.03, 0.03)}, []Option{WithMaxPairs(8), WithMargin(1.02)}, []Decision{Regressed}},
		// A metric's own margin wins over WithMargin's, for it alone.
		{"a metric's own margin", []Metric{withMargin(fromLogRatios("a", 0.03, 0.031, 0.029, 0.03, 0.032, 0.028, 0.03, 0.03), 1.02),
			fromLogRatios("b", 0.03, 0.031, 0.029, 0.03, 0.032, 0.028, 0.03, 0.03)}, []Option{WithMaxPairs(8)}, []Decision{Regressed, NoRegression}},
		{"a wide margin clears", []Metric{withMargin(fromLogRatios("a", 0.2, -0.1, 0.15, -0.05, 0.1, 0.05, -0.1, 0.12), 1.5),
			fromLogRatios("b", 0.2, -0.1, 0.15, -0.05, 0.1, 0.05, -0.1, 0.12)}, []Option{WithMaxPairs(8)}, []Decision{NoRegression, Undecided}},
		// Clearing needs no look, only a finite interval (6 pairs at 95%).
		{"cleared at 6", []Metric{flat("f", 6)}, []Option{WithInterimLooks()}, []Decision{NoRegression}},
		{"not cleared at 5", []Metric{flat("f", 5)}, []Option{WithInterimLooks()}, []Decision{Undecided}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Test(c.metrics, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			var got []Decision
			for _, m := range r.Metrics {
				got = append(got, m.Decision)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s\n%s", diff, r)
			}
		})
	}
}

func withMargin(m Metric, margin float64) Metric {
	m.Margin = margin
	return m
}

func TestResult(t *testing.T) {
	metrics := []Metric{
		fromLogRatios("pod-ready p50", 0.3, 0.31, 0.29, 0.3, 0.32, 0.28, 0.3, 0.3),
		fromLogRatios("cpu", 0.001, -0.001, 0.001, -0.001, 0.001, -0.001, 0.001, -0.001),
		fromLogRatios("memory", 0.1, -0.1, 0.2, 0, -0.05, 0.1, 0.3, -0.2),
	}
	r, err := Test(metrics, WithMaxPairs(9))
	if err != nil {
		t.Fatal(err)
	}
	// 8 pairs is not a look (3 metrics, cap 9: only the cap is), so
	// pod-ready is undecided however clear; cpu is cleared.
	if diff := cmp.Diff([]string{"pod-ready p50", "memory"}, r.Undecided()); diff != "" {
		t.Errorf("Undecided (-want +got):\n%s", diff)
	}
	if r.Regressed() != nil || !r.NeedMore() {
		t.Errorf("8 of 9 pairs, nothing regressed, two undecided: NeedMore must be true\n%s", r)
	}
	want := Result{Pairs: 8, Alpha: 0.01, Look: 0, Looks: 1, LookAlpha: 0, MinPairs: 9, MaxPairs: 9, Margin: 1.1, Confidence: 0.95, Exact: true}
	if diff := cmp.Diff(want, *r, cmpopts.IgnoreFields(Result{}, "Metrics")); diff != "" {
		t.Errorf("Result (-want +got):\n%s", diff)
	}
	if got, want := r.Metrics[0].String(), "pod-ready p50 1.35× [1.34, 1.36]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := r.Metrics[0]; !near(got.CandMean/got.RefMean, got.Ratio) {
		t.Errorf("geometric means %v, %v do not give the ratio %v", got.RefMean, got.CandMean, got.Ratio)
	}
	// At the cap, with the regression declared, the verification stops.
	for i := range metrics {
		metrics[i].Ref = append(metrics[i].Ref, 10)
		metrics[i].Cand = append(metrics[i].Cand, 10*math.Exp(0.3))
	}
	if r, err = Test(metrics, WithMaxPairs(9)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pod-ready p50"}, r.Regressed()); diff != "" || r.NeedMore() {
		t.Errorf("at the cap: Regressed (-want +got):\n%s NeedMore %v\n%s", diff, r.NeedMore(), r)
	}
	// A regression stops before the cap as well (fail fast): an interim
	// look at 9 with half of alpha, 2·2^-9 ≤ 0.005.
	r2, err := Test([]Metric{metrics[0], metrics[2]}, WithMaxPairs(12), WithInterimLooks(9), WithFinalShare(0.5))
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.Regressed()) != 1 || len(r2.Undecided()) != 1 || r2.NeedMore() {
		t.Errorf("a regression at an interim look must stop the verification\n%s", r2)
	}
	lines := strings.Split(strings.TrimSpace(r.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "look 1 of 1") || !strings.Contains(lines[1], "regressed") {
		t.Errorf("Result.String():\n%s", r)
	}
	if s := (MetricResult{Name: "x", Ratio: 1, Lo: 0, Hi: math.Inf(1)}).String(); s != "x 1.00× [0.00, ∞]" {
		t.Errorf("unbounded interval: %q", s)
	}
}

func TestInputErrors(t *testing.T) {
	ok := func() Metric { return fromLogRatios("ok", 0.1, 0.2, 0.3) }
	with := func(f func(*Metric)) []Metric {
		m := ok()
		f(&m)
		return []Metric{m}
	}
	for _, c := range []struct {
		name    string
		metrics []Metric
		opts    []Option
		is      error
		mention string
	}{
		{"no metrics", nil, nil, ErrInput, "no metrics"},
		{"unequal lengths", with(func(m *Metric) { m.Cand = m.Cand[:2] }), nil, ErrInput, "3 reference and 2 candidate"},
		{"no pairs", with(func(m *Metric) { m.Ref, m.Cand = nil, nil }), nil, ErrInput, "no pairs"},
		{"zero", with(func(m *Metric) { m.Ref[1] = 0 }), nil, ErrInput, "pair 1: reference value 0"},
		{"negative", with(func(m *Metric) { m.Cand[2] = -1 }), nil, ErrInput, "pair 2: candidate value -1"},
		{"NaN", with(func(m *Metric) { m.Cand[0] = math.NaN() }), nil, ErrInput, "NaN"},
		{"infinite", with(func(m *Metric) { m.Ref[0] = math.Inf(1) }), nil, ErrInput, "+Inf"},
		{"differing pairs", []Metric{ok(), fromLogRatios("short", 0.1, 0.2)}, nil, ErrInput, `"short" has 2 pairs`},
		{"same name", []Metric{ok(), ok()}, nil, ErrInput, `two metrics named "ok"`},
		{"beyond the cap", []Metric{ok()}, []Option{WithMaxPairs(2)}, ErrInput, "exceed the cap of 2"},
		{"alpha", []Metric{ok()}, []Option{WithAlpha(0)}, ErrOption, "alpha"},
		{"alpha NaN", []Metric{ok()}, []Option{WithAlpha(math.NaN())}, ErrOption, "alpha"},
		{"margin", []Metric{ok()}, []Option{WithMargin(1)}, ErrOption, "margin"},
		{"confidence", []Metric{ok()}, []Option{WithConfidence(1)}, ErrOption, "confidence"},
		{"cap", []Metric{ok()}, []Option{WithMaxPairs(0)}, ErrOption, "cap"},
		{"final share", []Metric{ok()}, []Option{WithFinalShare(0)}, ErrOption, "final share"},
		{"looks unordered", []Metric{ok()}, []Option{WithInterimLooks(8, 6)}, ErrOption, "interim looks"},
		{"look at the cap", []Metric{ok()}, []Option{WithInterimLooks(12)}, ErrOption, "interim looks"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Test(c.metrics, c.opts...)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %v, want %v mentioning %q", err, c.is, c.mention)
			}
		})
	}
	if _, err := Schedule(0); !errors.Is(err, ErrInput) {
		t.Errorf("Schedule(0): %v", err)
	}
}

// Above ExactPairs the fixed-seed sample estimates the exact p-value and
// interval (18 pairs: the brute force enumerates 2^18) and is reproducible.
func TestMonteCarlo(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	d := make([]float64, 18)
	for i := range d {
		d[i] = 0.02 + 0.1*rng.NormFloat64()
	}
	m := fromLogRatios("x", d...)
	r, err := Test([]Metric{m}, WithMaxPairs(18))
	if err != nil {
		t.Fatal(err)
	}
	if r.Exact {
		t.Error("18 pairs reported exact")
	}
	p, lo, hi := bruteForce(d, 0.95)
	got := r.Metrics[0]
	// Binomial error of the sampled p with 2^18 draws: ≤ 0.001.
	if math.Abs(got.P-p) > 0.003 || math.Abs(math.Log(got.Lo/lo)) > 0.005 || math.Abs(math.Log(got.Hi/hi)) > 0.005 {
		t.Errorf("sampled P %v [%v, %v], exact %v [%v, %v]", got.P, got.Lo, got.Hi, p, lo, hi)
	}
	again, _ := Test([]Metric{m}, WithMaxPairs(18))
	if diff := cmp.Diff(r, again); diff != "" {
		t.Errorf("not reproducible (-first +second):\n%s", diff)
	}
	// The smallest p is one in 2^18, the observed signs counted as a
	// draw: at 25 pairs no draw is the identity (which would count too;
	// one in 2^25), so all-slower pairs give exactly that.
	up := make([]float64, 25)
	for i := range up {
		up[i] = 0.1
	}
	r, err = Test([]Metric{fromLogRatios("up", up...)}, WithMaxPairs(25))
	if err != nil {
		t.Fatal(err)
	}
	if least := 1.0 / (MonteCarloDraws + 1); r.Metrics[0].P != least {
		t.Errorf("all slower: sampled P %v, want %v", r.Metrics[0].P, least)
	}
}
