// Package mutants is the harness testing itself: a set of Karpenter builds
// from the pinned module, each with one deliberate regression (a patch),
// and the matrix that says, for every mutant and scenario, whether nodeprint
// caught the regression and named the layer it belongs to (L2: Karpenter's
// behaviour changed under the same inputs). `make mutants` builds and runs
// them (tools/mutants); the set is data (fixtures/mutants/mutants.yaml).
package mutants

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// APIVersion and Kind of a mutant set file.
const (
	APIVersion = "nodeprint.dev/v1alpha1"
	Kind       = "Mutants"
)

// Prefixes of Set.Scenarios' entries: FaultPrefix marks a fault scenario
// (fixtures/scenarios/faults/), ScaleInPrefix a plain scenario with a
// scale-in phase (fixtures/scenarios/scale-in/).
const (
	FaultPrefix   = "faults/"
	ScaleInPrefix = "scale-in/"
)

// Set is a mutant set file.
type Set struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Karpenter is the release the patches apply to.
	Karpenter string `json:"karpenter"`
	// Scenarios every mutant and the control run: names under
	// fixtures/scenarios/, faults/<name> for a fault scenario,
	// scale-in/<name> for a plain one with a scale-in phase.
	Scenarios []string `json:"scenarios"`
	// AffectedOnly runs each mutant on the scenarios it affects only, as
	// tools/mutants -affected-only does (default false: every scenario).
	AffectedOnly bool     `json:"affectedOnly,omitempty"`
	Mutants      []Mutant `json:"mutants"`

	// Path is the file it was read from; patches are relative to it.
	Path string `json:"-"`
}

// Mutant is one deliberate regression.
type Mutant struct {
	Name        string `json:"name"`
	Class       string `json:"class"`
	Description string `json:"description"`
	// Patch is a unified diff against the Karpenter module (-p1),
	// relative to the set file.
	Patch string `json:"patch"`
	// Unaffected names the plain scenarios the mutant cannot change, each
	// with the reason; every other plain scenario must catch it.
	Unaffected map[string]string `json:"unaffected,omitempty"`
	// Breaks names the fault scenarios whose expectation the mutant
	// breaks (the expected rule no longer fires), each with the reason;
	// every other fault scenario must still be attributed as expected.
	Breaks map[string]string `json:"breaks,omitempty"`
	// Equivalent, when set, says why the mutant has no effect the KWOK
	// provider can show: every scenario is then expected to pass.
	Equivalent string `json:"equivalent,omitempty"`
}

// PatchPath is the mutant's patch file.
func (s *Set) PatchPath(m Mutant) string { return filepath.Join(filepath.Dir(s.Path), m.Patch) }

// ScenarioName is the scenario's metadata name for an entry of Scenarios.
func ScenarioName(entry string) string {
	return strings.TrimPrefix(strings.TrimPrefix(entry, FaultPrefix), ScaleInPrefix)
}

// IsFault says whether an entry of Scenarios is a fault scenario.
func IsFault(entry string) bool { return strings.HasPrefix(entry, FaultPrefix) }

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Load reads and validates a mutant set file; every problem is reported
// with the file and field.
func Load(path string) (*Set, error) {
	data, err := strictyaml.ReadFile(path, 1<<20)
	if err != nil {
		return nil, err
	}
	s := &Set{Path: path}
	errs, fatal := strictyaml.Decode(path, data, s, "the fields are documented in docs/mutants.md")
	if fatal {
		return nil, errs
	}
	all := append(errs, s.validate()...)
	if len(all) > 0 {
		return nil, all
	}
	return s, nil
}

