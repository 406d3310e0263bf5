package paired

import (
	"fmt"
	"math"
	"slices"
)

// Defaults of the options.
const (
	// DefaultAlpha is the family-wise false-alarm rate of one
	// verification: all metrics, all looks.
	DefaultAlpha = 0.01
	// DefaultMargin is the smallest regression that matters, as a ratio.
	DefaultMargin = 1.10
	// DefaultMaxPairs is the cap on pairs (blocks) per verification.
	DefaultMaxPairs = 12
	// DefaultConfidence is the two-sided level of the ratio's interval.
	DefaultConfidence = 0.95
	// DefaultFinalShare is the share of alpha kept for the final look.
	DefaultFinalShare = 0.75
)

// Option changes a setting of Test, MinPairs and Schedule.
type Option func(*config)

type config struct {
	alpha      float64
	margin     float64
	maxPairs   int
	confidence float64
	finalShare float64
	interim    []int // nil: automatic
	interimSet bool
}

func defaults() config {
	return config{alpha: DefaultAlpha, margin: DefaultMargin, maxPairs: DefaultMaxPairs,
		confidence: DefaultConfidence, finalShare: DefaultFinalShare}
}

// WithAlpha sets the family-wise false-alarm rate of one verification, in
// (0, 0.5]: the chance that any metric whose candidate is not slower is
// declared regressed at any look. Default 0.01.
func WithAlpha(a float64) Option { return func(c *config) { c.alpha = a } }

// WithMargin sets the smallest regression that matters, as a ratio above
// 1: a metric whose interval lies wholly below it is "no-regression".
// Default 1.10.
func WithMargin(r float64) Option { return func(c *config) { c.margin = r } }

// WithMaxPairs sets the cap on pairs: the final look, where the
// verification stops whatever is undecided. Default 12.
func WithMaxPairs(n int) Option { return func(c *config) { c.maxPairs = n } }

// WithConfidence sets the two-sided level of the ratio's interval, in
// [0.5, 1). Default 0.95 (see the package doc for why not 1−alpha).
func WithConfidence(c float64) Option { return func(cf *config) { cf.confidence = c } }

// WithFinalShare sets the share of alpha spent at the final look (the
// cap), in (0, 1]; the interim looks split the rest equally. When there
// are no interim looks the final look spends all of alpha whatever the
// share. Default 0.75.
func WithFinalShare(w float64) Option { return func(c *config) { c.finalShare = w } }

// WithInterimLooks sets the pair counts, below the cap, at which a
// regression may be declared before the cap; with none, only the cap can
// declare one (a single-look test: all of alpha at the cap). Default:
// every pair count from the first at which an interim look can reject at
// all (its share of alpha reaches the smallest adjusted p-value) up to the cap minus one.
func WithInterimLooks(pairs ...int) Option {
	return func(c *config) { c.interim, c.interimSet = slices.Clone(pairs), true }
}

func newConfig(opts []Option) (config, error) {
	c := defaults()
	for _, o := range opts {
		o(&c)
	}
	switch {
	case !(c.alpha > 0 && c.alpha <= 0.5):
		return c, fmt.Errorf("%w: alpha %v outside (0, 0.5]", ErrOption, c.alpha)
	case !(c.margin > 1) || math.IsInf(c.margin, 0):
		return c, fmt.Errorf("%w: margin %v not a finite ratio above 1", ErrOption, c.margin)
	case c.maxPairs < 1:
		return c, fmt.Errorf("%w: cap of %d pairs", ErrOption, c.maxPairs)
	case !(c.confidence >= 0.5 && c.confidence < 1):
		return c, fmt.Errorf("%w: confidence %v outside [0.5, 1)", ErrOption, c.confidence)
	case !(c.finalShare > 0 && c.finalShare <= 1):
		return c, fmt.Errorf("%w: final share %v outside (0, 1]", ErrOption, c.finalShare)
	}
	for i, n := range c.interim {
		if n < 1 || n >= c.maxPairs || (i > 0 && n <= c.interim[i-1]) {
			return c, fmt.Errorf("%w: interim looks %v must increase strictly within [1, %d)", ErrOption, c.interim, c.maxPairs)
		}
	}
	return c, nil
}

// Look is one planned look: after Pairs pairs, a regression may be
// declared when its adjusted p-value is at most Alpha, this look's
// share of the verification's alpha.
type Look struct {
	Pairs int
	Alpha float64
}

// Schedule is the planned looks of a verification of metrics metrics under
// opts, in order; their Alpha add up to the verification's alpha. It
// depends only on the options (the joint test's smallest p-value does not
// depend on the number of metrics), never on data, which the error bound
// requires.
func Schedule(metrics int, opts ...Option) ([]Look, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if metrics < 1 {
		return nil, fmt.Errorf("%w: no metrics", ErrInput)
	}
	return c.schedule(), nil
}

func (c config) schedule() []Look {
	interim := c.interim
	if !c.interimSet {
		interim = nil
		spend := c.alpha * (1 - c.finalShare)
		for n0 := 1; n0 < c.maxPairs && spend > 0; n0++ {
			if c.canReject(n0, spend/float64(c.maxPairs-n0)) {
				for n := n0; n < c.maxPairs; n++ {
					interim = append(interim, n)
				}
				break
			}
		}
	}
	if len(interim) == 0 {
		return []Look{{Pairs: c.maxPairs, Alpha: c.alpha}}
	}
	var looks []Look
	each := c.alpha * (1 - c.finalShare) / float64(len(interim))
	for _, n := range interim {
		looks = append(looks, Look{Pairs: n, Alpha: each})
	}
	return append(looks, Look{Pairs: c.maxPairs, Alpha: c.alpha * c.finalShare})
}

// canReject reports whether a look after n pairs that spends alpha can
// declare a regression at all: the smallest p-value
// (one sign vector of the reference distribution, whatever the number of
// metrics under the joint test) must reach it, and the interval's lower
// bound must be able to exceed 1.
func (c config) canReject(n int, alpha float64) bool {
	outOf := reference(n)
	return atMost(1/float64(outOf), alpha) && tailRank(c.confidence, outOf) >= 1
}

// atMost compares a p-value with a level, forgiving the last bits of
// rounding so that MinPairs and Test agree.
func atMost(p, level float64) bool { return p <= level*(1+1e-12) }

// MinPairs is the smallest number of pairs with which a regression among
// metrics metrics can be declared at all under opts: the first planned look
// whose share of alpha the smallest adjusted p-value (2^-n, or
// 1/(MonteCarloDraws+1) above ExactPairs, for any number of metrics)
// reaches. It is 0 when no look can (the cap is too low for that alpha),
// when metrics is below 1 or when the options are invalid; a caller must
// refuse such a verification, which could only ever pass or be undecided.
// With the defaults (cap 12) it is 9; the package doc has a table.
func MinPairs(metrics int, opts ...Option) int {
	c, err := newConfig(opts)
	if err != nil || metrics < 1 {
		return 0
	}
	return c.minPairs(c.schedule())
}

// minPairs is MinPairs on a parsed configuration and its schedule.
func (c config) minPairs(looks []Look) int {
	for _, l := range looks {
		if c.canReject(l.Pairs, l.Alpha) {
			return l.Pairs
		}
	}
	return 0
}
