package attribute

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/nodeprint/nodeprint/pkg/layer"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/redact"
	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// AnomalySchemaVersion is the version of fingerprints/faults/<scenario>.yaml.
const AnomalySchemaVersion = 1

// Anomaly is the recorded "resource fingerprint" of one failure pattern:
// what a fault scenario's run looked like against its clean run, and how it
// was attributed. The runbooks quote it.
type Anomaly struct {
	SchemaVersion int               `json:"schemaVersion"`
	Scenario      string            `json:"scenario"`
	Fault         string            `json:"fault"`
	Layer         layer.Layer       `json:"layer"`
	Params        map[string]string `json:"params,omitempty"`
	Verdict       string            `json:"verdict"`
	Rule          string            `json:"rule"`
	// Baseline and Faulted are the clean and the faulted run's fingerprints.
	Baseline *fingerprint.Fingerprint `json:"baseline"`
	Faulted  *fingerprint.Fingerprint `json:"faulted"`
	// Deviations are the faulted run's differences from the clean one.
	Deviations []diff.Deviation `json:"deviations"`
	// Evidence are the deciding rule's signals; Signals every other
	// available signal that was not zero.
	Evidence []Value `json:"evidence"`
	Signals  []Value `json:"signals"`
}

// NewAnomaly records a fault run's pattern.
func NewAnomaly(scenario, fault string, params map[string]string, base, faulted *fingerprint.Fingerprint, d *diff.Diff, v *Verdict) *Anomaly {
	a := &Anomaly{SchemaVersion: AnomalySchemaVersion, Scenario: scenario, Fault: fault, Layer: v.Layer, Params: params,
		Verdict: v.Verdict, Rule: v.Rule, Baseline: base, Faulted: faulted, Deviations: []diff.Deviation{}, Evidence: []Value{}, Signals: []Value{}}
	if d != nil {
		a.Deviations = append(a.Deviations, d.Deviations...)
	}
	decided := map[string]bool{}
	if len(v.Fired) > 0 {
		a.Evidence = append(a.Evidence, v.Fired[0].Evidence...)
		for _, e := range v.Fired[0].Evidence {
			decided[e.ID] = true
		}
	}
	for _, s := range v.Signals {
		if s.Available && s.Value != 0 && !decided[s.ID] {
			a.Signals = append(a.Signals, s)
		}
	}
	sort.Slice(a.Signals, func(i, j int) bool { return a.Signals[i].ID < a.Signals[j].ID })
	return a
}

// Save writes the anomaly.
func (a *Anomaly) Save(path string) error {
	// Its evidence quotes what the cluster said; it is committed and
	// rendered into runbooks.
	red, err := redact.Value(a)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(red)
	if err != nil {
		return fmt.Errorf("failed to encode anomaly %s: %w", a.Scenario, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	head := []byte("# Recorded by `nodeprint record` (or the faults suite with -update-fingerprints):\n# the anomaly fingerprint of fault scenario " + a.Scenario + ". Review it like code.\n")
	return os.WriteFile(path, append(head, b...), 0o644)
}

// LoadAnomaly reads an anomaly strictly; every problem is a
// *strictyaml.FieldError naming the file, field and line.
func LoadAnomaly(path string) (*Anomaly, error) {
	b, err := strictyaml.ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	a := &Anomaly{}
	if errs, _ := strictyaml.Decode(path, b, a, "re-record with `nodeprint record` rather than edit"); len(errs) > 0 {
		return nil, errs
	}
	pos, _ := strictyaml.NewPositions(b)
	if a.SchemaVersion != AnomalySchemaVersion {
		return nil, &strictyaml.FieldError{File: path, Path: "schemaVersion", Line: pos.Line("schemaVersion"),
			Msg: fmt.Sprintf("%d, want %d (re-record it)", a.SchemaVersion, AnomalySchemaVersion)}
	}
	if a.Scenario == "" {
		return nil, &strictyaml.FieldError{File: path, Path: "scenario", Msg: "no scenario name"}
	}
	return a, nil
}
