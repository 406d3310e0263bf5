package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/forecast"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

type forecastFlags struct {
	name, kubeconfig string
	asJSON, noDryRun bool
	timeout          time.Duration
}

func newForecastCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forecast",
		Short: "Say what Karpenter would do on a live cluster if a change were applied, without applying it (read-only)",
	}
	f := &forecastFlags{}
	drift := &cobra.Command{
		Use:   "drift NODEPOOL_FILE",
		Short: "Which running nodes a NodePool edit would drift, the pods their drains would evict, what holds them, and how the budgets pace them",
		Long: `forecast drift reads the NodePools of a file as they would be applied (the API server
completes them with its defaults in a dry run; nothing is stored), and checks each running
NodeClaim of each as Karpenter does: the template's hash against the one the NodeClaim was
launched with, then its labels against the requirements. It prints the nodes that would drift,
the pods each drain would evict, the pods that would hold a node back (karpenter.sh/do-not-disrupt)
or its drain (a PodDisruptionBudget that allows no disruption now), and what the edited NodePool's
budgets allow for drift now and in their windows. Drift the cloud provider reports (the node
class) is not forecast. It changes nothing on the cluster.

--cluster names a local nodeprint cluster; --kubeconfig any cluster with Karpenter's CRDs.
Exit 0 when it forecast, 2 for a bad file or a NodePool the API server refuses.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runForecastDrift(cmd.Context(), stdout, f, args[0])
		},
	}
	drift.Flags().StringVar(&f.name, "cluster", "", "a running local nodeprint cluster")
	drift.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "the kubeconfig of any cluster that runs Karpenter")
	drift.Flags().BoolVar(&f.asJSON, "json", false, "print the forecast as JSON")
	drift.Flags().BoolVar(&f.noDryRun, "no-dry-run", false, "take the file as written instead of asking the API server for its defaults (a field left to its default may then read as a change)")
	drift.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "bound on reading the cluster")
	cmd.AddCommand(drift)
	return cmd
}

func runForecastDrift(ctx context.Context, stdout io.Writer, f *forecastFlags, path string) error {
	if (f.name == "") == (f.kubeconfig == "") {
		return usageError{fmt.Errorf("give either --cluster NAME (a local cluster) or --kubeconfig PATH")}
	}
	nps, err := scenario.LoadNodePools(path)
	if err != nil {
		return usageError{err}
	}
	kubeconfig, _, err := explainTarget(ctx, &explainFlags{name: f.name, kubeconfig: f.kubeconfig, timeout: f.timeout})
	if err != nil {
		return err
	}
	c, err := kube.NewClient(kubeconfig)
	if err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var opts []forecast.Option
	if f.noDryRun {
		opts = append(opts, forecast.WithoutDryRun())
	}
	var out []*forecast.Drift
	for _, np := range nps {
		d, err := forecast.DriftOf(ctx, c, np, opts...)
		var invalid *forecast.InvalidError
		switch {
		case errors.As(err, &invalid):
			return usageError{fmt.Errorf("%s: %w", path, err)}
		case ctx.Err() != nil:
			return &cluster.PhaseError{Phase: "forecast", Err: fmt.Errorf("reading the cluster did not finish within %s (--timeout): %w", f.timeout, err)}
		case err != nil:
			return &cluster.PhaseError{Phase: "forecast", Err: err}
		}
		out = append(out, d)
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, d := range out {
		printDriftForecast(stdout, d)
	}
	return nil
}

func printDriftForecast(w io.Writer, d *forecast.Drift) {
	if !d.Exists {
		fmt.Fprintf(w, "NodePool %s: not on the cluster; applying it creates it, and it has no nodes to drift\n", d.NodePool)
		return
	}
	fmt.Fprintf(w, "NodePool %s (read through %s): %d of %d node(s) would drift, %d pod(s) evicted; %d held back; %d already drifted; %d unknown\n",
		d.NodePool, d.Defaulted, d.Drifting, len(d.Nodes), d.Evicted, d.Held, d.Already, d.Unknown)
	for _, n := range d.Nodes {
		what := "stays"
		switch {
		case n.Already:
			what = "already drifted"
		case n.Drift != "":
			what = "drifts (" + n.Drift + ")"
		case n.Unknown != "":
			what = "unknown: " + n.Unknown
		}
		fmt.Fprintf(w, "  %s (node %s, %s): %s; %d pod(s)\n", n.NodeClaim, orNone(n.Node), orNone(n.InstanceType), what, n.Pods)
		if len(n.HeldBy) > 0 {
			fmt.Fprintf(w, "    held by %s\n", strings.Join(n.HeldBy, ", "))
		}
	}
	b := d.Budget
	switch {
	case b.AllowedNow < 0:
		fmt.Fprintf(w, "  budgets: nothing bounds drift now; Karpenter may replace every drifting node it can at once\n")
	case b.AllowedNow == 0:
		fmt.Fprintf(w, "  budgets: no node may be disrupted for drift now (of %d counted)\n", b.Nodes)
	default:
		fmt.Fprintf(w, "  budgets: %d node(s) at a time for drift now (of %d counted): about %d wave(s) of replacements\n", b.AllowedNow, b.Nodes, b.Waves)
	}
	for _, x := range b.Windows {
		state := "not in force now"
		if x.InForce {
			state = "in force now"
		}
		fmt.Fprintf(w, "  window %q for %s, %s nodes: %s; next opens %s\n", x.Schedule, x.Duration, x.Nodes, state, x.NextOpen.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  not forecast: %s\n", strings.Join(d.NotForecast, "; "))
}
