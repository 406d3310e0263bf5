package sop_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nodeprint/nodeprint/internal/chromium"
	"github.com/nodeprint/nodeprint/pkg/sop"
)

// The HTML runbook opens in headless Chromium without console errors or
// exceptions, draws the flowchart, and its search finds a rule by name.
func TestHTMLRunbookInChromium(t *testing.T) {
	in := repoInput(t)
	dir := t.TempDir()
	if err := sop.Write(dir, generate(t, in)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ lang, query, rule, other string }{
		{"en", "L3-oom-killed", "L3-oom-killed", "L1-slow-boot"},
		{"zh", "节点被循环替换", "L2-disruption-churn", "L3-oom-killed"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			p := chromium.Open(t, "file://"+filepath.Join(dir, c.lang, "runbook.html"), "#search")
			p.Do(chromedp.SendKeys(chromedp.ID("search"), c.query))
			sections := chromium.Eval[int](p, `document.querySelectorAll("main > section").length`)
			flowBoxes := chromium.Eval[int](p, `new Set(Array.from(document.querySelectorAll("#index svg.flow a")).map(a => a.getAttribute("href"))).size`)
			visible := chromium.Eval[[]string](p, `Array.from(document.querySelectorAll("main > section")).filter(s => !s.hidden).map(s => s.id)`)
			count := chromium.Eval[string](p, `document.getElementById("search-count").textContent`)
			if problems := p.Problems(); len(problems) > 0 {
				t.Errorf("console errors or exceptions:\n%s", strings.Join(problems, "\n"))
			}
			if want := 1 + len(in.Rules.Rules) + len(in.Baselines); sections != want {
				t.Errorf("%d sections, want %d", sections, want)
			}
			if flowBoxes != len(in.Rules.Rules) {
				t.Errorf("the flowchart links %d rules, want %d", flowBoxes, len(in.Rules.Rules))
			}
			if !slices.Contains(visible, "rule-"+c.rule) || slices.Contains(visible, "rule-"+c.other) {
				t.Errorf("search %q shows %v: want rule-%s and not rule-%s", c.query, visible, c.rule, c.other)
			}
			if !strings.HasPrefix(count, fmt.Sprint(len(visible))+" ") {
				t.Errorf("search count %q, %d sections visible", count, len(visible))
			}
		})
	}
}
