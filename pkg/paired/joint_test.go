package paired

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// bruteMaxT is the step-down max-T by its definition, without the Gray
// code: every sign vector's studentised sums computed from scratch.
func bruteMaxT(d [][]float64) []float64 {
	m, n := len(d), len(d[0])
	z := func(j, mask int) float64 {
		sum, sq := 0.0, 0.0
		for i, x := range d[j] {
			sq += x * x
			if mask>>i&1 == 1 {
				x = -x
			}
			sum += x
		}
		if sq == 0 {
			return 0
		}
		return sum / math.Sqrt(sq)
	}
	order := make([]int, m)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(z(b, 0), z(a, 0)) })
	adj := make([]float64, m)
	run := 0.0
	for k, j := range order {
		obs := z(j, 0)
		count := 0
		for mask := range 1 << n {
			top := math.Inf(-1)
			for _, l := range order[k:] {
				top = max(top, z(l, mask))
			}
			if top >= obs-1e-9*(1+math.Abs(obs)) {
				count++
			}
		}
		run = max(run, float64(count)/float64(int(1)<<n))
		adj[j] = run
	}
	return adj
}

func TestStepDownMaxTAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 40 {
		m, n := 1+trial%5, 4+trial%7
		d := make([][]float64, m)
		for j := range d {
			shift := 0.1 * float64(trial%3) * float64(j%2)
			for range n {
				d[j] = append(d[j], shift+0.1*rng.NormFloat64())
			}
		}
		if diff := gocmp.Diff(bruteMaxT(d), stepDownMaxT(d), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("trial %d, %d metrics × %d pairs (-brute +got):\n%s", trial, m, n, diff)
		}
	}
}

// With one metric the joint test is the metric's own sign-flip test,
// computed another way (subset sums, not studentised sums).
func TestStepDownMaxTOneMetricIsMarginal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 30 {
		d := make([]float64, 10)
		for i := range d {
			d[i] = 0.05 + 0.1*rng.NormFloat64()
		}
		f := signFlip(d, DefaultConfidence)
		want := float64(f.atLeast) / float64(f.outOf)
		if got := stepDownMaxT([][]float64{d})[0]; math.Abs(got-want) > 1e-12 {
			t.Errorf("d %v: joint %v, marginal %v", d, got, want)
		}
	}
}

// What the joint test buys and what it still charges. Metrics that move
// together (copies of one pattern) pay nothing for their number: each
// keeps p = 2^-8, where Holm would have multiplied by 3. Metrics that did
// not move but whose sign patterns differ each add the sign vector that
// makes them extreme, so the slower metric's p grows with their number.
func TestStepDownMaxTMultiplicity(t *testing.T) {
	up := []float64{0.3, 0.31, 0.32, 0.33, 0.34, 0.35, 0.36, 0.37}
	pattern := func(signs ...int) []float64 { // equal sizes: extreme at its own signs
		out := make([]float64, len(signs))
		for i, s := range signs {
			out[i] = 0.01 * float64(s)
		}
		return out
	}
	nulls := [][]float64{
		pattern(1, -1, 1, -1, 1, -1, 1, -1),
		pattern(1, 1, -1, -1, 1, 1, -1, -1),
		pattern(-1, -1, -1, -1, 1, 1, 1, 1),
	}
	for _, c := range []struct {
		name string
		d    [][]float64
		want float64 // the slower metric's adjusted p
	}{
		{"alone", [][]float64{up}, 1.0 / 256},
		{"three copies", [][]float64{up, up, up}, 1.0 / 256},
		{"one null", [][]float64{up, nulls[0]}, 2.0 / 256},
		{"three nulls", append([][]float64{up}, nulls...), 4.0 / 256},
	} {
		if got := stepDownMaxT(c.d)[0]; math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: adjusted p %v, want %v", c.name, got, c.want)
		}
	}
	// Step-down: once the slower metric is set aside, a null's own p is
	// its marginal share, never below the slower metric's.
	adj := stepDownMaxT(append([][]float64{up}, nulls...))
	for j := 1; j < len(adj); j++ {
		if adj[j] < adj[0] {
			t.Errorf("null %d adjusted %v below the slower metric's %v", j, adj[j], adj[0])
		}
	}
}

// Above ExactPairs the sampled joint test approximates the exact one: on
// 18 pairs, against the brute force over all 2^18 sign vectors.
func TestStepDownMaxTSampled(t *testing.T) {
	if testing.Short() {
		t.Skip("2^18 sign vectors by brute force: run without -short")
	}
	rng := rand.New(rand.NewPCG(11, 11))
	d := make([][]float64, 3)
	for j := range d {
		for range 18 {
			d[j] = append(d[j], 0.02*float64(j)+0.1*rng.NormFloat64())
		}
	}
	want, got := bruteMaxT(d), stepDownMaxT(d)
	for j := range d {
		// Binomial standard error of a share near p over 2^18 draws,
		// times five.
		tol := 5*math.Sqrt(want[j]*(1-want[j])/float64(MonteCarloDraws)) + 1e-5
		if math.Abs(got[j]-want[j]) > tol {
			t.Errorf("metric %d: sampled %v, exact %v (± %v)", j, got[j], want[j], tol)
		}
	}
}
