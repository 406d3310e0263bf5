package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed runbooks must be what the rules and fingerprints generate:
// a rule or a fingerprint changed without `make sop` fails here.
func TestCommittedRunbooksAreCurrent(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"sop", "--check"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, errOut.String())
	}
}

// sop --check against runbooks written before a threshold changed: the
// failure names the changed pages and says to run make sop.
func TestSOPCheckReportsStaleRunbooks(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"sop", "--out", dir}, &out, &errOut); code != exitOK {
		t.Fatalf("sop: exit %d:\n%s", code, errOut.String())
	}
	// Hand-edit a generated page as a stale checkout would have it.
	page := filepath.Join(dir, "en", "rules", "L1-apiserver-degraded.md")
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, bytes.Replace(b, []byte("≥ 5"), []byte("≥ 3"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "en", "rules", "L9-gone.md"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code := run(context.Background(), []string{"sop", "--check", "--out", dir}, &out, &errOut)
	if code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, errOut.String())
	}
	for _, want := range []string{"run `make sop`", "changed en/rules/L1-apiserver-degraded.md", "extra en/rules/L9-gone.md"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut.String())
		}
	}
	// Writing again removes the stale page and leaves the runbooks current.
	if code := run(context.Background(), []string{"sop", "--out", dir}, &out, &errOut); code != exitOK {
		t.Fatalf("sop: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "en", "rules", "L9-gone.md")); !os.IsNotExist(err) {
		t.Errorf("stale page not removed: %v", err)
	}
}

func TestSOPBadInput(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	fps := t.TempDir()
	if err := os.WriteFile(filepath.Join(fps, "web.yaml"), []byte("schemaVersion: 1\nscenario: web\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	cases := []struct {
		args    []string
		message string
	}{
		{[]string{"sop", "--lang", "fr", "--out", t.TempDir()}, `unknown language "fr"`},
		{[]string{"sop", "--fingerprints", fps, "--out", t.TempDir()}, "web.yaml"},
		{[]string{"sop", "--fingerprints", empty, "--out", t.TempDir()}, "holds no baseline"},
		{[]string{"sop", "--scenarios", filepath.Join(empty, "nope"), "--out", t.TempDir()}, "failed to read scenarios"},
		{[]string{"sop", "extra"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), c.args, &out, &errOut); code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.message) {
				t.Fatalf("stderr %q does not say %q", errOut.String(), c.message)
			}
		})
	}
}

// A team's own scenarios and fingerprints give runbooks with that team's
// numbers and nothing of the repository's.
func TestSOPTailoredToATeamsFingerprints(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	scen, fps, out := t.TempDir(), t.TempDir(), t.TempDir()
	copyFile(t, "../../fixtures/scenarios/web-service.yaml", filepath.Join(scen, "web-service.yaml"), nil)
	copyFile(t, "../../fingerprints/web-service.yaml", filepath.Join(fps, "web-service.yaml"),
		func(b []byte) []byte {
			return bytes.Replace(b, []byte("hourlyCost: 0.4344"), []byte("hourlyCost: 9.8765"), 1)
		})
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"sop", "--scenarios", scen, "--fingerprints", fps, "--out", out}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(out, "en", "baselines", "web-service.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("$9.8765")) {
		t.Errorf("the baseline page does not show the team's cost:\n%s", page)
	}
	if entries, _ := os.ReadDir(filepath.Join(out, "en", "baselines")); len(entries) != 1 {
		t.Errorf("%d baseline pages, want only the team's one", len(entries))
	}
	rule, err := os.ReadFile(filepath.Join(out, "zh", "rules", "L3-oom-killed.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rule, []byte("中没有能复现此模式的故障场景")) {
		t.Errorf("without the team's fault fingerprints, the rule page should say nothing is recorded:\n%s", rule)
	}
}

func copyFile(t *testing.T, from, to string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		b = edit(b)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
