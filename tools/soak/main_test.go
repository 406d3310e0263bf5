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
	if err := os.WriteFile(filepath.Join(dir, "commit"), []byte("abc1234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, commit, ok := finished(dir, pkgs)
	if !ok || commit != "abc1234" {
		t.Fatalf("finished = %v, %q", ok, commit)
	}
	if got := rep["baseline"]; got == nil || len(got.Scenarios) != 1 || got.Scenarios[0].Name != "web-service" {
		t.Fatalf("the baseline report did not come back: %+v", rep)
	}
	if _, ok := rep["faults"]; ok {
		t.Fatal("a suite that wrote no report has none")
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
