package paired

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// ExactPairs is the most pairs whose 2^n sign vectors are all enumerated;
// above it the reference distribution is a fixed-seed sample of
// MonteCarloDraws sign vectors.
const ExactPairs = 16

// MonteCarloDraws is the number of random sign vectors drawn above
// ExactPairs. The observed signs count as one more draw, so the smallest
// p-value is 1/(MonteCarloDraws+1) = 2^-18 and the p-value stays valid
// (P(p ≤ x) ≤ x) despite the sampling.
const MonteCarloDraws = 1<<18 - 1

// monteCarloSeed fixes the draws, so a Test call is reproducible.
const monteCarloSeed = 0x9a1eed

// tieTolerance: subset sums within tieTolerance·Σ|d_i| of the boundary
// count as ties, which are counted against the candidate (a conservative
// p-value), so rounding never makes the test reject more often.
const tieTolerance = 1e-9

// flips is one metric's sign-flip analysis.
type flips struct {
	// atLeast is the number of sign vectors whose mean is at least the
	// observed one, the observed signs included; outOf is the number of
	// sign vectors (2^n) or draws+1. p = atLeast/outOf.
	atLeast, outOf int
	// lo and hi bound the mean log ratio (log scale); -Inf and +Inf when
	// the pairs are too few for the confidence level.
	lo, hi float64
	exact  bool
}

// reference returns the number of sign vectors the reference distribution
// has with n pairs.
func reference(n int) int {
	if n <= ExactPairs {
		return 1 << n
	}
	return MonteCarloDraws + 1
}

// tailRank is k, the rank of the subset mean that bounds a two-sided
// interval at level conf: k = ⌊(1−conf)/2 · outOf⌋ (0: no finite bound).
func tailRank(conf float64, outOf int) int {
	k := int(math.Floor((1-conf)/2*float64(outOf) + 1e-9))
	return max(k, 0)
}

// signFlip runs the one-sided sign-flip test of mean(d) > 0 and inverts
// it for a two-sided interval at level conf.
//
// Flipping the signs of the pairs in a set T turns Σd into Σd − 2·Σ_T d,
// so the flipped mean is at least the observed one exactly when
// Σ_T d ≤ 0; the test of centre μ counts the T with Σ_T (d−μ) ≤ 0, i.e.
// mean_T(d) ≤ μ, so it rejects μ at level k/outOf exactly when μ is below
// the k-th smallest subset mean (Hartigan's subset means); the upper bound
// mirrors it.
func signFlip(d []float64, conf float64) flips {
	scale := 0.0
	for _, x := range d {
		scale += math.Abs(x)
	}
	tol := tieTolerance * scale
	f := flips{outOf: reference(len(d)), exact: len(d) <= ExactPairs}
	k := tailRank(conf, f.outOf)
	f.lo, f.hi = math.Inf(-1), math.Inf(1)
	if f.exact {
		f.atLeast, f.lo, f.hi = exactFlips(d, k, tol)
		return f
	}
	var lows, highs extremes
	if k > 0 {
		lows, highs = newExtremes(k, false), newExtremes(k, true)
	}
	f.atLeast = 1 + sampledCount(makeChunks(d), tol, &lows, &highs)
	if k > 0 {
		f.lo, f.hi = lows.bound(), highs.bound()
	}
	return f
}

// half is the subsets of at most ExactPairs/2 pairs: each one's sum and
// size. It is a value (an array), so the enumeration's loads stay on the
// stack, where the race detector does not slow them down.
type half struct {
	n     int
	sums  [1 << (ExactPairs / 2)]float64
	sizes [1 << (ExactPairs / 2)]int
}

func tabulate(d []float64) (h half) {
	h.n = 1 << len(d)
	for mask := 1; mask < h.n; mask++ {
		low := mask & -mask
		h.sums[mask] = h.sums[mask^low] + d[bits.TrailingZeros(uint(low))]
		h.sizes[mask] = h.sizes[mask^low] + 1
	}
	return h
}

// countAtMost counts the subsets with Σ_T d ≤ tol.
func countAtMost(a, b *half, tol float64) int {
	count := 0
	for i := range a.n {
		for j := range b.n {
			if a.sums[i]+b.sums[j] <= tol {
				count++
			}
		}
	}
	return count
}

// buckets is the resolution of the histogram that locates the k-th
// smallest and largest subset means.
const buckets = 1024

