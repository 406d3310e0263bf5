package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// UnsupportedError is a scenario a provider cannot run, found before
// anything is applied: bad input for that provider, not a failure of it.
type UnsupportedError struct {
	Scenario string
	// Field is the scenario's field that asks for it.
	Field  string
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Scenario, e.Field, e.Reason)
}

// CheckExisting refuses what a cluster nodeprint does not own cannot run:
// infrastructure (L1) faults, which stop components, restart Karpenter or
// rewrite its catalog, and scenarios written for another instance catalog
// than the one the cluster's Karpenter runs with (catalog, a file).
// Workload-side scenarios (baselines, L2 and L3 faults) change only the
// objects the run creates.
func CheckExisting(s *scenario.Scenario, catalog string) error {
	if f := s.Spec.Fault; f != nil {
		d, ok := faults.Lookup(f.Name)
		if ok && d.Layer == faults.L1 {
			return &UnsupportedError{Scenario: s.Path, Field: "spec.fault.name",
				Reason: fmt.Sprintf("%s is an infrastructure (L1) fault: it changes components nodeprint does not own on an existing cluster; run it with --provider local", f.Name)}
		}
	}
	if len(s.Spec.Karpenter.Env()) > 0 {
		return &UnsupportedError{Scenario: s.Path, Field: "spec.karpenter.settings",
			Reason: "nodeprint cannot restart the Karpenter of a cluster it does not own with other settings; run the scenario with --provider local"}
	}
	if !sameFile(s.CatalogPath, catalog) {
		return &UnsupportedError{Scenario: s.Path, Field: "spec.catalog",
			Reason: fmt.Sprintf("the scenario needs catalog %q (%s) but the existing cluster's Karpenter runs with %s; pass --catalog with the file it runs with, or run the scenario with --provider local",
				s.Spec.Catalog, s.CatalogPath, catalog)}
	}
	return nil
}

// sameFile is whether a and b name one file: --catalog is relative to the
// working directory or reached through a symbolic link as often as not,
// while the loader's path is under the fixtures directory. Paths that do
// not exist (the generic catalog before the toolchain is built) compare as
// cleaned absolute paths.
func sameFile(a, b string) bool {
	if ai, err := os.Stat(a); err == nil {
		if bi, err := os.Stat(b); err == nil {
			return os.SameFile(ai, bi)
		}
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(aa) == filepath.Clean(bb)
}

// FixedCatalog is the catalog switcher of a cluster whose Karpenter cannot
// be restarted: asking for another catalog is an error (CheckExisting
// refuses such scenarios first).
type FixedCatalog string

// UseKarpenter accepts only the cluster's own catalog, with the settings
// its Karpenter runs with (CheckExisting refuses a scenario that sets any).
func (f FixedCatalog) UseKarpenter(_ context.Context, path string, settings map[string]string) error {
	if len(settings) > 0 {
		return fmt.Errorf("the cluster's Karpenter cannot be restarted with the scenario's settings")
	}
	if !sameFile(path, string(f)) {
		return fmt.Errorf("the cluster's Karpenter runs with catalog %s and nodeprint cannot restart it with %s", string(f), path)
	}
	return nil
}
