package mutants

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/report"
)

// Control is the row of the unmutated build: every scenario must pass.
const Control = "control"

// Want is the attribution a detected mutant must get: Karpenter's
// behaviour changed under the same inputs.
const Want = layer.L2

// Outcome of one scenario under one build.
type Outcome string

const (
	// Detected: an affected plain scenario failed and was attributed to
	// L2, or a fault scenario the mutant breaks failed with its expected
	// rule missing.
	Detected Outcome = "detected"
	// Unaffected: a plain scenario the mutant cannot change passed.
	Unaffected Outcome = "unaffected"
	// Held: a fault scenario was attributed as expected under the build.
	Held Outcome = "held"
	// Missed: an affected scenario passed: nodeprint did not see it.
	Missed Outcome = "missed"
	// Misattributed: an affected plain scenario failed, with another
	// verdict than L2.
	Misattributed Outcome = "misattributed"
	// Unexpected: a scenario failed that the set says the build cannot
	// change (the control's deviations are this): the set or the
	// harness is wrong.
	Unexpected Outcome = "unexpected"
	// Errored: the scenario did not complete, or did not run at all.
	Errored Outcome = "error"
	// NotRun: a scenario the set says the mutant cannot change, left out
	// on purpose (tools/mutants -affected-only). Neither a pass nor a
	// failure: the matrix lists every one under its table.
	NotRun Outcome = "not run"
)

// OK says whether the outcome is what the set expects (a cell left out
// on purpose is not a failure; Matrix.NotRun counts them).
func (o Outcome) OK() bool { return o == Detected || o == Unaffected || o == Held || o == NotRun }

// Cell is one scenario under one build.
type Cell struct {
	Scenario string  `json:"scenario"`
	Fault    bool    `json:"fault,omitempty"`
	Outcome  Outcome `json:"outcome"`
	// Verdict is what nodeprint said ("L2-orchestration by
	// L2-karpenter-change", "none", ...).
	Verdict string `json:"verdict,omitempty"`
	// Why is the set's reason for an unaffected or broken scenario, or
	// the run's error.
	Why string `json:"why,omitempty"`
}

// Row is one build's cells, in the set's scenario order.
type Row struct {
	Mutant string `json:"mutant"`
	Class  string `json:"class,omitempty"`
	Cells  []Cell `json:"cells"`
}

// OK says whether every cell is as expected.
func (r Row) OK() bool {
	return !slices.ContainsFunc(r.Cells, func(c Cell) bool { return !c.Outcome.OK() })
}

// Matrix is every build's row.
type Matrix struct {
	Karpenter string   `json:"karpenter"`
	Scenarios []string `json:"scenarios"`
	Rows      []Row    `json:"rows"`
}

// OK says whether every row is.
func (m *Matrix) OK() bool {
	return !slices.ContainsFunc(m.Rows, func(r Row) bool { return !r.OK() })
}

// NotRun counts the cells left out on purpose.
func (m *Matrix) NotRun() int {
	n := 0
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if c.Outcome == NotRun {
				n++
			}
		}
	}
	return n
}

// Affects says whether mutant m is expected to change the set's entry: a
// plain scenario it does not list as unaffected, a fault scenario it
// breaks; an equivalent mutant affects none. The control affects none.
func (s *Set) Affects(m *Mutant, entry string) bool {
	switch {
	case m == nil || m.Equivalent != "":
		return false
	case IsFault(entry):
		return m.Breaks[ScenarioName(entry)] != ""
	}
	return m.Unaffected[ScenarioName(entry)] == ""
}

// Runs is the entries a build runs: every one, or with affectedOnly only
// those a mutant affects (the control and an equivalent mutant run every
// one: they are the checks that nothing changes).
func (s *Set) Runs(m *Mutant, affectedOnly bool) []string {
	if !affectedOnly || m == nil || m.Equivalent != "" {
		return s.Scenarios
	}
	var out []string
	for _, e := range s.Scenarios {
		if s.Affects(m, e) {
			out = append(out, e)
		}
	}
	return out
}

