package mutants

import (
	"github.com/nodeprint/nodeprint/pkg/layer"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/report"
)

// The committed sets load, run scenarios that exist, and every patch is
// a unified diff of the Karpenter module (whether it applies is the
// mutants suite's job: it builds them).
func TestCommittedSets(t *testing.T) {
	sets, err := filepath.Glob("../../fixtures/mutants/*.yaml")
	if err != nil || len(sets) < 2 {
		t.Fatalf("want the scale-out and the scale-in sets, found %v (%v)", sets, err)
	}
	built := map[string]string{} // mutant → set: both sets build into bin/karpenter/<version>/mutants/<name>/
	for _, path := range sets {
		s, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range s.Mutants {
			if other, ok := built[m.Name]; ok {
				t.Errorf("%s: mutant %s is also in %s: one would overwrite the other's build", path, m.Name, other)
			}
			built[m.Name] = path
		}
		for _, sc := range s.Scenarios {
			if _, err := os.Stat(filepath.Join("../../fixtures/scenarios", sc+".yaml")); err != nil {
				t.Errorf("%s: scenarios: %s: %v", path, sc, err)
			}
		}
		for _, m := range s.Mutants {
			b, err := os.ReadFile(s.PatchPath(m))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(b), "--- a/") || !strings.Contains(string(b), "\n+++ b/") || !strings.Contains(string(b), "\n@@ ") {
				t.Errorf("%s: %s is not a unified diff with a/ and b/ paths", m.Name, m.Patch)
			}
		}
	}
}

func writeSet(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.patch"), []byte("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mutants.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const head = "apiVersion: nodeprint.dev/v1alpha1\nkind: Mutants\nkarpenter: v1.14.1\nscenarios: [web-service, faults/nodepool-limits]\n"

// Bad input is reported with the file and the field, every problem at once.
func TestLoadRefusesBadSets(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown field", head + "mutants:\n- {name: a, class: c, description: d, patch: p.patch, typo: 1}\n", `mutants[0].typo: unknown field`},
		{"missing patch", head + "mutants:\n- {name: a, class: c, description: d, patch: nope.patch}\n", "mutants[0].patch: stat"},
		{"control is taken", head + "mutants:\n- {name: control, class: c, description: d, patch: p.patch}\n", "unmutated build's name"},
		{"fault under unaffected", head + "mutants:\n- {name: a, class: c, description: d, patch: p.patch, unaffected: {nodepool-limits: x}}\n", "mutants[0].unaffected.nodepool-limits: not a plain scenario"},
		{"plain under breaks", head + "mutants:\n- {name: a, class: c, description: d, patch: p.patch, breaks: {web-service: x}}\n", "mutants[0].breaks.web-service: not a fault scenario"},
		{"no reason", head + "mutants:\n- {name: a, class: c, description: d, patch: p.patch, unaffected: {web-service: ''}}\n", "give the reason"},
		{"another kind", strings.Replace(head, "Mutants", "Scenario", 1) + "mutants:\n- {name: a, class: c, description: d, patch: p.patch}\n", "want apiVersion nodeprint.dev/v1alpha1 and kind Mutants"},
		{"no mutants", head, "mutants: list at least one mutant"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeSet(t, c.body)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, c.want)
			}
		})
	}
}

