package sensitivity

import (
	"fmt"
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
