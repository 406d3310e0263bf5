package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/faults"
)

// whereFaultsRun says which faults and scenarios a provider refuses, from
// the same predicates the job's checks use (harness.CheckExisting,
// harness.CheckPodMetrics).
func whereFaultsRun(k cluster.Kind) string {
	faults := "every fault"
	if !k.Owned() {
		faults = "L2 and L3 faults only (an L1 fault changes components nodeprint does not own)"
	}
	hpa := "scenarios whose workloads scale with an HPA run"
	if !k.ServesPodMetrics() {
		hpa = "scenarios whose workloads scale with an HPA are refused (the cluster serves no pod metrics)"
	}
	return faults + "; " + hpa
}

func newFaultsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "faults",
		Short: "List the fault catalog: each fault's layer, mechanism and parameters",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			for _, d := range faults.Catalog() {
				fmt.Fprintf(stdout, "%s (%s)\n    %s\n", d.Name, d.Layer, d.Summary)
				for _, p := range d.Params {
					def := p.Default
					if def == "" {
						def = "-"
					}
					fmt.Fprintf(stdout, "    param %-14s %-9s default %-8s %s\n", p.Name, p.Kind, def, p.Help)
				}
			}
			fmt.Fprintln(stdout, "\nwhere they run (refused before anything is applied, exit 2):")
			for _, k := range []cluster.Kind{cluster.KindLocal, cluster.KindKind, cluster.KindExisting} {
				fmt.Fprintf(stdout, "    %-9s %s\n", k, whereFaultsRun(k))
			}
			fmt.Fprintf(stdout, "    %-9s with --karpenter-in-cluster: %s\n", cluster.KindKind, inClusterRefuses())
			return nil
		},
	}
}

// inClusterRefuses says which faults a cluster whose Karpenter runs in a
// pod refuses (harness.CheckKarpenterPlacement's predicate).
func inClusterRefuses() string {
	var names []string
	for _, d := range faults.Catalog() {
		if d.KarpenterProcess {
			names = append(names, d.Name)
		}
	}
	if len(names) == 0 {
		return "as kind"
	}
	return "as kind, and refuses " + strings.Join(names, ", ") + " (it acts on Karpenter as a process of this machine)"
}
