// Package sop generates fault-attribution runbooks (standard operating
// procedures) from what the classifier actually does: the rule set, the
// fault catalog, the recorded anomaly fingerprints and the baselines. An
// index with the decision order, a triage table and an escalation matrix,
// a page per rule and a page per baseline, in Markdown and as one
// self-contained HTML file, in English and Chinese. Because the runbooks
// are generated, a test can tell when the committed ones are stale.
package sop

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/lang"
	"github.com/nodeprint/nodeprint/pkg/redact"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Input is what the runbooks are generated from.
type Input struct {
	Rules     *attribute.RuleSet
	Signals   []attribute.SignalDef
	Faults    []*faults.Definition
	Scenarios []*scenario.Scenario
	Baselines []*fingerprint.Baseline
	Anomalies []*attribute.Anomaly
	// ScenariosDir and FingerprintsDir are shown in the pages as the
	// source of the numbers, relative to Root when they are inside it.
	ScenariosDir, FingerprintsDir string
	// Root is the directory paths in the pages are relative to (the
	// repository); empty shows them as given.
	Root string
}

// InputError is an input file the generator cannot use.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Load reads the scenarios under scenariosDir (recursively), the baselines
// in fingerprintsDir and the anomalies in fingerprintsDir/faults, with the
// built-in rules and fault catalog. Pages show paths relative to root.
func Load(loader *scenario.Loader, root, scenariosDir, fingerprintsDir string) (*Input, error) {
	rs, err := attribute.Rules()
	if err != nil {
		return nil, err
	}
	in := &Input{Rules: rs, Signals: attribute.Signals(), Faults: faults.Catalog(), ScenariosDir: scenariosDir, FingerprintsDir: fingerprintsDir, Root: root}
	if in.Scenarios, err = loadScenarios(loader, scenariosDir); err != nil {
		return nil, err
	}
	files, err := yamlFiles(fingerprintsDir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := fingerprint.LoadBaseline(f)
		if err != nil {
			return nil, &InputError{f, err}
		}
		in.Baselines = append(in.Baselines, b)
	}
	faultDir := repo.FaultFingerprints(fingerprintsDir)
	if _, err := os.Stat(faultDir); err == nil {
		files, err := yamlFiles(faultDir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			a, err := attribute.LoadAnomaly(f)
			if err != nil {
				return nil, &InputError{f, err}
			}
			if _, ok := rs.Rule(a.Rule); !ok {
				return nil, &InputError{f, fmt.Errorf("rule: recorded as %q, which the rule set does not have: re-record it with `nodeprint record`", a.Rule)}
			}
			in.Anomalies = append(in.Anomalies, a)
		}
	}
	if len(in.Baselines) == 0 && len(in.Anomalies) == 0 {
		return nil, &InputError{fingerprintsDir, errors.New("holds no baseline (*.yaml) and no fault fingerprint (faults/*.yaml): record them with `nodeprint record`")}
	}
	return in, nil
}

func yamlFiles(dir string) ([]string, error) {
	files, err := scenario.YAMLFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read fingerprints: %w", err)
	}
	return files, nil
}

// loadScenarios loads every directory under dir that holds scenario files;
// names must be unique across them, since fingerprints are keyed by name.
func loadScenarios(loader *scenario.Loader, dir string) ([]*scenario.Scenario, error) {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if m, _ := filepath.Glob(filepath.Join(p, "*.yaml")); len(m) > 0 {
				dirs = append(dirs, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to read scenarios: %w", err)
	}
	var out []*scenario.Scenario
	seen := map[string]string{}
	for _, d := range dirs {
		ss, err := loader.LoadDir(d)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			if prev, ok := seen[s.Metadata.Name]; ok {
				return nil, &InputError{s.Path, fmt.Errorf("metadata.name: %q is also the name of %s; fingerprints are keyed by name, so names must be unique", s.Metadata.Name, prev)}
			}
			seen[s.Metadata.Name] = s.Path
			out = append(out, s)
		}
	}
	return out, nil
}

// Files are generated files by path relative to the runbook directory.
type Files map[string][]byte

// Paths returns the file paths, sorted.
func (f Files) Paths() []string {
	out := make([]string, 0, len(f))
	for p := range f {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Generate renders the runbooks in the given languages (default: all).
func Generate(in *Input, langs ...string) (Files, error) {
	if len(langs) == 0 {
		langs = lang.All
	}
	files := Files{}
	for _, l := range langs {
		if !lang.Known(l) {
			return nil, fmt.Errorf("unknown language %q: use en or zh", l)
		}
		s := newSite(in, l)
		if err := s.render(files); err != nil {
			return nil, err
		}
	}
	files["README.md"] = rootReadme(langs)
	// The pages quote recorded evidence (anomalies' signals, events):
	// nothing secret a cluster said may reach a runbook.
	for p, b := range files {
		files[p] = []byte(redact.String(string(b)))
	}
	return files, nil
}

// Write writes the files under dir and removes generated files of an
// earlier generation that are no longer produced (a deleted rule's page).
func Write(dir string, files Files) error {
	for _, p := range stale(dir, files) {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("failed to remove stale runbook %s: %w", p, err)
		}
	}
	for _, p := range files.Paths() {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("failed to write runbooks: %w", err)
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return fmt.Errorf("failed to write runbooks: %w", err)
		}
	}
	return nil
}

// Compare lists how dir differs from files: changed, missing and extra
// generated files. Empty means the runbooks in dir are current.
func Compare(dir string, files Files) []string {
	var out []string
	for _, p := range files.Paths() {
		b, err := os.ReadFile(filepath.Join(dir, p))
		switch {
		case err != nil:
			out = append(out, "missing "+p)
		case !bytes.Equal(b, files[p]):
			out = append(out, "changed "+p)
		}
	}
	for _, p := range stale(dir, files) {
		out = append(out, "extra "+p)
	}
	return out
}

// stale lists generated files (Markdown and HTML under a language
// directory) in dir that files does not have.
func stale(dir string, files Files) []string {
	var out []string
	for _, l := range lang.All {
		if !files.hasLang(l) {
			continue // a one-language generation leaves the other alone
		}
		_ = filepath.WalkDir(filepath.Join(dir, l), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			if _, ok := files[rel]; !ok && (strings.HasSuffix(rel, ".md") || strings.HasSuffix(rel, ".html")) {
				out = append(out, rel)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

func (f Files) hasLang(l string) bool {
	for p := range f {
		if strings.HasPrefix(p, l+"/") {
			return true
		}
	}
	return false
}