// Evaluate turns the report of one build's run into its row. m is nil for
// the control. A scenario the report does not hold (the run stopped
// before it) is an error, never a pass.
func (s *Set) Evaluate(m *Mutant, rep *report.Report, affectedOnly bool) Row {
	row := Row{Mutant: Control}
	if m != nil {
		row.Mutant, row.Class = m.Name, m.Class
	}
	byName := map[string]report.Scenario{}
	if rep != nil {
		for _, sc := range rep.Scenarios {
			byName[sc.Name] = sc
		}
	}
	runs := s.Runs(m, affectedOnly)
	for _, entry := range s.Scenarios {
		name := ScenarioName(entry)
		if !slices.Contains(runs, entry) {
			row.Cells = append(row.Cells, Cell{Scenario: name, Fault: IsFault(entry), Outcome: NotRun,
				Why: "left out (-affected-only): the set says the mutant cannot change it"})
			continue
		}
		sc, ok := byName[name]
		if !ok {
			row.Cells = append(row.Cells, Cell{Scenario: name, Outcome: Errored, Why: "no result: the run stopped before this scenario"})
			continue
		}
		row.Cells = append(row.Cells, evaluate(m, IsFault(entry), sc))
	}
	return row
}

func evaluate(m *Mutant, fault bool, sc report.Scenario) Cell {
	c := Cell{Scenario: sc.Name, Fault: fault, Verdict: verdictText(sc)}
	if sc.Status == report.Error || (sc.Status != report.Passed && sc.Status != report.Failed) {
		c.Outcome, c.Why = Errored, sc.Error
		return c
	}
	passed := sc.Status == report.Passed
	affected, why := true, ""
	switch {
	case m == nil:
		affected = false
	case m.Equivalent != "":
		affected, why = false, m.Equivalent
	case fault:
		why = m.Breaks[sc.Name]
		affected = why != ""
	default:
		why = m.Unaffected[sc.Name]
		affected = why == ""
	}
	c.Why = why
	switch {
	case !affected && passed && fault:
		c.Outcome = Held
	case !affected && passed:
		c.Outcome = Unaffected
	case !affected:
		c.Outcome = Unexpected
	case passed:
		c.Outcome = Missed
	case fault && !expectedRuleFired(sc):
		c.Outcome = Detected
	case fault:
		// failed although the expected rule fired: another layer first
		c.Outcome = Misattributed
	case sc.Verdict != nil && sc.Verdict.Layer == Want:
		c.Outcome = Detected
	default:
		c.Outcome = Misattributed
	}
	return c
}

func expectedRuleFired(sc report.Scenario) bool {
	if sc.Expected == nil || sc.Verdict == nil {
		return false
	}
	for _, f := range sc.Verdict.Fired {
		if f.Rule == sc.Expected.Rule {
			return true
		}
	}
	return false
}

func verdictText(sc report.Scenario) string {
	v := sc.Verdict
	switch {
	case v == nil:
		return ""
	case v.Rule != "":
		return v.Verdict + " by " + v.Rule
	default:
		return v.Verdict
	}
}

// Markdown renders the matrix: one row per build, one column per
// scenario, then what each failed cell means.
func (m *Matrix) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| build (Karpenter %s) | class |", m.Karpenter)
	for _, s := range m.Scenarios {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(m.Scenarios)) + "\n")
	var notes, notRun []string
	for _, r := range m.Rows {
		class := r.Class
		if r.Mutant == Control {
			class = "unmutated"
		}
		fmt.Fprintf(&b, "| %s | %s |", r.Mutant, class)
		for _, c := range r.Cells {
			fmt.Fprintf(&b, " %s |", c.short())
			switch {
			case c.Outcome == NotRun:
				notRun = append(notRun, r.Mutant+" × "+c.Scenario)
			case !c.Outcome.OK():
				notes = append(notes, fmt.Sprintf("- **%s × %s: %s** — %s", r.Mutant, c.Scenario, c.Outcome, c.detail()))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n✔ detected and attributed to L2 (the rule that decided) · – unaffected, passed · = fault still attributed as expected · ○ not run (-affected-only) · ✘ not as the set expects\n")
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	if len(notRun) > 0 {
		fmt.Fprintf(&b, "\n%d cell(s) not run: the set says the mutant cannot change them, and -affected-only left them out (not checked to pass): %s\n", len(notRun), strings.Join(notRun, ", "))
	}
	return b.String()
}

func (c Cell) short() string {
	switch c.Outcome {
	case Detected:
		if c.Fault {
			return "✔ expected rule missing"
		}
		if i := strings.Index(c.Verdict, " by "); i >= 0 {
			return "✔ " + c.Verdict[i+4:]
		}
		return "✔ " + c.Verdict
	case Unaffected:
		return "–"
	case Held:
		return "="
	case NotRun:
		return "○"
	default:
		return "✘ " + string(c.Outcome)
	}
}

func (c Cell) detail() string {
	parts := []string{}
	if c.Verdict != "" {
		parts = append(parts, "verdict "+c.Verdict)
	}
	if c.Why != "" {
		parts = append(parts, c.Why)
	}
	if len(parts) == 0 {
		return "no verdict"
	}
	return strings.Join(parts, "; ")
}
