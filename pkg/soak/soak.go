// Package soak compares repetitions of the same suites: every scenario
// that failed in any repetition, every scenario whose outcome (its
// status, verdict and deciding rule) was not the same in all of them, and
// every repetition that went wrong outside the scenarios' rows (go test
// failed, a suite wrote no report, a suite failed in no row). A harness
// whose verdicts change from one repetition to the next, on the same code
// and inputs, flakes; the target is none of any.
package soak

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/report"
)

// Repetition is one run of the suites.
type Repetition struct {
	// Reports are each suite's report, by suite name.
	Reports map[string]*report.Report `json:"-"`
	// Suites are the suites the repetition ran, by name: each must have
	// written a report.
	Suites []string `json:"suites"`
	// GoTest is why go test failed ("" when it passed): whatever the
	// reports say, a failed go test is a failed repetition.
	GoTest string `json:"goTest,omitempty"`
}

// Problem is something that went wrong in a repetition outside the
// scenarios' rows.
type Problem struct {
	Repetition int    `json:"repetition"`
	Suite      string `json:"suite,omitempty"`
	What       string `json:"what"`
}

// Failure is a scenario that did not pass in one repetition.
type Failure struct {
	Repetition int    `json:"repetition"`
	Suite      string `json:"suite"`
	Scenario   string `json:"scenario"`
	Outcome    string `json:"outcome"`
	Why        string `json:"why,omitempty"`
}

// Change is a scenario whose outcome differed between repetitions.
type Change struct {
	Suite    string `json:"suite"`
	Scenario string `json:"scenario"`
	// Outcomes holds the outcome of each repetition, in order ("missing"
	// when the repetition has no result for it).
	Outcomes []string `json:"outcomes"`
}

// Summary is the comparison of the repetitions.
type Summary struct {
	Repetitions int       `json:"repetitions"`
	Scenarios   int       `json:"scenarios"`
	Failures    []Failure `json:"failures"`
	Changes     []Change  `json:"changes"`
	Problems    []Problem `json:"problems"`
}

// Clean reports whether nothing failed, nothing changed and no repetition
// went wrong.
func (s *Summary) Clean() bool {
	return len(s.Failures) == 0 && len(s.Changes) == 0 && len(s.Problems) == 0
}

// problems are what went wrong in repetition i (1-based) outside the rows:
// go test failed; a suite wrote no report; a suite's report says it failed
// (its exit code) while none of its rows did, so a spec failed without
// recording one.
func problems(i int, rep Repetition) []Problem {
	var out []Problem
	if rep.GoTest != "" {
		out = append(out, Problem{Repetition: i, What: "go test failed: " + firstLine(rep.GoTest)})
	}
	for _, suite := range rep.Suites {
		r, ok := rep.Reports[suite]
		if !ok || r == nil {
			out = append(out, Problem{Repetition: i, Suite: suite, What: "the suite wrote no report"})
			continue
		}
		if r.Summary.ExitCode == 0 {
			continue
		}
		failedRow := false
		for _, sc := range r.Scenarios {
			failedRow = failedRow || sc.Status != report.Passed
		}
		if !failedRow {
			out = append(out, Problem{Repetition: i, Suite: suite,
				What: fmt.Sprintf("the suite failed (exit code %d) but none of its %d row(s) did: a spec failed without recording a scenario", r.Summary.ExitCode, len(r.Scenarios))})
		}
	}
	return out
}

// Missing is the outcome of a scenario a repetition has no result for
// (its suite did not run or stopped before it).
const Missing = "missing"

// Outcome is what is compared between repetitions: the status, and the
// verdict with its deciding rule where there is one. Durations, run ids
// and observed numbers are noise the baselines already bound.
func Outcome(s *report.Scenario) string {
	out := s.Status
	if v := s.Verdict; v != nil {
		out += " " + v.Label()
		if v.Rule != "" {
			out += " by " + v.Rule
		}
	}
	return out
}

// Compare compares the repetitions, in order.
func Compare(reps []Repetition) *Summary {
	sum := &Summary{Repetitions: len(reps), Failures: []Failure{}, Changes: []Change{}, Problems: []Problem{}}
	type key struct{ suite, scenario string }
	outcomes := map[key][]string{}
	var keys []key
	for i, rep := range reps {
		sum.Problems = append(sum.Problems, problems(i+1, rep)...)
		for suite, r := range rep.Reports {
			for j := range r.Scenarios {
				sc := &r.Scenarios[j]
				k := key{suite, sc.Name}
				if _, seen := outcomes[k]; !seen {
					keys = append(keys, k)
					outcomes[k] = make([]string, len(reps))
				}
				outcomes[k][i] = Outcome(sc)
				if sc.Status != report.Passed {
					why := sc.Error
					if why == "" {
						why = sc.Failure
					}
					sum.Failures = append(sum.Failures, Failure{Repetition: i + 1, Suite: suite, Scenario: sc.Name, Outcome: Outcome(sc), Why: firstLine(why)})
				}
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].suite != keys[j].suite {
			return keys[i].suite < keys[j].suite
		}
		return keys[i].scenario < keys[j].scenario
	})
	sort.SliceStable(sum.Failures, func(i, j int) bool {
		a, b := sum.Failures[i], sum.Failures[j]
		if a.Repetition != b.Repetition {
			return a.Repetition < b.Repetition
		}
		if a.Suite != b.Suite {
			return a.Suite < b.Suite
		}
		return a.Scenario < b.Scenario
	})
	sum.Scenarios = len(keys)
	for _, k := range keys {
		o := outcomes[k]
		same := true
		for i := range o {
			if o[i] == "" {
				o[i] = Missing
				sum.Failures = append(sum.Failures, Failure{Repetition: i + 1, Suite: k.suite, Scenario: k.scenario, Outcome: Missing,
					Why: "the repetition has no result for it"})
			}
			if o[i] != o[0] {
				same = false
			}
		}
		if !same {
			sum.Changes = append(sum.Changes, Change{Suite: k.suite, Scenario: k.scenario, Outcomes: o})
		}
	}
	return sum
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Write prints the summary as Markdown.
func (s *Summary) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: %d repetition(s) of %d scenario(s)\n\n", s.Repetitions, s.Scenarios)
	fmt.Fprintf(&b, "- failures: %d (target 0)\n- changed outcomes: %d (target 0)\n- repetitions that went wrong outside the rows: %d (target 0)\n",
		len(s.Failures), len(s.Changes), len(s.Problems))
	if len(s.Problems) > 0 {
		b.WriteString("\n## Repetitions that went wrong\n\n| repetition | suite | what |\n| --- | --- | --- |\n")
		for _, p := range s.Problems {
			fmt.Fprintf(&b, "| %d | %s | %s |\n", p.Repetition, p.Suite, strings.ReplaceAll(p.What, "|", "\\|"))
		}
	}
	if len(s.Failures) > 0 {
		b.WriteString("\n## Failures\n\n| repetition | suite | scenario | outcome | why |\n| --- | --- | --- | --- | --- |\n")
		for _, f := range s.Failures {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", f.Repetition, f.Suite, f.Scenario, f.Outcome, strings.ReplaceAll(f.Why, "|", "\\|"))
		}
	}
	if len(s.Changes) > 0 {
		b.WriteString("\n## Changed outcomes\n\n| suite | scenario | outcome per repetition |\n| --- | --- | --- |\n")
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Suite, c.Scenario, strings.Join(c.Outcomes, " → "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
