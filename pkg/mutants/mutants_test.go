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

// The committed set loads, runs scenarios that exist, and every patch is
// a unified diff of the Karpenter module (whether it applies is the
// mutants suite's job: it builds one).
func TestCommittedSet(t *testing.T) {
	s, err := Load("../../fixtures/mutants/mutants.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range s.Scenarios {
		if _, err := os.Stat(filepath.Join("../../fixtures/scenarios", sc+".yaml")); err != nil {
			t.Errorf("scenarios: %s: %v", sc, err)
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
			row := s.Evaluate(c.mu, &report.Report{Scenarios: c.rep})
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
	if row := s.Evaluate(m, nil); row.OK() || row.Cells[0].Outcome != Errored {
		t.Fatal("a build without a report passed")
	}
}

func TestMarkdownNamesEveryCellThatIsNotAsExpected(t *testing.T) {
	s := &Set{Scenarios: []string{"a", "faults/f"}}
	m := &Mutant{Name: "m", Class: "over-provisioning", Breaks: map[string]string{"f": "limits off"}}
	mx := &Matrix{Karpenter: "v1.14.1", Scenarios: []string{"a", "f"}, Rows: []Row{
		s.Evaluate(nil, &report.Report{Scenarios: []report.Scenario{plain("a", report.Passed, "", ""), faulted("f", report.Passed, "r", "r")}}),
		s.Evaluate(m, &report.Report{Scenarios: []report.Scenario{plain("a", report.Failed, "L2", "L2-karpenter-overprovisions"), faulted("f", report.Passed, "r", "r")}}),
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