func TestSelectAndNarrow(t *testing.T) {
	s, err := Load(writeSet(t, head+"mutants:\n- {name: a, class: c, description: d, patch: p.patch}\n- {name: b, class: c, description: d, patch: p.patch}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Select([]string{"b"}); err != nil || len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("Select(b) = %v, %v", got, err)
	}
	if _, err := s.Select([]string{"zz"}); err == nil || !strings.Contains(err.Error(), "has no mutant zz (it has a, b)") {
		t.Fatalf("Select(zz) = %v", err)
	}
	if err := s.Narrow([]string{"nodepool-limits"}); err != nil || len(s.Scenarios) != 1 || s.Scenarios[0] != "faults/nodepool-limits" {
		t.Fatalf("Narrow = %v, %v", s.Scenarios, err)
	}
	if err := s.Narrow([]string{"web-service"}); err == nil {
		t.Fatal("a scenario the set no longer runs was accepted")
	}
}

func plain(name, status, ly, rule string) report.Scenario {
	sc := report.Scenario{Name: name, Status: status}
	if ly != "" || rule != "" {
		sc.Verdict = &attribute.Verdict{Layer: layer.Layer(ly), Rule: rule, Verdict: ly + "-x"}
	}
	return sc
}

func faulted(name, status, expected string, fired ...string) report.Scenario {
	sc := report.Scenario{Name: name, Status: status, Fault: name, Expected: &report.Expectation{Layer: "L2", Rule: expected}, Verdict: &attribute.Verdict{}}
	for _, f := range fired {
		sc.Verdict.Fired = append(sc.Verdict.Fired, attribute.Fired{Rule: f})
	}
	return sc
}

// Each outcome, including every way of not being what the set expects.
func TestEvaluate(t *testing.T) {
	s := &Set{Scenarios: []string{"a", "b", "faults/f", "faults/g", "c"}}
	m := &Mutant{Name: "m", Class: "k", Unaffected: map[string]string{"b": "no limits"}, Breaks: map[string]string{"f": "limits off"}}
	cases := []struct {
		name string
		mu   *Mutant
		rep  []report.Scenario
		want []Outcome
	}{
		{"as expected", m, []report.Scenario{
			plain("a", report.Failed, "L2", "L2-karpenter-change"), plain("b", report.Passed, "", ""),
			faulted("f", report.Failed, "L2-nodepool-limits"), faulted("g", report.Passed, "L2-x", "L2-x"), plain("c", report.Failed, "L2", "L2-karpenter-overprovisions"),
		}, []Outcome{Detected, Unaffected, Detected, Held, Detected}},
		{"every way wrong", m, []report.Scenario{
			plain("a", report.Passed, "", ""), plain("b", report.Failed, "L2", "L2-karpenter-change"),
			faulted("f", report.Passed, "L2-nodepool-limits", "L2-nodepool-limits"), faulted("g", report.Failed, "L2-x"),
			plain("c", report.Failed, "L1", "L1-apiserver-slow"),
		}, []Outcome{Missed, Unexpected, Missed, Unexpected, Misattributed}},
		{"a fault failed with its rule firing", m, []report.Scenario{faulted("f", report.Failed, "L2-nodepool-limits", "L1-y", "L2-nodepool-limits")},
			[]Outcome{Errored, Errored, Misattributed, Errored, Errored}},
		{"control", nil, []report.Scenario{
			plain("a", report.Passed, "", ""), plain("b", report.Failed, "L2", "L2-karpenter-change"), faulted("f", report.Passed, "L2-x", "L2-x"),
			{Name: "g", Status: report.Error, Error: "environment"}, plain("c", report.Failed, "", ""),
		}, []Outcome{Unaffected, Unexpected, Held, Errored, Unexpected}},
		{"equivalent", &Mutant{Name: "e", Equivalent: "no effect on KWOK"}, []report.Scenario{
			plain("a", report.Passed, "", ""), plain("b", report.Passed, "", ""), faulted("f", report.Passed, "x", "x"), faulted("g", report.Passed, "x", "x"), plain("c", report.Failed, "L2", "z"),
		}, []Outcome{Unaffected, Unaffected, Held, Held, Unexpected}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row := s.Evaluate(c.mu, &report.Report{Scenarios: c.rep}, false)
			var got []Outcome
			for _, cell := range row.Cells {
				got = append(got, cell.Outcome)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("outcomes (-want +got):\n%s", diff)
			}
			wantOK := !strings.Contains(c.name, "wrong") && c.name != "control" && c.name != "equivalent" && !strings.Contains(c.name, "fault failed")
			if row.OK() != wantOK {
				t.Fatalf("row.OK() = %v, want %v", row.OK(), wantOK)
			}
		})
	}
	if row := s.Evaluate(m, nil, false); row.OK() || row.Cells[0].Outcome != Errored {
		t.Fatal("a build without a report passed")
	}
}

