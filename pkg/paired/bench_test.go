package paired

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func benchMetrics(m, n int, seed uint64) []Metric {
	rng := rand.New(rand.NewPCG(seed, 1))
	var ms []Metric
	for j := range m {
		x := Metric{Name: fmt.Sprintf("m%d", j), Unit: "s"}
		for range n {
			x.Ref = append(x.Ref, 10*(1+0.1*rng.NormFloat64()))
			x.Cand = append(x.Cand, 10*(1+0.1*rng.NormFloat64()))
		}
		ms = append(ms, x)
	}
	return ms
}

// BenchmarkTest is one look (one Test call) at 12 metrics × 12 pairs, the
// default cap, and at 16 (the last exact size) and 20 (Monte Carlo).
func BenchmarkTest(b *testing.B) {
	for _, n := range []int{12, 16, 20} {
		b.Run(fmt.Sprintf("12x%d", n), func(b *testing.B) {
			ms := benchMetrics(12, n, 1)
			for b.Loop() {
				if _, err := Test(ms, WithMaxPairs(max(n, 12))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
