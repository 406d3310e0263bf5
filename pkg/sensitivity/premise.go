package sensitivity

import (
	"fmt"
	"math"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// The paired test's false-alarm bound is a theorem under one premise:
// within a block the two arms are exchangeable, so that each block's sign
// of ln(cand/ref) is a fair coin for a candidate that is the reference
// under another name. Counting failed A/A verifications measures the
// rate itself, and at 1% that needs hundreds of them. The premise can be
// read from far fewer blocks: in every A/A pool, each metric's one-sided
// sign-flip p-value over all its blocks is uniform (or larger) when the
// premise holds, and pools are independent of one another. A metric whose
// pools' p-values run small across pools leans towards a slower
// candidate by something other than chance: an order effect, carry-over,
// or a harness that treats the arms differently.

// PremiseRow is one metric's premise check across A/A pools.
type PremiseRow struct {
	Metric string
	// Pools is the number of pools with the metric in every block; Small
	// how many of them gave a one-sided p-value of at most SmallP.
	Pools, Small int
	// Lowest is the smallest of those p-values, with its pool.
	Lowest     float64
	LowestPool string
	// Fisher is Fisher's combination of the pools' p-values,
	// -2 Σ ln p against χ² with 2·Pools degrees of freedom: the chance of
	// p-values this small together if the premise holds. Conservative:
	// exact sign-flip p-values are discrete and never below their
	// uniform counterparts.
	Fisher float64
}

// SmallP is the p-value PremiseRow.Small counts: under the premise at
// most 5% of pools reach it.
const SmallP = 0.05

// Premise reads every A/A pool (a condition without a target) of pools
// and checks the premise metric by metric. scenarioOf gives a pool's
// scenario (the judge's settings for it). Rows are in the order the
// metrics first appear.
func Premise(pools []Pool, scenarioOf func(name string) (*scenario.Scenario, error)) ([]PremiseRow, error) {
	var order []string
	rows := map[string]*PremiseRow{}
	logs := map[string]float64{}
	for _, p := range pools {
		if p.Condition.Target != "" || len(p.Pairs) == 0 {
			continue
		}
		s, err := scenarioOf(p.Scenario)
		if err != nil {
			return nil, err
		}
		res, err := look(s, len(p.Pairs), p.Pairs)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", p.Scenario, p.Condition.Name, err)
		}
		for _, m := range res.Metrics {
			r, ok := rows[m.Name]
			if !ok {
				r = &PremiseRow{Metric: m.Name, Lowest: 1}
				rows[m.Name] = r
				order = append(order, m.Name)
			}
			r.Pools++
			if m.P <= SmallP {
				r.Small++
			}
			if m.P < r.Lowest {
				r.Lowest, r.LowestPool = m.P, fmt.Sprintf("%s, %s", p.Scenario, p.Condition.Name)
			}
			logs[m.Name] += math.Log(m.P)
		}
	}
	out := make([]PremiseRow, 0, len(order))
	for _, name := range order {
		r := rows[name]
		r.Fisher = chiSquareEvenSurvival(-2*logs[name], 2*r.Pools)
		out = append(out, *r)
	}
	return out, nil
}

// chiSquareEvenSurvival is P(X ≥ x) for X ~ χ² with df degrees of
// freedom, df even: e^(-x/2) Σ_{j<df/2} (x/2)^j / j!.
func chiSquareEvenSurvival(x float64, df int) float64 {
	if x <= 0 {
		return 1
	}
	h := x / 2
	term, sum := 1.0, 1.0
	for j := 1; j < df/2; j++ {
		term *= h / float64(j)
		sum += term
	}
	return math.Min(1, math.Exp(-h)*sum)
}

// PremiseTable is the rows as Markdown, with what they mean.
func PremiseTable(rows []PremiseRow) string {
	var sb strings.Builder
	sb.WriteString("The paired test's premise across the A/A pools: per metric, the pools whose own one-sided sign-flip p-value over all their blocks is at most 0.05 (under the premise about 5% of them), the lowest, and all pools combined (Fisher; small: the metric leans towards a slower candidate across pools, beyond chance).\n\n")
	sb.WriteString("| metric | pools at p ≤ 0.05 | lowest p (pool) | combined p |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %d of %d | %.3f (%s) | %.3f |\n", r.Metric, r.Small, r.Pools, r.Lowest, r.LowestPool, r.Fisher)
	}
	return sb.String()
}
