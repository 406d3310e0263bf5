// Package soak compares repetitions of the same suites: every scenario
// that failed in any repetition, and every scenario whose outcome (its
// status, verdict and deciding rule) was not the same in all of them. A
// harness whose verdicts change from one repetition to the next, on the
// same code and inputs, flakes; the target is none of either.
package soak

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/report"
)

// Repetition is one run of the suites: each suite's report by suite name.
type Repetition map[string]*report.Report

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
}

// Clean reports whether nothing failed and nothing changed.
func (s *Summary) Clean() bool { return len(s.Failures) == 0 && len(s.Changes) == 0 }

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
	sum := &Summary{Repetitions: len(reps), Failures: []Failure{}, Changes: []Change{}}
	type key struct{ suite, scenario string }
	outcomes := map[key][]string{}
	var keys []key
	for i, rep := range reps {
		for suite, r := range rep {
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
	fmt.Fprintf(&b, "- failures: %d (target 0)\n- changed outcomes: %d (target 0)\n", len(s.Failures), len(s.Changes))
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