func TestMarkdownNamesEveryCellThatIsNotAsExpected(t *testing.T) {
	s := &Set{Scenarios: []string{"a", "faults/f"}}
	m := &Mutant{Name: "m", Class: "over-provisioning", Breaks: map[string]string{"f": "limits off"}}
	mx := &Matrix{Karpenter: "v1.14.1", Scenarios: []string{"a", "f"}, Rows: []Row{
		s.Evaluate(nil, &report.Report{Scenarios: []report.Scenario{plain("a", report.Passed, "", ""), faulted("f", report.Passed, "r", "r")}}, false),
		s.Evaluate(m, &report.Report{Scenarios: []report.Scenario{plain("a", report.Failed, "L2", "L2-karpenter-overprovisions"), faulted("f", report.Passed, "r", "r")}}, false),
	}}
	got := mx.Markdown()
	for _, want := range []string{
		"| build (Karpenter v1.14.1) | class | a | f |",
		"| control | unmutated | – | = |",
		"| m | over-provisioning | ✔ L2-karpenter-overprovisions | ✘ missed |",
		"- **m × f: missed** — limits off",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the matrix does not say %q:\n%s", want, got)
		}
	}
	if mx.OK() {
		t.Fatal("a matrix with a missed cell is OK")
	}
}

// A scale-in entry is a plain scenario named without its directory: a
// mutant may list it under unaffected, never under breaks.
func TestScaleInEntriesArePlain(t *testing.T) {
	const h = "apiVersion: nodeprint.dev/v1alpha1\nkind: Mutants\nkarpenter: v1.14.1\nscenarios: [scale-in/drift-one-at-a-time]\n"
	s, err := Load(writeSet(t, h+"mutants:\n- {name: a, class: c, description: d, patch: p.patch, unaffected: {drift-one-at-a-time: x}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := ScenarioName(s.Scenarios[0]); got != "drift-one-at-a-time" || IsFault(s.Scenarios[0]) {
		t.Fatalf("ScenarioName %q, fault %v; want drift-one-at-a-time, plain", got, IsFault(s.Scenarios[0]))
	}
	_, err = Load(writeSet(t, h+"mutants:\n- {name: a, class: c, description: d, patch: p.patch, breaks: {drift-one-at-a-time: x}}\n"))
	if err == nil || !strings.Contains(err.Error(), "breaks.drift-one-at-a-time: not a fault scenario") {
		t.Fatalf("error %v, want breaks refused for a scale-in scenario", err)
	}
}

// -affected-only: a mutant runs only the scenarios the set says it
// changes; the others are "not run", listed, and neither pass nor fail.
// The control runs every scenario.
func TestAffectedOnly(t *testing.T) {
	const h = "apiVersion: nodeprint.dev/v1alpha1\nkind: Mutants\nkarpenter: v1.14.1\nscenarios: [scale-in/a, scale-in/b, faults/f]\n"
	s, err := Load(writeSet(t, h+"mutants:\n- {name: m, class: c, description: d, patch: p.patch, unaffected: {b: the reason}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := &s.Mutants[0]
	if diff := cmp.Diff([]string{"scale-in/a"}, s.Runs(m, true)); diff != "" {
		t.Fatalf("runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.Scenarios, s.Runs(nil, true)); diff != "" {
		t.Fatalf("the control's runs (-want +got):\n%s", diff)
	}
	row := s.Evaluate(m, &report.Report{Scenarios: []report.Scenario{plain("a", report.Failed, "L2", "L2-karpenter-change")}}, true)
	var got []Outcome
	for _, c := range row.Cells {
		got = append(got, c.Outcome)
	}
	if diff := cmp.Diff([]Outcome{Detected, NotRun, NotRun}, got); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
	mx := &Matrix{Scenarios: []string{"a", "b", "f"}, Rows: []Row{row}}
	if !mx.OK() || mx.NotRun() != 2 || !strings.Contains(mx.Markdown(), "2 cell(s) not run") {
		t.Fatalf("matrix OK %v, not run %d:\n%s", mx.OK(), mx.NotRun(), mx.Markdown())
	}
	// Without -affected-only the same report misses b and f: errors.
	if row := s.Evaluate(m, &report.Report{Scenarios: []report.Scenario{plain("a", report.Failed, "L2", "L2-karpenter-change")}}, false); row.OK() {
		t.Fatalf("scenarios missing from a full run must be errors: %+v", row)
	}
}
