package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
)

type clusterFlags struct {
	name     string
	provider string
	timeout  time.Duration
	// kubeconfig is the existing provider's cluster.
	kubeconfig string
	// inCluster runs Karpenter in the kind cluster (cluster up).
	inCluster bool
}

func newClusterCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &clusterFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, stop and inspect the cluster the suites run on",
		Args:  cobra.ArbitraryArgs,
		// Without a RunE cobra prints the help and exits 0 for an unknown
		// subcommand; a typo must fail.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
			}
			return usageError{fmt.Errorf("%s needs a command: up, down, status, kubeconfig, restart or prune", cmd.CommandPath())}
		},
	}
	cmd.PersistentFlags().StringVar(&f.name, "name", cluster.DefaultName, "cluster name (clusters with different names run side by side)")
	cmd.PersistentFlags().StringVar(&f.provider, "provider", string(cluster.KindLocal), "cluster provider: local, kind or existing")
	cmd.PersistentFlags().StringVar(&f.kubeconfig, "kubeconfig", "", "with --provider existing: the cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config); up and status only check it, down stops nothing")
	cmd.AddCommand(newClusterUpCmd(f, stdout, stderr), newClusterDownCmd(f, stdout, stderr), newClusterStatusCmd(f, stdout, stderr),
		newClusterKubeconfigCmd(f, stdout, stderr), newClusterRestartCmd(f, stdout, stderr), newClusterPruneCmd(f, stdout, stderr))
	return cmd
}

func newClusterUpCmd(f *clusterFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local control plane and Karpenter (KWOK provider); builds missing binaries first",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return clusterUp(cmd, f, stdout, stderr)
		},
	}
	cmd.Flags().DurationVar(&f.timeout, "timeout", 3*time.Minute, "how long to wait for the cluster to become healthy (a toolchain build is not counted)")
	cmd.Flags().BoolVar(&f.inCluster, "karpenter-in-cluster", false, karpenterInClusterHelp)
	return cmd
}

const karpenterInClusterHelp = "with --provider kind: run Karpenter in the cluster as Karpenter's own CI does (its image built locally, installed from the release's chart with helm) instead of as a process of this machine; see docs/cluster.md"

func newClusterDownCmd(f *clusterFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the cluster and remove its files",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := provider(f, stderr)
			if err != nil {
				return err
			}
			return p.Down(cmd.Context())
		},
	}
	return cmd
}

func newClusterStatusCmd(f *clusterFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Probe every component and print its health; exit 3 when one is unhealthy",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := provider(f, io.Discard)
			if err != nil {
				return err
			}
			st, err := p.Status(cmd.Context())
			if err != nil {
				var nf *cluster.NotFoundError
				if errors.As(err, &nf) {
					return &cluster.PhaseError{Phase: "status", Err: err}
				}
				return err
			}
			printStatus(stdout, st)
			if !st.Healthy() {
				return &cluster.PhaseError{Phase: "status", Err: fmt.Errorf("unhealthy components in cluster %q", st.Name)}
			}
			return nil
		},
	}
	return cmd
}

func newClusterKubeconfigCmd(f *clusterFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the cluster's admin kubeconfig (export KUBECONFIG=$(nodeprint cluster kubeconfig))",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := provider(f, io.Discard)
			if err != nil {
				return err
			}
			if _, err := os.Stat(p.Kubeconfig()); err != nil {
				return &cluster.NotFoundError{Name: f.name, WorkDir: p.Kubeconfig()}
			}
			fmt.Fprintln(stdout, p.Kubeconfig())
			return nil
		},
	}
	return cmd
}

func newClusterRestartCmd(f *clusterFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restart COMPONENT",
		Short: "Restart one component (" + strings.Join(cluster.Components, ", ") + "), e.g. after it died or to pick up a rebuilt binary",
		Long: `restart stops the component if it runs, starts it again and waits until every component is
healthy. karpenter restarts on its ports, connected straight to the API server; a control-plane
component restarts through kwokctl (local provider only). A run on the cluster at that moment
reports the restart as an environment failure: verdict inconclusive (environment), exit 3.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(cluster.Components, args[0]) {
				return usageError{fmt.Errorf("cannot restart %q: not a component; want one of %s", args[0], strings.Join(cluster.Components, ", "))}
			}
			p, err := provider(f, stderr)
			if err != nil {
				return err
			}
			r, ok := p.(cluster.ComponentRestarter)
			if !ok {
				return usageError{fmt.Errorf("restart is not supported by the %s provider: it restarts only what nodeprint runs", f.provider)}
			}
			return r.RestartComponent(cmd.Context(), args[0])
		},
	}
	return cmd
}

func newClusterPruneCmd(f *clusterFlags, stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Stop and remove the clusters left behind by a nodeprint run, suite or benchmark that was killed (kill -9, a crash)",
		Long: `A temporary cluster (started by run, verify, record, attribute, a suite or make bench) records
the pid and start time of the process it lives for. When that process is gone without stopping it,
the cluster is stale: prune stops its processes (the recorded pids, then any process still naming
its directory) and removes its files. Clusters from ` + "`nodeprint cluster up`" + ` have no owner and are never
pruned; stop them with ` + "`nodeprint cluster down --name NAME`" + `.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			stale, err := cluster.Prune(cmd.Context(), cluster.WithProgress(func(e cluster.Event) { printEvent(stderr, start, e) }))
			for _, st := range stale {
				fmt.Fprintf(stdout, "pruned %s: %s; %d process(es) were still running\n", st.Name, st.Reason, len(st.Processes))
			}
			if len(stale) == 0 && err == nil {
				fmt.Fprintln(stdout, "no stale clusters")
			}
			return err
		},
	}
	return cmd
}