func (s *Set) validate() strictyaml.ErrorList {
	var errs strictyaml.ErrorList
	bad := func(field, format string, args ...any) {
		errs = append(errs, &strictyaml.FieldError{File: s.Path, Path: field, Msg: fmt.Sprintf(format, args...)})
	}
	if s.APIVersion != APIVersion || s.Kind != Kind {
		bad("kind", "want apiVersion %s and kind %s, got %q and %q", APIVersion, Kind, s.APIVersion, s.Kind)
	}
	if !strings.HasPrefix(s.Karpenter, "v") {
		bad("karpenter", "want the release the patches apply to, such as v1.14.1, got %q", s.Karpenter)
	}
	if len(s.Scenarios) == 0 {
		bad("scenarios", "name at least one scenario under fixtures/scenarios/ (faults/<name> for a fault scenario, scale-in/<name> for one with a scale-in)")
	}
	kinds := map[string]bool{} // scenario name → fault
	for i, sc := range s.Scenarios {
		if !nameRE.MatchString(ScenarioName(sc)) {
			bad(fmt.Sprintf("scenarios[%d]", i), "%q is not a scenario name (lower-case letters, digits, dashes; faults/<name> for a fault, scale-in/<name> for a scale-in)", sc)
			continue
		}
		if _, dup := kinds[ScenarioName(sc)]; dup {
			bad(fmt.Sprintf("scenarios[%d]", i), "%q is listed twice", sc)
		}
		kinds[ScenarioName(sc)] = IsFault(sc)
	}
	seen := map[string]bool{}
	for i, m := range s.Mutants {
		field := func(f string) string { return fmt.Sprintf("mutants[%d].%s", i, f) }
		switch {
		case !nameRE.MatchString(m.Name):
			bad(field("name"), "%q: want lower-case letters, digits and dashes", m.Name)
		case m.Name == Control:
			bad(field("name"), "%q is the unmutated build's name", m.Name)
		case seen[m.Name]:
			bad(field("name"), "%q is used twice", m.Name)
		}
		seen[m.Name] = true
		if m.Class == "" || m.Description == "" {
			bad(field("class"), "say which class of regression the mutant models (class) and what it does (description)")
		}
		if m.Patch == "" {
			bad(field("patch"), "name the patch file (a unified diff against sigs.k8s.io/karpenter@%s, -p1)", s.Karpenter)
		} else if _, err := os.Stat(s.PatchPath(m)); err != nil {
			bad(field("patch"), "%v", err)
		}
		for _, sc := range slices.Sorted(maps.Keys(m.Unaffected)) {
			if fault, ok := kinds[sc]; !ok || fault {
				bad(field("unaffected."+sc), "not a plain scenario of scenarios (fault scenarios go under breaks)")
			} else if m.Unaffected[sc] == "" {
				bad(field("unaffected."+sc), "give the reason the mutant cannot change it")
			}
		}
		for _, sc := range slices.Sorted(maps.Keys(m.Breaks)) {
			if fault, ok := kinds[sc]; !ok || !fault {
				bad(field("breaks."+sc), "not a fault scenario of scenarios (faults/<name>)")
			} else if m.Breaks[sc] == "" {
				bad(field("breaks."+sc), "give the reason the mutant breaks its expectation")
			}
		}
		if m.Equivalent != "" && (len(m.Unaffected) > 0 || len(m.Breaks) > 0) {
			bad(field("equivalent"), "an equivalent mutant changes nothing: leave out unaffected and breaks")
		}
	}
	if len(s.Mutants) == 0 {
		bad("mutants", "list at least one mutant")
	}
	return errs
}

// Select returns the named mutants in the set's order; names that are
// not in the set are an error.
func (s *Set) Select(names []string) ([]Mutant, error) {
	if len(names) == 0 {
		return s.Mutants, nil
	}
	var out []Mutant
	var unknown []string
	for _, n := range names {
		i := slices.IndexFunc(s.Mutants, func(m Mutant) bool { return m.Name == n })
		if i < 0 {
			unknown = append(unknown, n)
			continue
		}
		out = append(out, s.Mutants[i])
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s has no mutant %s (it has %s)", s.Path, strings.Join(unknown, ", "), strings.Join(s.names(), ", "))
	}
	return out, nil
}

func (s *Set) names() []string {
	var out []string
	for _, m := range s.Mutants {
		out = append(out, m.Name)
	}
	return out
}

// Narrow keeps only the named scenarios (metadata names, or entries as
// the set writes them); a name the set does not run is an error.
func (s *Set) Narrow(names []string) error {
	var kept, unknown []string
	for _, n := range names {
		i := slices.IndexFunc(s.Scenarios, func(e string) bool { return e == n || ScenarioName(e) == n })
		if i < 0 {
			unknown = append(unknown, n)
			continue
		}
		kept = append(kept, s.Scenarios[i])
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%s runs no scenario %s (it runs %s)", s.Path, strings.Join(unknown, ", "), strings.Join(s.Scenarios, ", "))
	}
	s.Scenarios = kept
	return nil
}
