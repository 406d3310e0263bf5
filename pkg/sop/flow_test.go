package sop

import (
	"html"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/attribute"
)

// The flow chart draws the decision order from attribute.Fallbacks: every
// step has its question (all but the last) and its verdict in both
// languages, and the generated index shows each of them.
func TestTheFlowChartDrawsEveryFallbackStep(t *testing.T) {
	s := &site{lang: "en", in: &Input{Rules: &attribute.RuleSet{}}}
	chart, drawing := mermaid(s), svg(s)
	for i, st := range attribute.Fallbacks {
		keys := []string{"step." + st.ID + ".verdict"}
		if i < len(attribute.Fallbacks)-1 {
			keys = append(keys, "step."+st.ID)
		}
		for _, k := range keys {
			for _, l := range []string{"en", "zh"} {
				if m := msg(l, k); strings.HasPrefix(m, "!") || m == "" {
					t.Errorf("no %s text for %s", l, k)
				}
			}
			// the SVG wraps long lines: its first line must be there
			if en := msg("en", k); !strings.Contains(chart, en) || !strings.Contains(drawing, html.EscapeString(wrap(en, 40)[0])) {
				t.Errorf("the flow chart does not show %q", en)
			}
		}
	}
}