func provider(f *clusterFlags, progress io.Writer) (cluster.Provider, error) {
	if err := cluster.ValidateName(f.name); err != nil {
		return nil, usageError{err}
	}
	start := time.Now()
	opts := []cluster.Option{
		cluster.WithName(f.name),
		cluster.WithProgress(func(e cluster.Event) { printEvent(progress, start, e) }),
		cluster.WithBuildOutput(progress),
		cluster.WithKubeconfig(f.kubeconfig),
	}
	if f.timeout > 0 {
		opts = append(opts, cluster.WithTimeout(f.timeout))
	}
	p, err := cluster.New(cluster.Kind(f.provider), opts...)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}

func printEvent(w io.Writer, start time.Time, e cluster.Event) {
	fmt.Fprintf(w, "[%6.1fs] %s\n", time.Since(start).Seconds(), e)
}

// reportStale names the clusters a killed run left behind; it never fails
// the command that asks.
func reportStale(w io.Writer) {
	stale, err := cluster.FindStale()
	if err != nil {
		return
	}
	for _, st := range stale {
		fmt.Fprintf(w, "warning: stale cluster %q (%s; %d process(es) still running): remove it with `nodeprint cluster prune`\n",
			st.Name, st.Reason, len(st.Processes))
	}
}

func clusterUp(cmd *cobra.Command, f *clusterFlags, stdout, stderr io.Writer) error {
	start := time.Now()
	if cluster.Kind(f.provider).Owned() {
		reportStale(stderr)
	}
	type took struct {
		phase string
		d     time.Duration
	}
	var phases []took
	if err := cluster.ValidateName(f.name); err != nil {
		return usageError{err}
	}
	opts := []cluster.Option{
		cluster.WithName(f.name),
		cluster.WithTimeout(f.timeout),
		cluster.WithBuildOutput(stderr),
		cluster.WithKubeconfig(f.kubeconfig),
		cluster.WithProgress(func(e cluster.Event) {
			printEvent(stderr, start, e)
			if e.Done && e.Elapsed > 0 {
				phases = append(phases, took{e.Phase, e.Elapsed})
			}
		}),
	}
	if f.inCluster {
		opts = append(opts, cluster.WithKarpenterInCluster())
	}
	p, err := cluster.New(cluster.Kind(f.provider), opts...)
	if err != nil {
		return usageError{err}
	}
	if err := p.Up(cmd.Context()); err != nil {
		return err
	}
	st, err := p.Status(cmd.Context())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cluster %q is up in %s (Kubernetes %s, Karpenter %s)\n", f.name,
		time.Since(start).Round(10*time.Millisecond), st.KubernetesVersion, st.KarpenterVersion)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PHASE\tTOOK")
	for _, ph := range phases {
		fmt.Fprintf(tw, "  %s\t%s\n", ph.phase, ph.d.Round(10*time.Millisecond))
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "kubeconfig: %s\n", p.Kubeconfig())
	if m, ok := p.(cluster.KarpenterMetrics); ok && m.KarpenterMetrics() != "" {
		// What a runbook's <karpenter-metrics> stands for on this cluster.
		fmt.Fprintf(stdout, "Karpenter metrics: %s\n", m.KarpenterMetrics())
	}
	stop := "nodeprint cluster down --name " + f.name
	if k := cluster.Kind(f.provider); k != cluster.KindLocal {
		stop = fmt.Sprintf("nodeprint cluster down --provider %s --name %s", k, f.name)
	}
	fmt.Fprintf(stdout, "stop it with: %s\n", stop)
	return nil
}

func printStatus(w io.Writer, st cluster.Status) {
	fmt.Fprintf(w, "cluster %q (%s): Kubernetes %s, Karpenter %s\n", st.Name, st.Provider, st.KubernetesVersion, st.KarpenterVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tHEALTHY\tPID\tDETAIL")
	for _, c := range st.Components {
		pid := "-"
		if c.PID > 0 {
			pid = fmt.Sprint(c.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, yesNo(c.Healthy), pid, strings.ReplaceAll(c.Detail, "\n", " "))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "kubeconfig: %s\n", st.Kubeconfig)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// usageArgs marks argument errors as usage errors (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
