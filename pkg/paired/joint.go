package paired

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// jointSeed fixes the Monte Carlo draws of the joint test above
// ExactPairs, so a Test call is reproducible.
const jointSeed = 0x5eed_3a7

// stepDownMaxT adjusts the metrics' sign-flip tests for their number by
// Westfall and Young's step-down max-T, with the sign vectors applied to
// whole pairs: flipping pair i swaps the arms of block i for every metric
// at once, so the metrics' dependence (one block's pod-ready p50, p90 and
// scheduling move together) is kept in the reference distribution instead
// of being bounded away as Holm does.
//
// d[j] is metric j's log ratios, all of one length n. Each metric's
// statistic is its studentised sum z_j = Σ d_ji / ‖d_j‖; ‖d_j‖ does not
// change under sign flips, so z_j orders the sign vectors exactly as the
// mean does and the marginal test is the one signFlip runs. With the
// metrics ordered by observed z descending, the k-th one's p-value is the
// share of sign vectors whose largest z among the k-th and later metrics
// reaches the k-th observed z; the adjusted p-values are made monotone in
// that order. Ties count against the candidate.
//
// The smallest adjusted p-value is 1/2^n (or 1/(MonteCarloDraws+1)), the
// observed signs alone, whatever the number of metrics: the joint test
// pays nothing for metrics that did not move.
func stepDownMaxT(d [][]float64) []float64 {
	m, n := len(d), len(d[0])
	order := make([]int, m)
	z := make([]float64, m)
	inv := make([]float64, m)
	for j, dj := range d {
		order[j] = j
		sum, sq := 0.0, 0.0
		for _, x := range dj {
			sum += x
			sq += x * x
		}
		if sq > 0 {
			inv[j] = 1 / math.Sqrt(sq)
			z[j] = sum * inv[j]
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(z[b], z[a]) })
	// rows[i] is pair i's log ratios scaled by 1/‖d_j‖, in the metrics'
	// order; thresholds[k] is the k-th observed z less the tie tolerance.
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = make([]float64, m)
		for k, j := range order {
			rows[i][k] = d[j][i] * inv[j]
		}
	}
	thresholds := make([]float64, m)
	for k, j := range order {
		thresholds[k] = z[j] - tieTolerance*(1+math.Abs(z[j]))
	}
	var counts []int
	var outOf int
	if n <= ExactPairs {
		counts, outOf = grayCounts(rows, thresholds), 1<<n
	} else {
		counts, outOf = sampledMaxCounts(rows, thresholds), MonteCarloDraws+1
	}
	adj := make([]float64, m)
	run := 0.0
	for k, j := range order {
		run = max(run, float64(counts[k])/float64(outOf))
		adj[j] = run
	}
	return adj
}

// grayCounts enumerates the 2^n sign vectors in Gray-code order (each one
// flips one pair of the previous) and counts, for each k, those whose
// largest statistic among metrics k… reaches thresholds[k]. The observed
// signs (the first vector) count.
func grayCounts(rows [][]float64, thresholds []float64) []int {
	s, counts := observed(rows, thresholds)
	sign := make([]float64, len(rows))
	for i := range sign {
		sign[i] = 1
	}
	for g := 1; g < 1<<len(rows); g++ {
		b := bits.TrailingZeros(uint(g))
		f := -2 * sign[b]
		for k, x := range rows[b] {
			s[k] += f * x
		}
		sign[b] = -sign[b]
		tally(s, thresholds, counts)
	}
	return counts
}

// observed is the statistics of the observed signs (every row's sum) and
// the step-down counts with that sign vector tallied.
func observed(rows [][]float64, thresholds []float64) (s []float64, counts []int) {
	s, counts = make([]float64, len(thresholds)), make([]int, len(thresholds))
	for _, r := range rows {
		for k, x := range r {
			s[k] += x
		}
	}
	tally(s, thresholds, counts)
	return s, counts
}

// tally adds one sign vector's statistics s (in the metrics' order) to
// the step-down counts: the running maximum from the last metric back.
func tally(s, thresholds []float64, counts []int) {
	top := math.Inf(-1)
	for k := len(s) - 1; k >= 0; k-- {
		top = max(top, s[k])
		if top >= thresholds[k] {
			counts[k]++
		}
	}
}

// sampledMaxCounts is grayCounts over MonteCarloDraws random sign vectors
// (a fixed seed) plus the observed one, for more than ExactPairs pairs.
func sampledMaxCounts(rows [][]float64, thresholds []float64) []int {
	rng := rand.New(rand.NewPCG(jointSeed, uint64(len(rows))))
	s, counts := observed(rows, thresholds)
	for range MonteCarloDraws {
		clear(s)
		var r uint64
		for i, row := range rows {
			if i%64 == 0 {
				r = rng.Uint64()
			}
			f := 1.0
			if r&1 == 1 {
				f = -1
			}
			r >>= 1
			for k, x := range row {
				s[k] += f * x
			}
		}
		tally(s, thresholds, counts)
	}
	return counts
}
