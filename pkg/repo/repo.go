// Package repo is the layout of the two kinds of repository nodeprint
// works in: its own (scenarios under fixtures/, fingerprints/, runbooks/,
// mutants) and a team's (`nodeprint init`: scenarios/, fingerprints/,
// runbooks/ at the root, marked by nodeprint.yaml). Commands, suites and
// drivers ask it for a path instead of joining names of their own, so the
// layout is written once.
package repo

import (
	"os"
	"path/filepath"

	"github.com/nodeprint/nodeprint/pkg/lang"
)

// ProjectFile marks the root of a team repository; `nodeprint init`
// writes it, and commands run anywhere below it default to its
// scenarios and fingerprints.
const ProjectFile = "nodeprint.yaml"

// Layout is a repository checked out at Root.
type Layout struct {
	Root string
	// Team: a team repository, whose scenarios are at the root.
	Team bool
}

// At is the layout of nodeprint's repository at root.
func At(root string) Layout { return Layout{Root: root} }

// TeamAt is the layout of a team repository at root.
func TeamAt(root string) Layout { return Layout{Root: root, Team: true} }

// Find is the layout commands default to: the nearest directory at or
// above wd that holds ProjectFile (a team repository), else nodeprint's
// checkout when there is one, else a team repository at wd.
func Find(wd, checkout string) Layout {
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ProjectFile)); err == nil {
			return TeamAt(d)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if checkout != "" {
		return At(checkout)
	}
	return TeamAt(wd)
}

// Fixtures holds nodepools/, catalogs/, kwok-stages/, bench/ and mutants/.
func (l Layout) Fixtures() string { return filepath.Join(l.Root, "fixtures") }

// Scenarios holds the baseline scenarios; in nodeprint's repository
// faults/ and fault-variants/ hold the fault ones.
func (l Layout) Scenarios() string {
	if l.Team {
		return filepath.Join(l.Root, "scenarios")
	}
	return filepath.Join(l.Fixtures(), "scenarios")
}

// FaultScenarios holds the fault catalog's scenarios.
func (l Layout) FaultScenarios() string { return filepath.Join(l.Scenarios(), "faults") }

// ScaleInScenarios holds the scenarios with a scale-in phase whose
// baselines the baseline suite verifies (their baselines sit with the
// others, in Fingerprints).
func (l Layout) ScaleInScenarios() string { return filepath.Join(l.Scenarios(), "scale-in") }

// Scenario is the file of a scenario named name (faults/<name> for a fault one).
func (l Layout) Scenario(name string) string { return filepath.Join(l.Scenarios(), name+".yaml") }

// Fingerprints holds the baselines; FaultFingerprints(dir) the anomalies.
func (l Layout) Fingerprints() string { return filepath.Join(l.Root, "fingerprints") }

// FaultFingerprints is where the anomalies of a fingerprint directory live.
func FaultFingerprints(fingerprints string) string { return filepath.Join(fingerprints, "faults") }

// AnomalyPath is where a fault scenario's anomaly is recorded.
func AnomalyPath(fingerprints, scenario string) string {
	return filepath.Join(FaultFingerprints(fingerprints), scenario+".yaml")
}

// RunbooksDir is where `nodeprint sop` writes, relative to the root;
// each language has its directory in it.
const RunbooksDir = "runbooks"

// Runbooks is where `nodeprint sop` writes.
func (l Layout) Runbooks() string { return filepath.Join(l.Root, RunbooksDir) }

// RulePage is a rule's runbook page relative to its language's directory.
func RulePage(rule string) string { return "rules/" + rule + ".md" }

// BaselinePage is a baseline's runbook page relative to its language's directory.
func BaselinePage(scenario string) string { return "baselines/" + scenario + ".md" }

// RunbookRulePage is a rule's English runbook page relative to the root,
// as reports link it.
func RunbookRulePage(rule string) string { return RunbooksDir + "/" + lang.En + "/" + RulePage(rule) }

// MutantSet is the default mutant set of `make mutants`.
func (l Layout) MutantSet() string { return filepath.Join(l.Fixtures(), "mutants", "mutants.yaml") }

// BenchScenario is a scale scenario of `make bench` (pods-<n>).
func (l Layout) BenchScenario(name string) string {
	return filepath.Join(l.Fixtures(), "bench", name+".yaml")
}
