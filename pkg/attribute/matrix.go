package attribute

import (
	"fmt"
	"github.com/nodeprint/nodeprint/pkg/layer"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Matrix is a confusion matrix of fault runs: expected layer × verdict,
// with how often each rule decided.
type Matrix struct {
	// Cells counts runs by expected layer, then verdict.
	Cells map[layer.Layer]map[string]int `json:"cells"`
	// Rules counts deciding rules by scenario.
	Rules map[string]map[string]int `json:"rules"`
	// Runs is how many runs were counted; Errors how many failed to run.
	Runs   int `json:"runs"`
	Errors int `json:"errors"`
}

// MatrixColumns are the verdict columns, in order.
var MatrixColumns = []string{L1Infrastructure, L2Orchestration, L3Application, None, Inconclusive, "error"}

// NewMatrix returns an empty matrix.
func NewMatrix() *Matrix {
	return &Matrix{Cells: map[layer.Layer]map[string]int{}, Rules: map[string]map[string]int{}}
}

// Add counts one run. A run that failed to produce a verdict is counted
// in the error column with an empty verdict.
func (m *Matrix) Add(scenario string, expectedLayer layer.Layer, v *Verdict) {
	if m.Cells[expectedLayer] == nil {
		m.Cells[expectedLayer] = map[string]int{}
	}
	if m.Rules[scenario] == nil {
		m.Rules[scenario] = map[string]int{}
	}
	m.Runs++
	if v == nil {
		m.Cells[expectedLayer]["error"]++
		m.Rules[scenario]["(error)"]++
		m.Errors++
		return
	}
	m.Cells[expectedLayer][v.Verdict]++
	rule := v.Rule
	if rule == "" {
		rule = "(" + v.Verdict + ")"
	}
	m.Rules[scenario][rule]++
}

// OffDiagonal counts runs whose verdict is not their expected layer.
func (m *Matrix) OffDiagonal() int {
	n := 0
	for l, row := range m.Cells {
		for verdict, c := range row {
			if verdict != LayerVerdict(l) {
				n += c
			}
		}
	}
	return n
}

// Write prints the matrix and the per-rule counts as text tables.
func (m *Matrix) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "expected \\ verdict\t%s\t\n", strings.Join(MatrixColumns, "\t"))
	for _, l := range layer.All {
		row := m.Cells[l]
		cells := make([]string, len(MatrixColumns))
		for i, c := range MatrixColumns {
			cells[i] = fmt.Sprint(row[c])
		}
		fmt.Fprintf(tw, "%s\t%s\t\n", l, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d run(s), %d off the diagonal, %d error(s)\n\ndeciding rule per scenario:\n", m.Runs, m.OffDiagonal(), m.Errors)
	scenarios := make([]string, 0, len(m.Rules))
	for s := range m.Rules {
		scenarios = append(scenarios, s)
	}
	sort.Strings(scenarios)
	for _, s := range scenarios {
		var parts []string
		for r, n := range m.Rules[s] {
			parts = append(parts, fmt.Sprintf("%s×%d", r, n))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "  %-28s %s\n", s, strings.Join(parts, ", "))
	}
	return nil
}
