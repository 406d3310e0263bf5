// Package paired decides, metric by metric, whether a candidate (the
// scenario as it is now, or another Karpenter build) is slower or hungrier
// than a reference (the baseline's recorded inputs) when both run
// interleaved in one invocation on one machine: blocks A B, B A, A B, …
// Each block gives every metric one pair (ref_i, cand_i). The package is
// the statistics only; it runs nothing.
//
// # Log ratios
//
// Each pair becomes d_i = ln(cand_i/ref_i). A machine that is slow or busy
// during a block multiplies both of its runs, so the factor cancels in d_i;
// a machine that drifts across blocks changes the sizes |d_i|, which the
// test conditions on. Ratio is exp(mean d), the geometric mean of the
// pairs' ratios.
//
// # The test
//
// H0 for a metric: the candidate is not slower. Under exchangeable arms
// (the candidate is the reference under another name), given |d_1| … |d_n|
// the signs of the d_i are independent fair coins, so all 2^n sign vectors
// are equally likely. The statistic is the mean of d. Flipping the signs
// of the pairs in a set T lowers the sum by 2·Σ_T d, so the one-sided
// p-value is
//
//	P = #{T : Σ_{i∈T} d_i ≤ 0} / 2^n      (T = ∅, the observed signs, included)
//
// exact for any distribution of the noise. Up to ExactPairs (16) pairs all
// 2^n sets are enumerated; above, MonteCarloDraws random sets from a fixed
// seed are, and P = (1 + #)/(draws + 1), still valid. P can only fall when
// a d_i grows, so the level also holds when the candidate is stochastically
// faster (the composite H0 "centre of d ≤ 0"). Sums within 1e-9·Σ|d_i| of 0
// count as ties, against the candidate: rounding never adds a rejection.
//
// # The interval
//
// The same test applied to d − μ asks whether the log ratio's centre
// exceeds μ; it counts the T with Σ_T (d_i − μ) ≤ 0, that is with subset
// mean mean_T(d) ≤ μ. So it rejects at level k/2^n exactly the μ below the
// k-th smallest of the 2^n − 1 subset means (Hartigan's subset means), and
// the two-sided interval at confidence c is
//
//	[exp M_(k), exp M_(2^n−k)],  k = ⌊(1−c)/2 · 2^n⌋,
//
// with [0, ∞] when k = 0 (fewer than 6 pairs at 95%). It is the inversion
// of the test, not a separate model: Lo > 1 happens exactly when
// P ≤ (1−c)/2 (up to ties), and the point estimate (the mean) lies inside.
// Walsh averages with the signed-rank test would estimate the median
// instead and invert a different test; Hodges–Lehmann's robustness matters
// less here than that "significant" and "the interval excludes 1" never
// disagree. Coverage is at least c, for any symmetric noise, when the
// effect is a constant factor (cand = ratio × an exchangeable copy of ref).
//
// # Metrics, looks and decisions
//
// The m metrics of one Test call are adjusted together (AdjustedP) by
// Westfall and Young's step-down max-T over the same sign vectors, each
// applied to whole blocks: flipping block i swaps its two runs for every
// metric at once, as exchangeable arms would. Each metric's statistic is
// its studentised sum z = Σd/‖d‖ (‖d‖ is fixed under flips, so z orders
// the sign vectors as the mean does and the marginal test is unchanged).
// With the metrics ordered by observed z, the k-th one's adjusted p is the
// share of sign vectors whose largest z among the k-th and later metrics
// reaches its observed z, made monotone in that order. A verification
// looks at its data after a planned number of pairs n_1 < … < n_L (the
// Schedule), spending α_j at look j, Σ α_j = α. At each Test call a
// metric is
//
//   - "no-regression" when Hi < Margin: any regression is smaller than
//     the one that matters (this wins over a significant but smaller one);
//   - "regressed" when this is a planned look, AdjustedP ≤ α_j and Lo > 1;
//   - "undecided" otherwise.
//
// NeedMore asks for another block while some metric is undecided, none is
// regressed and the cap is not reached.
//
// Why the joint test and not Holm: Holm needs nothing about how the
// metrics depend on each other, and pays for it: its first step is m·p,
// so with 12 metrics nothing could be declared before 2^-n ≤ α/12. The
// metrics here are far from independent (one block's pod-ready p50 and
// p90 and its scheduling latency move together), and the joint test's
// reference distribution keeps that dependence: metrics that move together
// are not charged for their number, and its smallest adjusted p is 2^-n
// whatever m. Where the metrics are independent it charges about what
// Bonferroni would (TestSimulationPower measures that worst case).
//
// # Error control
//
// Guarantee: in one verification, the probability that any metric whose
// candidate is not slower is declared regressed, at any look, is at most
// Alpha (default 1%). It holds for any noise distribution, any dependence
// between the metrics, any machine factor shared by the two runs of a
// block, any drift from block to block, and any stopping rule: it is the
// step-down max-T's family-wise bound at each look, summed over the looks
// (a union bound, which needs nothing about how the looks are
// correlated), and stopping early only removes chances to err.
//
// Condition: within each block the arms are exchangeable for the metrics
// whose candidate is not slower, jointly: swapping a block's two runs
// leaves the joint distribution of those metrics' log ratios unchanged.
// (This is subset pivotality: the max over the true nulls has the same
// sign-flip distribution whatever the regressed metrics do.) Holm asked
// for the same exchangeability one metric at a time; a candidate that is
// the reference under another name meets both. Strict A B / B A
// alternation balances a first-run/second-run effect but does not make it
// vanish; drawing each block's order with a fair coin makes the condition
// hold by design, with alternation it is an assumption (no order effect,
// no carry-over from one run to the next).
//
// Not covered: regressions declared at pair counts outside the schedule
// (Test never declares them), options chosen after seeing the data, and
// re-running a verification until it passes or fails. The "no-regression"
// verdict is a claim about noise, not a false alarm, and is not corrected
// for metrics or looks: a metric whose true ratio is exactly the margin is
// cleared at a given look with probability at most (1−Confidence)/2.
//
// # Spending
//
// The final look, at MaxPairs, spends FinalShare (default 3/4) of α; the
// interim looks split the rest equally. By default the interim looks are
// every pair count from the first at which that split can reject at all
// up to MaxPairs−1; when none can (few pairs) the final look spends all
// of α. The schedule depends only on the options, never on the data.
// Rationale: exact p-values cannot go below 2^-n, so an interim look can
// stop only a large regression, and only a few pairs early; a passing
// verification stops early only by clearing every metric, which spends no
// α. Equal Bonferroni over every look would move the power away from the
// cap where it is needed. A single look (WithInterimLooks() with no
// pairs) maximises the power at a given cap.
//
// # Confidence
//
// The default is 0.95, not 1−α: the interval is a report and the clearing
// rule, and at 0.95 it is finite from 6 pairs (0.99 needs 8) and narrower,
// so metrics clear sooner. It does not weaken the false-alarm bound: a
// regression needs AdjustedP ≤ α_j, stricter than the interval's
// one-sided 2.5% whenever α_j ≤ 0.025; "Lo > 1" only keeps a verdict from
// being shown with an interval that contains 1.
//
// # The price of exactness
//
// The smallest adjusted P is 2^-n, so nothing can be declared before
// 2^-n ≤ α_j. MinPairs gives the first look that can; a caller must refuse
// a verification whose cap is below it. At α = 1%, for any number of
// metrics: a single look needs 7 pairs; the default schedule's first look
// is at 10 pairs with a cap of 12, 11 with a cap of 16 (looks 11–16) and
// 12 with a cap of 20. (Holm needed 11, 12, 14 and 15 for 12 metrics.)
//
// Measured power (simulation in the tests: per-run noise CV 10%, machine
// factor CV 20% shared within a block, 12 independent metrics, one at
// 1.25×, α = 1%, 1000 verifications each): 80.9% at the default cap of 12
// (Holm: 77%), 87% at 13, 92% at 14 and 97.7% at 16, which stops at 13.5
// pairs on average (Holm: 14.9). A single look reaches 94.4% at a cap of
// 14. So the target of 95% power at 1.25× with CV 10% still takes
// WithMaxPairs(16) when the metrics are independent; the joint test's
// gain there is the earlier stop. Under the null the same simulation
// raised 4 to 7 false alarms in 1000 verifications at caps 8 to 16.
// With CV 10% per run a 1.10 margin clears a metric at 12 pairs only
// about half the time, so passing verifications usually end at the cap
// with some metrics undecided, which a caller must report as such.
//
// Cost: 2^n sign vectors per look, each updating the m sums (12 metrics at
// 16 pairs: a few ms), and MonteCarloDraws·n·m operations above 16 pairs.
package paired
