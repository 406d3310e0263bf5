package permtest

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want float64
	}{{11, 1, 11}, {13, 3, 286}, {14, 4, 1001}, {23, 3, 1771}, {10, 5, 252}, {5, 6, 0}, {7, 0, 1}} {
		if got := Choose(c.n, c.k); got != c.want {
			t.Errorf("Choose(%d,%d) = %v, want %v", c.n, c.k, got, c.want)
		}
	}
}

func TestFeasibleAndRunsFor(t *testing.T) {
	if Feasible(10, 1, 0.01) {
		t.Error("one new run against ten recorded ones cannot reach 1% (smallest p 1/11)")
	}
	if !Feasible(10, 3, 0.01) {
		t.Error("three new runs against ten can reach 1% (1/286)")
	}
	// leeway 2 at 1%: C(N+M, M) ≥ 200.
	for _, c := range []struct{ n, want int }{{10, 3}, {20, 2}, {5, 5}} {
		if got := RunsFor(c.n, 0.01, 2, 2); got != c.want {
			t.Errorf("RunsFor(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// The test is exact: over every labelling of one pooled set of distinct
// values as 10 recorded and 3 new runs, p ≤ k/286 happens for exactly k of
// the 286 labellings. An enumerator that misses or repeats a split, or a
// statistic that is not monotone in the new runs' values, breaks it.
func TestExactUnderTheNull(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	pool := make([]float64, 13)
	for i := range pool {
		pool[i] = 1 + rng.Float64()
	}
	var ps []float64
	newSplits(13, 3).each(func(chosen []int) {
		var base, nw []float64
		in := map[int]bool{}
		for _, c := range chosen {
			in[c] = true
			nw = append(nw, pool[c])
		}
		for i, v := range pool {
			if !in[i] {
				base = append(base, v)
			}
		}
		ps = append(ps, Test([]Metric{{Name: "x", Baseline: base, New: nw}}).P)
	})
	if len(ps) != 286 {
		t.Fatalf("%d labellings, want 286", len(ps))
	}
	for _, k := range []int{1, 2, 3, 10, 50, 286} {
		n := 0
		for _, p := range ps {
			if p <= float64(k)/286+1e-12 {
				n++
			}
		}
		if n != k {
			t.Errorf("p ≤ %d/286 in %d labellings, want %d", k, n, k)
		}
	}
}

// Several metrics share one α: under the null, the max statistic's p is
// exact too (two correlated metrics, every labelling).
func TestExactAcrossMetrics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	a, b := make([]float64, 12), make([]float64, 12)
	for i := range a {
		a[i] = 2 + rng.Float64()
		b[i] = a[i]*1.5 + rng.Float64()
	}
	var ps []float64
	newSplits(12, 3).each(func(chosen []int) {
		in := map[int]bool{}
		for _, c := range chosen {
			in[c] = true
		}
		var m []Metric
		for _, xs := range [][]float64{a, b} {
			x := Metric{Name: "m"}
			for i, v := range xs {
				if in[i] {
					x.New = append(x.New, v)
				} else {
					x.Baseline = append(x.Baseline, v)
				}
			}
			m = append(m, x)
		}
		ps = append(ps, Test(m).P)
	})
	total := len(ps) // C(12,3) = 220
	for _, k := range []int{1, 2, 5, 22} {
		n := 0
		for _, p := range ps {
			if p <= float64(k)/float64(total)+1e-12 {
				n++
			}
		}
		if n > k {
			t.Errorf("p ≤ %d/%d in %d labellings: more than %d, the test is not exact", k, total, n, k)
		}
	}
}

func TestDetectsAShift(t *testing.T) {
	base := []float64{2.01, 2.05, 1.98, 2.10, 2.03, 1.99, 2.07, 2.02, 2.04, 2.00}
	slow := []float64{2.52, 2.49, 2.60}
	r := Test([]Metric{{Name: "podReady.p50", Baseline: base, New: slow}, {Name: "flat", Baseline: base, New: []float64{2.0, 2.01, 2.02}}})
	if r.P != r.MinP || math.Abs(r.MinP-1.0/286) > 1e-12 || !r.Exact {
		t.Fatalf("p = %v (min %v, exact %v), want the smallest, 1/286, exact", r.P, r.MinP, r.Exact)
	}
	if got := r.Metrics[0].Ratio; math.Abs(got-2.52/2.025) > 1e-9 {
		t.Errorf("ratio %v, want %v", got, 2.52/2.025)
	}
	if r.Metrics[1].P < 0.1 {
		t.Errorf("the unchanged metric's own p = %v, want large", r.Metrics[1].P)
	}
	// One slow run among three is not a shift.
	r = Test([]Metric{{Name: "podReady.p50", Baseline: base, New: []float64{5.0, 2.01, 2.03}}})
	if r.P <= 0.05 {
		t.Errorf("one outlier among three new runs: p = %v, want > 0.05", r.P)
	}
}

func TestSampledWhenTooManySplits(t *testing.T) {
	var base, slow []float64
	for i := range 40 {
		base = append(base, 2+float64(i%7)/100)
	}
	for i := range 12 {
		slow = append(slow, 2.6+float64(i%5)/100)
	}
	r := Test([]Metric{{Name: "x", Baseline: base, New: slow}})
	if r.Exact || r.Splits != MaxExact {
		t.Fatalf("exact %v with %d splits, want a sample of %d", r.Exact, r.Splits, MaxExact)
	}
	if r.P > 2.0/MaxExact {
		t.Errorf("p = %v for a clear shift, want about 1/%d", r.P, MaxExact)
	}
}

func TestNothingToTest(t *testing.T) {
	if r := Test(nil); r.P != 1 {
		t.Errorf("no metric: p %v, want 1", r.P)
	}
	if r := Test([]Metric{{Name: "x", Baseline: []float64{1, 1, 1}, New: []float64{1, 1}}}); r.P != 1 {
		t.Errorf("a constant metric: p %v, want 1", r.P)
	}
}
