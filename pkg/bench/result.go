package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one figure of the benchmark report.
type Row struct {
	// Group is the section: start, floor, scale-1000, catalog, pipeline.
	Group string  `json:"group"`
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Target, when set, is the limit the value must not exceed (or, with
	// AtLeast, reach); Met says whether it did.
	Target  *float64 `json:"target,omitempty"`
	AtLeast bool     `json:"atLeast,omitempty"`
	Met     *bool    `json:"met,omitempty"`
	// Note says what bounds a missed target, or how the value was taken.
	Note string `json:"note,omitempty"`
}

// Report is one `make bench` run.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Machine  Machine   `json:"machine"`
	Rows     []Row     `json:"rows"`
}

// Machine is what the figures were measured on.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GoVersion  string `json:"goVersion"`
	Karpenter  string `json:"karpenter"`
	Kubernetes string `json:"kubernetes"`
}

// Add records a figure without a target.
func (r *Report) Add(group, name string, value float64, unit, note string) {
	r.Rows = append(r.Rows, Row{Group: group, Name: name, Value: value, Unit: unit, Note: note})
}

// AddTarget records a figure with the limit it must not exceed.
func (r *Report) AddTarget(group, name string, value float64, unit string, target float64, note string) {
	met := value <= target
	r.Rows = append(r.Rows, Row{Group: group, Name: name, Value: value, Unit: unit, Target: &target, Met: &met, Note: note})
}

// Missed lists the figures whose target was not met.
func (r *Report) Missed() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Met != nil && !*row.Met {
			out = append(out, row)
		}
	}
	return out
}

// Table prints the report: each figure, its target and the ratio to it.
func (r *Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tFIGURE\tVALUE\tTARGET\tRATIO\tMET\tNOTE")
	for _, row := range r.Rows {
		target, ratio, met := "-", "-", "-"
		if row.Target != nil {
			target = format(*row.Target, row.Unit)
			if *row.Target != 0 {
				ratio = fmt.Sprintf("%.2f×", row.Value / *row.Target)
			}
			met = "yes"
			if !*row.Met {
				met = "NO"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Group, row.Name, format(row.Value, row.Unit), target, ratio, met, row.Note)
	}
	return tw.Flush()
}

func format(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.2fs", v)
	case "MB":
		return fmt.Sprintf("%.0f MB", v)
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "":
		return fmt.Sprintf("%g", v)
	default:
		return strings.TrimSpace(fmt.Sprintf("%.4g %s", v, unit))
	}
}

// Write writes bench.json and bench.txt (the table) into dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("failed to encode the benchmark report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("failed to write bench.json: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "bench.txt"))
	if err != nil {
		return fmt.Errorf("failed to write bench.txt: %w", err)
	}
	defer f.Close()
	return r.Table(f)
}
