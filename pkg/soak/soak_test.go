package soak

import (
	"github.com/nodeprint/nodeprint/pkg/layer"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/report"
)

func rep(scenarios ...report.Scenario) *report.Report {
	r := report.New("suite:faults", time.Time{})
	for _, s := range scenarios {
		r.Add(s)
	}
	return r
}

// faults is a repetition of the faults suite alone, go test passing.
func faults(r *report.Report) Repetition {
	return Repetition{Suites: []string{"faults"}, Reports: map[string]*report.Report{"faults": r}}
}

func passed(name string, ly layer.Layer, rule string) report.Scenario {
	return report.Scenario{Name: name, Status: report.Passed, Seconds: 90,
		Verdict: &attribute.Verdict{Verdict: attribute.LayerVerdict(ly), Layer: ly, Rule: rule}}
}

func TestStableRepetitionsAreClean(t *testing.T) {
	a := faults(rep(passed("oom", "L3", "L3-oom-killed"), passed("slow-boot", "L1", "L1-slow-boot")))
	b := faults(rep(passed("oom", "L3", "L3-oom-killed"), passed("slow-boot", "L1", "L1-slow-boot")))
	// Durations and run ids differ from one repetition to the next: noise.
	b.Reports["faults"].Scenarios[0].Seconds, b.Reports["faults"].Scenarios[0].Runs = 120, []string{"oom-zzzzz"}
	s := Compare([]Repetition{a, b})
	if !s.Clean() || s.Scenarios != 2 || s.Repetitions != 2 {
		t.Fatalf("want clean over 2 scenarios, got %+v", s)
	}
}

func TestFailuresAndChangedVerdictsAreReported(t *testing.T) {
	wrong := passed("slow-boot", "L2", "L2-no-provisioning")
	wrong.Status = report.Failed
	env := report.Scenario{Name: "oom", Status: report.Error, Error: "run oom-x: the environment failed: karpenter exited (pid 9)\nmore",
		Verdict: attribute.EnvironmentVerdict("oom", "karpenter exited (pid 9)")}
	reps := []Repetition{
		faults(rep(passed("oom", "L3", "L3-oom-killed"), passed("slow-boot", "L1", "L1-slow-boot"))),
		faults(rep(env, wrong)),
		faults(rep(passed("slow-boot", "L1", "L1-slow-boot"))),
	}
	s := Compare(reps)
	want := &Summary{Repetitions: 3, Scenarios: 2,
		Failures: []Failure{
			{Repetition: 2, Suite: "faults", Scenario: "oom", Outcome: "error inconclusive (environment)", Why: "run oom-x: the environment failed: karpenter exited (pid 9)"},
			{Repetition: 2, Suite: "faults", Scenario: "slow-boot", Outcome: "failed L2-orchestration by L2-no-provisioning"},
			{Repetition: 3, Suite: "faults", Scenario: "oom", Outcome: Missing, Why: "the repetition has no result for it"},
		},
		Changes: []Change{
			{Suite: "faults", Scenario: "oom", Outcomes: []string{"passed L3-application by L3-oom-killed", "error inconclusive (environment)", Missing}},
			{Suite: "faults", Scenario: "slow-boot", Outcomes: []string{"passed L1-infrastructure by L1-slow-boot", "failed L2-orchestration by L2-no-provisioning", "passed L1-infrastructure by L1-slow-boot"}},
		},
		Problems: []Problem{}}
	if d := cmp.Diff(want, s); d != "" {
		t.Fatalf("summary (-want +got):\n%s", d)
	}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"- failures: 3 (target 0)", "- changed outcomes: 2 (target 0)",
		"| faults | slow-boot | passed L1-infrastructure by L1-slow-boot → failed L2-orchestration by L2-no-provisioning → passed L1-infrastructure by L1-slow-boot |"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("the Markdown lacks %q:\n%s", line, b.String())
		}
	}
}

// A repetition can fail where no row shows it: go test fails, a suite
// writes no report, or a spec fails before it records its scenario (a
// baseline that does not load, a cluster that does not start). The same
// way in every repetition, that changes no outcome and lists no failed
// scenario, and the soak must still not be clean.
func TestRepetitionsThatFailOutsideTheRowsAreNotClean(t *testing.T) {
	clean := func() Repetition {
		return Repetition{Suites: []string{"baseline", "faults"}, Reports: map[string]*report.Report{
			"baseline": rep(passed("web-service", "", "")), "faults": rep(passed("oom", "L3", "L3-oom-killed"))}}
	}
	if s := Compare([]Repetition{clean(), clean()}); !s.Clean() {
		t.Fatalf("two clean repetitions: %+v", s)
	}
	goTest, noReport, noRow := clean(), clean(), clean()
	goTest.GoTest = "exit status 1"
	delete(noReport.Reports, "faults")
	// The suite's own exit code says it failed; its one row passed.
	noRow.Reports["baseline"].Summary.ExitCode = 1
	for name, r := range map[string]Repetition{"go test failed": goTest, "no report": noReport, "a spec failed without a row": noRow} {
		s := Compare([]Repetition{r, r, r})
		if s.Clean() || len(s.Problems) != 3 {
			t.Errorf("%s in every repetition: want 3 problems and not clean, got %+v", name, s)
		}
	}
	s := Compare([]Repetition{goTest, noReport, noRow})
	want := []Problem{
		{Repetition: 1, What: "go test failed: exit status 1"},
		{Repetition: 2, Suite: "faults", What: "the suite wrote no report"},
		{Repetition: 3, Suite: "baseline", What: "the suite failed (exit code 1) but none of its 1 row(s) did: a spec failed without recording a scenario"},
	}
	if d := cmp.Diff(want, s.Problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	var b strings.Builder
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"- repetitions that went wrong outside the rows: 3 (target 0)", "| 2 | faults | the suite wrote no report |"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("the Markdown lacks %q:\n%s", line, b.String())
		}
	}
}
