package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/report"
)

func acceptRun(sel map[string]int, cost, p90 float64, running int) *fingerprint.Fingerprint {
	return &fingerprint.Fingerprint{
		Selection: fingerprint.Selection{InstanceTypes: sel, Nodes: len(sel), HourlyCost: cost, Zones: 1, PodsPerNodeMin: 10, PodsPerNodeMax: 20},
		Timing:    fingerprint.Timing{PodReady: fingerprint.Percentiles{Count: 10, P50: p90 - 2, P90: p90}, NodeClaimReady: fingerprint.Percentiles{Count: 1, P50: 1, P90: 2}},
		Outcomes:  fingerprint.Outcomes{Running: running},
	}
}

// acceptFixture writes the baselines of burst and web into a fingerprints
// directory and a report that verified one run of each against them.
func acceptFixture(t *testing.T, mutate func(*report.Report)) (dir, reportPath string) {
	t.Helper()
	dir = t.TempDir()
	env := fingerprint.Provenance{Karpenter: "v1.14.1", Kubernetes: "v1.36.3", Catalog: "kwok-generic", KarpenterSettings: map[string]string{}}
	usual := map[string]int{"c-64x/on-demand": 1, "c-192x/on-demand": 1}
	rep := report.New("verify", time.Date(2026, 12, 1, 10, 51, 0, 0, time.UTC))
	for _, name := range []string{"burst", "web"} {
		b, err := fingerprint.NewBaseline(name, env, []*fingerprint.Fingerprint{acceptRun(usual, 6.9498, 25, 1000), acceptRun(usual, 6.9498, 27, 1000)})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Save(fingerprint.Path(dir, name)); err != nil {
			t.Fatal(err)
		}
		observed := acceptRun(map[string]int{"c-32x/on-demand": 1, "c-256x/on-demand": 1}, 7.8185, 26, 1000)
		rep.Add(report.Scenario{Name: name, Status: report.Failed, Runs: []string{name + "-rszkc"}, Baseline: b, Observed: observed})
	}
	rep.Add(report.Scenario{Name: "crash-loop", Fault: "crash-loop", Status: report.Passed, Runs: []string{"crash-loop-abcde"}})
	if mutate != nil {
		mutate(rep)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	reportPath = filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(reportPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, reportPath
}

func runAccept(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"accept"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAcceptAddsTheObservedRun(t *testing.T) {
	dir, rp := acceptFixture(t, nil)
	code, out, errOut := runAccept(t, rp, "burst", "--fingerprints", dir, "--reason", "pods fell into two batch windows")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "burst: accepted run burst-rszkc (a selection the baseline had not seen): 3 runs (was 2), 2 distinct selection(s), $6.9498-$7.8185 an hour") {
		t.Fatalf("output: %s", out)
	}
	b, err := fingerprint.LoadBaseline(fingerprint.Path(dir, "burst"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Runs != 3 || len(b.Selections) != 2 || len(b.Accepted) != 1 || b.Accepted[0] != (fingerprint.AcceptedRun{Run: "burst-rszkc", Reason: "pods fell into two batch windows"}) {
		t.Fatalf("baseline after accept: runs %d, selections %+v, accepted %+v", b.Runs, b.Selections, b.Accepted)
	}
	if got := b.Timing.PodReadyP90.Values; len(got) != 3 || got[2] != 26 {
		t.Fatalf("the run's timing must join the samples: %v", got)
	}
	// The same report again would count the run twice.
	code, _, errOut = runAccept(t, rp, "burst", "--fingerprints", dir, "--reason", "again")
	if code != exitUsage || !strings.Contains(errOut, "run burst-rszkc is accepted already") {
		t.Fatalf("second accept: exit %d, %s", code, errOut)
	}
}

func TestAcceptRefusesAndWritesNothing(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*report.Report)
		args    []string
		message string
	}{
		{"no reason", nil, []string{"burst"}, "--reason is required"},
		{"blank reason", nil, []string{"burst", "--reason", "  "}, "--reason is required"},
		{"no scenario", nil, []string{}, "requires at least 2 arg(s)"},
		{"unknown scenario", nil, []string{"burts", "--reason", "x"}, `has no scenario "burts" (it has: burst, web, crash-loop)`},
		{"fault scenario", nil, []string{"crash-loop", "--reason", "x"}, "crash-loop is a fault scenario"},
		{"run that never settled", func(r *report.Report) { r.Scenarios[0].Observed, r.Scenarios[0].Error = nil, "settle timed out" },
			[]string{"burst", "--reason", "x"}, "has no run compared with a baseline (status failed: settle timed out)"},
		{"upgrade check", func(r *report.Report) { r.Upgrade = &report.Upgrade{From: "v1.14.1", To: "v1.15.0"} },
			[]string{"burst", "--reason", "x"}, "upgrade check's report"},
		{"baseline changed since", func(r *report.Report) { r.Scenarios[0].Baseline.Runs = 1 },
			[]string{"burst", "--reason", "x"}, "changed since"},
		{"run ended differently", func(r *report.Report) { r.Scenarios[0].Observed.Outcomes.Pending = 3 },
			[]string{"burst", "--reason", "x"}, "cannot join"},
		// web is fine, burst is not: neither is written.
		{"one bad of two", func(r *report.Report) { r.Scenarios[0].Observed.Outcomes.Pending = 3 },
			[]string{"web", "burst", "--reason", "x"}, "cannot join"},
		{"not nodeprint's", func(r *report.Report) { r.Tool = "kube-burner" }, []string{"burst", "--reason", "x"}, "want a report.json of nodeprint"},
		{"inputs changed", func(r *report.Report) {
			r.Scenarios[0].Inputs = &report.InputChanges{Changes: []inputs.Change{{Path: "workloads.web.replicas", Was: "3", Now: "6"}}}
		}, []string{"burst", "--reason", "x"}, "ran with other inputs than its baseline (workloads.web.replicas: 3 → 6)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, rp := acceptFixture(t, c.mutate)
			before := readAll(t, dir)
			code, out, errOut := runAccept(t, append(append([]string{rp}, c.args...), "--fingerprints", dir)...)
			if code != exitUsage || !strings.Contains(errOut, c.message) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q (stdout %q)", code, errOut, exitUsage, c.message, out)
			}
			if after := readAll(t, dir); after != before {
				t.Fatal("a refused accept changed the fingerprints")
			}
		})
	}
}

func TestAcceptRejectsAnUnknownReportField(t *testing.T) {
	dir, rp := acceptFixture(t, nil)
	data, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rp, bytes.Replace(data, []byte(`"tool":`), []byte(`"tools":"x","tool":`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runAccept(t, rp, "burst", "--fingerprints", dir, "--reason", "x")
	if code != exitUsage || !strings.Contains(errOut, rp) || !strings.Contains(errOut, "tools") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func readAll(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(e.Name() + "\n" + string(b))
	}
	return all.String()
}
