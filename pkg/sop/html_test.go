package sop_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nodeprint/nodeprint/pkg/sop"
)

// chromium finds Debian's Chromium (CHROMIUM overrides). The browser test
// does not skip when it is missing: .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: install Debian's chromium (apt-get install chromium; .ci/run does) or set CHROMIUM")
	return ""
}

// The HTML runbook opens in headless Chromium without console errors or
// exceptions, draws the flowchart, and its search finds a rule by name.
func TestHTMLRunbookInChromium(t *testing.T) {
	exe := chromium(t)
	in := repoInput(t)
	files := generate(t, in)
	dir := t.TempDir()
	if err := sop.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	for _, c := range []struct{ lang, query, rule, other string }{
		{"en", "L3-oom-killed", "L3-oom-killed", "L1-slow-boot"},
		{"zh", "节点被循环替换", "L2-disruption-churn", "L3-oom-killed"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(actx)
			defer cancel()
			ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			messages := chromedp.Console(ctx)
			url := "file://" + filepath.Join(dir, c.lang, "runbook.html")
			if err := chromedp.Do(ctx,
				chromedp.Navigate(url),
				chromedp.WaitVisible(chromedp.ID("search")),
				chromedp.SendKeys(chromedp.ID("search"), c.query),
			); err != nil {
				t.Fatalf("chromium on %s: %v", url, err)
			}
			sections := evaluate[int](ctx, t, `document.querySelectorAll("main > section").length`)
			flowBoxes := evaluate[int](ctx, t, `new Set(Array.from(document.querySelectorAll("#index svg.flow a")).map(a => a.getAttribute("href"))).size`)
			visible := evaluate[[]string](ctx, t, `Array.from(document.querySelectorAll("main > section")).filter(s => !s.hidden).map(s => s.id)`)
			count := evaluate[string](ctx, t, `document.getElementById("search-count").textContent`)
			// A marker ends the console stream read: everything the page
			// logged before it has been delivered by then.
			evaluate[bool](ctx, t, `console.info("nodeprint-test-end"), true`)
			var problems []string
			for m, err := range messages {
				if err != nil {
					t.Fatalf("reading the console: %v", err)
				}
				if m.Text == "nodeprint-test-end" {
					break
				}
				if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
					problems = append(problems, m.String())
				}
			}
			if len(problems) > 0 {
				t.Errorf("console errors or exceptions:\n%s", strings.Join(problems, "\n"))
			}
			if want := 1 + len(in.Rules.Rules) + len(in.Baselines); sections != want {
				t.Errorf("%d sections, want %d", sections, want)
			}
			if flowBoxes != len(in.Rules.Rules) {
				t.Errorf("the flowchart has %d rule boxes, want %d", flowBoxes, len(in.Rules.Rules))
			}
			if !contains(visible, "rule-"+c.rule) || contains(visible, "rule-"+c.other) {
				t.Errorf("search %q shows %v: want rule-%s and not rule-%s", c.query, visible, c.rule, c.other)
			}
			if !strings.HasPrefix(count, fmt.Sprint(len(visible))+" ") {
				t.Errorf("search count %q, %d sections visible", count, len(visible))
			}
		})
	}
}

func evaluate[T any](ctx context.Context, t *testing.T, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}
