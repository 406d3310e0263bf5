package harness

import (
	"fmt"

	"github.com/nodeprint/nodeprint/pkg/cluster"
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
	if !cluster.SameFile(s.CatalogPath, catalog) {
		return &UnsupportedError{Scenario: s.Path, Field: "spec.catalog",
			Reason: fmt.Sprintf("the scenario needs catalog %q (%s) but the existing cluster's Karpenter runs with %s; pass --catalog with the file it runs with, or run the scenario with --provider local",
				s.Spec.Catalog, s.CatalogPath, catalog)}
	}
	return nil
}

// CheckPodMetrics refuses a scenario whose workloads scale with an HPA on
// a cluster that serves no pod metrics: the HPA could not read the pods'
// usage, never scale, and the run would show nothing of what the scenario
// is about.
func CheckPodMetrics(s *scenario.Scenario, kind cluster.Kind) error {
	if kind.ServesPodMetrics() {
		return nil
	}
	for i, w := range s.Spec.Workloads {
		if w.HPA != nil {
			return &UnsupportedError{Scenario: s.Path, Field: fmt.Sprintf("spec.workloads[%d].hpa", i),
				Reason: fmt.Sprintf("the %s provider serves no pod metrics (metrics.k8s.io), so the HPA of workload %s could not scale; run the scenario with --provider local", kind, w.Name)}
		}
	}
	return nil
}

// CheckKarpenterPlacement refuses, where Karpenter runs in the cluster
// (inCluster), a fault that acts on Karpenter as a process of this machine
// (faults.Definition.KarpenterProcess).
func CheckKarpenterPlacement(s *scenario.Scenario, inCluster bool) error {
	if !inCluster || s.Spec.Fault == nil {
		return nil
	}
	if d, ok := faults.Lookup(s.Spec.Fault.Name); ok && d.KarpenterProcess {
		return &UnsupportedError{Scenario: s.Path, Field: "spec.fault.name",
			Reason: fmt.Sprintf("%s acts on Karpenter as a process of this machine, and Karpenter runs in the cluster (--karpenter-in-cluster); run the scenario without it", s.Spec.Fault.Name)}
	}
	return nil
}
