package main

import (
	"os"
	"path/filepath"
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
