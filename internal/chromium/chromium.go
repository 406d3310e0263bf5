// Package chromium opens pages in headless Chromium for tests (Debian's
// chromium, driven with chromedp), collecting console errors, warnings and
// uncaught exceptions. Tests fail rather than skip when Chromium is
// missing: .ci/run installs it.
package chromium

import (
	"context"
	"iter"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path finds Chromium: $CHROMIUM, else chromium or chromium-browser on PATH.
func Path(t testing.TB) string {
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

// Page is a tab with the page loaded.
type Page struct {
	Ctx      context.Context
	t        testing.TB
	messages iter.Seq2[chromedp.ConsoleMessage, error]
}

// Open starts a headless Chromium (closed by t.Cleanup) and loads url,
// waiting for ready (a CSS selector) to be visible.
//
// The browser is started on its own first, and a failed start is retried
// with a fresh allocator: chromedp starts a second browser process for a
// context whose first start failed, and the two then close one channel
// twice and crash the test binary (seen under -race on 2 cores).
func Open(t testing.TB, url, ready string) *Page {
	t.Helper()
	var ctx context.Context
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if ctx, err = start(t); err == nil {
			break
		}
		t.Logf("chromium did not start (attempt %d of 3): %v", attempt, err)
	}
	if err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	p := &Page{Ctx: ctx, t: t, messages: chromedp.Console(ctx)}
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(ready))); err != nil {
		t.Fatalf("chromium on %s: %v", url, err)
	}
	return p
}

// start starts a browser with a blank tab; its contexts end with the test.
func start(t testing.TB) (context.Context, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(t)), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancel(); cancelTab(); cancelAlloc() })
	// Do with no action starts the browser and attaches the tab.
	return ctx, chromedp.Do(ctx)
}

// Do runs actions.
func (p *Page) Do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.Ctx, actions...); err != nil {
		p.t.Fatalf("chromium: %v", err)
	}
}

// Eval evaluates JavaScript in the page.
func Eval[T any](p *Page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// Problems are the console errors, warnings and exceptions so far.
func (p *Page) Problems() []string {
	p.t.Helper()
	// A marker ends the read: everything logged before it has arrived.
	Eval[bool](p, `console.info("nodeprint-test-end"), true`)
	var out []string
	for m, err := range p.messages {
		if err != nil {
			p.t.Fatalf("reading the console: %v", err)
		}
		if m.Text == "nodeprint-test-end" {
			break
		}
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
			out = append(out, m.String())
		}
	}
	return out
}
