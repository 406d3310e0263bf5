package sensitivity

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Table renders the cells as Markdown: one row per scenario and
// condition, one column per mode, each the share of verifications that
// failed on latencies or usage and, in brackets, the mean runs taken.
func Table(cells []Cell, recorded, trials int) string {
	var modes []string
	type key struct{ scenario, condition string }
	var rows []key
	byKey := map[key]map[string]Cell{}
	for _, c := range cells {
		k := key{c.Scenario, c.Condition}
		if byKey[k] == nil {
			byKey[k] = map[string]Cell{}
			rows = append(rows, k)
		}
		byKey[k][c.Mode] = c
		if !contains(modes, c.Mode) {
			modes = append(modes, c.Mode)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Share of verifications failed on latencies or Karpenter's usage (mean runs per verification), %d resamples each, baselines of %d runs.\n", trials, recorded)
	fmt.Fprintf(&sb, "Under \"%s\" rows it is the false-alarm rate; under a slowdown, the power.\n\n", Unchanged)
	fmt.Fprintf(&sb, "The realized factor is the slowed runs' median of the target over the unchanged runs'.\n\n")
	fmt.Fprintf(&sb, "| scenario | condition | realized | %s |\n|---|---|---|%s\n", strings.Join(modes, " | "), strings.Repeat("---|", len(modes)))
	for _, k := range rows {
		realized := "–"
		for _, c := range byKey[k] {
			if c.Realized > 0 {
				realized = fmt.Sprintf("×%.2f", c.Realized)
			}
		}
		fmt.Fprintf(&sb, "| %s | %s | %s |", k.scenario, k.condition, realized)
		for _, m := range modes {
			c := byKey[k][m]
			fmt.Fprintf(&sb, " %.1f%% (%.2f) |", 100*c.Rate, c.MeanRuns)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The targets: power for a regression of at least TargetFactor
// (1.25× a latency, 1.5× Karpenter's CPU or memory), false alarms at most
// TargetFalseAlarm.
const (
	TargetPower      = 0.95
	TargetFalseAlarm = 0.01
)

// targetFactor is the smallest regression of path the power target is
// stated for.
func targetFactor(path string) float64 {
	if strings.HasPrefix(path, "karpenter.") {
		return 1.5
	}
	return 1.25
}

// Meets says whether a cell meets its target.
//
// An A/A condition: the paired test keeps its false alarms at most
// TargetFalseAlarm when the arms are exchangeable (pkg/paired's
// simulations check that), so what a pool can test is whether they are
// here: met when none of the pool's independent verifications failed and
// its lean is one chance gives exchangeable arms (Lean ≥ LeanLevel). The
// replayed rate is not the criterion: it follows the pool's chance lean
// (see ReplayPaired). Met is not a measured 1%: that would take hundreds
// of independent verifications.
//
// A lever whose realized factor reached its target factor (within 2%: the
// lever asked for 1.25× a median, the pairs measured 1.245×): caught (the
// verification failed on a regression) in at least TargetPower of
// verifications. A verification stops at its first regression, often on
// another metric the lever slows (a slower launch shows first in the
// launch latency), so the target's own share is a lower bound and not the
// criterion. ok is false for a lever that realized less than its target
// factor (measured, no target: a usage 1.3× is below the 1.5× that
// matters, and verification rightly passes it).
func (c PairedCell) Meets() (meets, ok bool) {
	if c.Condition.Target == "" {
		return c.DisjointFailed == 0 && c.Lean >= LeanLevel, true
	}
	if c.Realized < 0.98*targetFactor(c.Condition.Target) {
		return false, false
	}
	return c.Failed >= TargetPower, true
}

// PairedTable renders the cells as Markdown, one row per scenario and
// condition.
func PairedTable(cells []PairedCell, trials int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Paired verifications replayed from each pool (%d each, blocks drawn with replacement in verify's order, stopping where verify stops).\n", trials)
	fmt.Fprintf(&sb, "caught: the share that failed on a regression (under an A/A condition, a false alarm; that rate follows the pool's chance lean and is biased up); target: the share that declared the lever's target regressed before stopping; declared: each metric's share.\n")
	fmt.Fprintf(&sb, "independent: the pool's own verifications end to end, failed of run; lean (A/A): the pool's own joint test of all its blocks at once, how often exchangeable arms lean as far towards a slower candidate on a metric the pool does not clear below its margin (below %.2f: one arm favoured).\n", LeanLevel)
	fmt.Fprintf(&sb, "target: %.0f%% power at 1.25× a latency and 1.5× Karpenter's CPU or memory, at most %.0f%% false alarms.\n\n", 100*TargetPower, 100*TargetFalseAlarm)
	sb.WriteString("| scenario | condition | lever | target | realized | caught | target | pairs | min | independent | lean | target met | declared | the pool's first pairs, tested once |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		target, realized, power := "–", "–", "–"
		if c.Condition.Target != "" {
			target, realized, power = c.Condition.Target, fmt.Sprintf("×%.2f", c.Realized), fmt.Sprintf("%.1f%%", 100*c.Power)
		}
		met := "–"
		if m, ok := c.Meets(); ok {
			met = map[bool]string{true: "yes", false: "**no**"}[m]
		}
		lean := "–"
		if c.Lean >= 0 && c.Condition.Target == "" {
			lean = fmt.Sprintf("%.2f (%s)", c.Lean, c.Leaning)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %.1f%% | %s | %.1f | %.1f | %d of %d | %s | %s | %s | %s |\n", c.Scenario, c.Condition.Name, leverOf(c.Condition),
			target, realized, 100*c.Failed, power, c.MeanPairs, c.Minutes, c.DisjointFailed, c.Disjoint, lean, met, declared(c.Regressed), c.Whole)
	}
	return sb.String()
}

func leverOf(c Condition) string {
	l := c.Lever
	var parts []string
	if l.LaunchDelay > 0 {
		parts = append(parts, "launch +"+l.LaunchDelay.String())
	}
	if l.DecisionDelay > 0 {
		parts = append(parts, "decision +"+l.DecisionDelay.String())
	}
	if l.CPUFactor > 1 {
		parts = append(parts, fmt.Sprintf("CPU ×%g", l.CPUFactor))
	}
	if l.MemoryMiB > 0 {
		parts = append(parts, fmt.Sprintf("memory +%d MiB", l.MemoryMiB))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	if c.Load {
		parts = append(parts, "one core busy")
	}
	return strings.Join(parts, ", ")
}

// declared lists the metrics declared regressed, the most often first,
// with their shares.
func declared(shares map[string]float64) string {
	names := slices.Collect(maps.Keys(shares))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(shares[b], shares[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", n, 100*shares[n]))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}