// exactFlips enumerates the 2^n subsets T of n ≤ ExactPairs pairs, as a
// subset of each half. It counts the T with Σ_T d ≤ tol (the empty one
// included) and finds the k-th smallest and largest nonempty subset mean
// (-Inf and +Inf when k is 0).
//
// Every subset mean lies in [min d, max d]; a first pass histograms them
// there, which locates the buckets holding the two order statistics; a
// second pass collects those buckets' means and sorts them.
func exactFlips(d []float64, k int, tol float64) (count int, lo, hi float64) {
	a, b := tabulate(d[:len(d)/2]), tabulate(d[len(d)/2:])
	lo, hi = math.Inf(-1), math.Inf(1)
	if k == 0 {
		return countAtMost(&a, &b, tol), lo, hi
	}
	var inv [ExactPairs + 1]float64
	for c := 1; c < len(inv); c++ {
		inv[c] = 1 / float64(c)
	}
	dmin, dmax := slices.Min(d), slices.Max(d)
	if dmax == dmin { // every subset mean is d's one value
		return countAtMost(&a, &b, tol), dmin, dmax
	}
	scale := buckets / (dmax - dmin)
	// bucket is the histogram bucket of a mean; the two passes must
	// compute the same means, so each is rounded explicitly (no fused
	// multiply-add in one pass and not the other).
	bucket := func(mean float64) int {
		x := int((mean - dmin) * scale)
		if x < 0 {
			return 0
		}
		return min(x, buckets-1)
	}
	// Pass 1. The empty subset (i = j = 0) has sum 0 ≤ tol and no mean.
	var hist [buckets]int32
	count = 1
	for i := range a.n {
		sa, ca := a.sums[i], a.sizes[i]
		for j := boolInt(i == 0); j < b.n; j++ {
			s := sa + b.sums[j]
			if s <= tol {
				count++
			}
			hist[bucket(float64(s*inv[ca+b.sizes[j]]))]++
		}
	}
	// The buckets of the k-th smallest and k-th largest, and those ranks
	// within them.
	bl, rl := 0, k
	for ; rl > int(hist[bl]); bl++ {
		rl -= int(hist[bl])
	}
	bh, rh := buckets-1, k
	for ; rh > int(hist[bh]); bh-- {
		rh -= int(hist[bh])
	}
	// Pass 2 collects the two buckets' means. Only means near or beyond
	// the buckets' inner edges (a quarter bucket of leeway for rounding)
	// have their bucket computed again.
	width := (dmax - dmin) / buckets
	lowEdge, highEdge := dmin+float64(bl+1)*width+width/4, dmin+float64(bh)*width-width/4
	var low, high []float64
	for i := range a.n {
		sa, ca := a.sums[i], a.sizes[i]
		for j := boolInt(i == 0); j < b.n; j++ {
			s := sa + b.sums[j]
			mean := float64(s * inv[ca+b.sizes[j]])
			if mean > lowEdge && mean < highEdge {
				continue
			}
			x := bucket(mean)
			if x == bl {
				low = append(low, mean)
			}
			if x == bh {
				high = append(high, mean)
			}
		}
	}
	slices.Sort(low)
	slices.Sort(high)
	return count, low[rl-1], high[len(high)-rh]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// chunkBits is the most pairs per chunk (tables of 2^chunkBits entries).
const chunkBits = 10

type chunk struct {
	sums  []float64
	sizes []int
}

// makeChunks splits d into nearly equal chunks of at most chunkBits pairs
// and tabulates every subset's sum and size within each.
func makeChunks(d []float64) []chunk {
	c := (len(d) + chunkBits - 1) / chunkBits
	out := make([]chunk, 0, c)
	for i := range c {
		part := d[i*len(d)/c : (i+1)*len(d)/c]
		ch := chunk{sums: make([]float64, 1<<len(part)), sizes: make([]int, 1<<len(part))}
		for mask := 1; mask < len(ch.sums); mask++ {
			low := mask & -mask
			ch.sums[mask] = ch.sums[mask^low] + part[bits.TrailingZeros(uint(low))]
			ch.sizes[mask] = ch.sizes[mask^low] + 1
		}
		out = append(out, ch)
	}
	return out
}

// sampledCount draws MonteCarloDraws uniform subsets with a fixed seed,
// counts those with sum ≤ tol and feeds their means to the extremes. A
// draw of the empty set (the identity) counts at every centre μ, so it is
// fed as −∞ and +∞: the bounds stay the inversion of the sampled test.
func sampledCount(chunks []chunk, tol float64, lows, highs *extremes) int {
	rng := rand.New(rand.NewPCG(monteCarloSeed, uint64(len(chunks))))
	count := 0
	track := lows.k > 0
	for range MonteCarloDraws {
		s, c := 0.0, 0
		var r uint64
		left := 0
		for _, ch := range chunks {
			w := bits.Len(uint(len(ch.sums) - 1))
			if left < w {
				r, left = rng.Uint64(), 64
			}
			idx := int(r & (1<<w - 1))
			r >>= w
			left -= w
			s += ch.sums[idx]
			c += ch.sizes[idx]
		}
		if s <= tol {
			count++
		}
		switch {
		case !track:
		case c == 0:
			lows.offer(math.Inf(-1))
			highs.offer(math.Inf(1))
		default:
			mean := s / float64(c)
			lows.offer(mean)
			highs.offer(mean)
		}
	}
	return count
}

// extremes keeps the k smallest (or, largest, the k largest) values
// offered, in a heap whose root is the k-th: the bound.
type extremes struct {
	k       int
	largest bool
	heap    []float64
}

func newExtremes(k int, largest bool) extremes {
	h := make([]float64, k)
	fill := math.Inf(1)
	if largest {
		fill = math.Inf(-1)
	}
	for i := range h {
		h[i] = fill
	}
	return extremes{k: k, largest: largest, heap: h}
}

// offer considers v; the root is the worst kept value, replaced when v is
// better.
func (e *extremes) offer(v float64) {
	if (e.largest && v > e.heap[0]) || (!e.largest && v < e.heap[0]) {
		e.replace(v)
	}
}

// replace puts v in the root's place, restores the heap and returns the
// new root.
func (e *extremes) replace(v float64) float64 {
	h := e.heap
	if e.largest {
		// min-heap on the k largest
		i := 0
		for {
			l := 2*i + 1
			if l >= len(h) {
				break
			}
			if r := l + 1; r < len(h) && h[r] < h[l] {
				l = r
			}
			if h[l] >= v {
				break
			}
			h[i] = h[l]
			i = l
		}
		h[i] = v
		return h[0]
	}
	// max-heap on the k smallest
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		if r := l + 1; r < len(h) && h[r] > h[l] {
			l = r
		}
		if h[l] <= v {
			break
		}
		h[i] = h[l]
		i = l
	}
	h[i] = v
	return h[0]
}

// bound is the k-th smallest (largest) value offered.
func (e *extremes) bound() float64 { return e.heap[0] }
