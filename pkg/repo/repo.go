// Package repo is the layout of a nodeprint repository: where its
// scenarios, fixtures, fingerprints, runbooks and mutants live. Commands,
// suites and drivers ask it for a path instead of joining names of their
// own, so the layout is written once.
package repo

import "path/filepath"

// Layout is a repository checked out at Root.
type Layout struct{ Root string }

// At is the layout of the repository at root.
func At(root string) Layout { return Layout{Root: root} }

// Fixtures holds nodepools/, catalogs/, kwok-stages/, bench/ and mutants/.
func (l Layout) Fixtures() string { return filepath.Join(l.Root, "fixtures") }

// Scenarios holds the baseline scenarios; faults/ and fault-variants/ the fault ones.
func (l Layout) Scenarios() string { return filepath.Join(l.Fixtures(), "scenarios") }

// FaultScenarios holds the fault catalog's scenarios.
func (l Layout) FaultScenarios() string { return filepath.Join(l.Scenarios(), "faults") }

// Scenario is the file of a scenario named name (faults/<name> for a fault one).
func (l Layout) Scenario(name string) string { return filepath.Join(l.Scenarios(), name+".yaml") }

// Fingerprints holds the baselines; FaultFingerprints(dir) the anomalies.
func (l Layout) Fingerprints() string { return filepath.Join(l.Root, "fingerprints") }

// FaultFingerprints is where the anomalies of a fingerprint directory live.
func FaultFingerprints(fingerprints string) string { return filepath.Join(fingerprints, "faults") }

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
func RunbookRulePage(rule string) string { return RunbooksDir + "/en/" + RulePage(rule) }

// MutantSet is the default mutant set of `make mutants`.
func (l Layout) MutantSet() string { return filepath.Join(l.Fixtures(), "mutants", "mutants.yaml") }

// BenchScenario is a scale scenario of `make bench` (pods-<n>).
func (l Layout) BenchScenario(name string) string {
	return filepath.Join(l.Fixtures(), "bench", name+".yaml")
}
