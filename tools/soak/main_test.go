package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/soak"
)

// A repetition counts as finished only with its commit marker; its
// suites' reports come back as they were written.
func TestFinishedRepetitions(t *testing.T) {
	dir := t.TempDir()
	pkgs := []string{"./suites/baseline", "./suites/faults"}
	if _, _, ok := finished(dir, pkgs); ok {
		t.Fatal("an empty directory is not a finished repetition")
	}
	r := report.New("suite:baseline", time.Now())
	r.Add(report.Scenario{Name: "web-service", Status: report.Passed})
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "baseline.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := finished(dir, pkgs); ok {
		t.Fatal("reports without the commit marker are an interrupted repetition")
	}
	if err := markFinished(dir, "abc1234", soak.Repetition{Suites: []string{"baseline", "faults"}, GoTest: "exit status 1"}); err != nil {
		t.Fatal(err)
	}
	rep, commit, ok := finished(dir, pkgs)
	if !ok || commit != "abc1234" {
		t.Fatalf("finished = %v, %q", ok, commit)
	}
	if got := rep.Reports["baseline"]; got == nil || len(got.Scenarios) != 1 || got.Scenarios[0].Name != "web-service" {
		t.Fatalf("the baseline report did not come back: %+v", rep)
	}
	if _, ok := rep.Reports["faults"]; ok {
		t.Fatal("a suite that wrote no report has none")
	}
	if rep.GoTest != "exit status 1" {
		t.Fatalf("how go test ended did not come back: %q", rep.GoTest)
	}
	if _, _, ok := finished(dir, pkgs[:1]); ok {
		t.Fatal("a repetition of other suites is not this one's")
	}
}

// The soak fails on a go test that fails and on a suite that writes no
// report, even when every repetition fails the same way and no report row
// shows it; and passes when go test passes and every suite reports. The
// suites here are tiny packages of a module of their own, run by the real
// go test.
func TestSoakFailsOnWhatNoRowShows(t *testing.T) {
	mod := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module soaktest\n\ngo 1.24\n")
	// go test runs a package's test in its directory: the report goes to
	// the module's out/suites/<suite>/, where the suites write theirs.
	reporting := func(pkg, body string) {
		write(filepath.Join("suites", pkg, "suite_test.go"), `package `+pkg+`

import (
	"flag"
	"os"
	"testing"
)

// The soak passes -ginkgo.v to every suite.
var _ = flag.Bool("ginkgo.v", false, "")

func TestSuite(t *testing.T) {
	if err := os.MkdirAll("../../out/suites/`+pkg+`", 0o755); err != nil {
		t.Fatal(err)
	}
	r := `+"`"+`{"schemaVersion": 1, "command": "suite:`+pkg+`", "summary": {"total": 1, "passed": 1, "exitCode": 0},
		"scenarios": [{"name": "web-service", "status": "passed"}]}`+"`"+`
	if err := os.WriteFile("../../out/suites/`+pkg+`/report.json", []byte(r), 0o644); err != nil {
		t.Fatal(err)
	}
	`+body+`
}
`)
	}
	reporting("good", "")
	reporting("failing", `t.Fatal("a spec failed without recording a scenario")`)
	write("suites/silent/suite_test.go", "package silent\n\nimport (\n\t\"flag\"\n\t\"testing\"\n)\n\nvar _ = flag.Bool(\"ginkgo.v\", false, \"\")\n\nfunc TestSuite(t *testing.T) {}\n")
	t.Chdir(mod)
	for _, tc := range []struct {
		pkg  string
		want int
	}{{"good", 0}, {"failing", 1}, {"silent", 1}} {
		out := filepath.Join(t.TempDir(), "soak")
		if got := soakRuns(context.Background(), 2, out, 2*time.Minute, false, []string{"./suites/" + tc.pkg}); got != tc.want {
			b, _ := os.ReadFile(filepath.Join(out, "summary.md"))
			t.Errorf("soak of ./suites/%s: exit %d, want %d\n%s", tc.pkg, got, tc.want, b)
		}
	}
}

// Interrupting the soak interrupts what go test runs, not only go test:
// the grandchild here stands for the suite binary that must stop its
// cluster.
func TestInterruptReachesTheWholeGroup(t *testing.T) {
	got := filepath.Join(t.TempDir(), "got")
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	// The grandchild stands for the suite binary; "; true" keeps the
	// outer shell from exec'ing it, so it is not the process signalled.
	script := `sh -c 'trap "echo interrupted > ` + got + `; exit 0" INT; touch ` + ready + `; while :; do sleep 0.1; done'; true`
	cmd := interruptible(ctx, "sh", "-c", script)
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever the outcome, nothing of the group outlives the test.
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if i == 500 {
			t.Fatal("the grandchild did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	_ = cmd.Wait()
	if b, err := os.ReadFile(got); err != nil || strings.TrimSpace(string(b)) != "interrupted" {
		t.Fatalf("the grandchild was not interrupted: %q, %v", b, err)
	}
}
