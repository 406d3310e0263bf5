package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/explain"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/redact"
)

// explainFlags are explain's flags.
type explainFlags struct {
	name, kubeconfig, catalogPath string
	namespaces                    []string
	asJSON                        bool
	timeout                       time.Duration
}

func newExplainCmd(stdout io.Writer) *cobra.Command {
	f := &explainFlags{}
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Attribute what is wrong on a live cluster now: per troubled workload, the layer, the rule and its evidence (read-only)",
		Long: `explain lists the workloads whose pods are Pending, restarting, OOMKilled or waiting
(CrashLoopBackOff, ImagePullBackOff, …) now, observes their pods, their NodePool's NodeClaims
and nodes and the events about them, and applies the attribution rules without a baseline
(rules that need one, like slow boot, cannot fire). It prints the verdict per workload with
its evidence, the runbook page to open and the first command to run. It changes nothing.

--cluster names a local nodeprint cluster (its catalog is known, so the fit rules work);
--kubeconfig any cluster running Karpenter (give --catalog for the fit rules; without it,
allocatable resources come from the Node objects, and pods no NodePool admits read
inconclusive, since only the catalog tells a policy that excludes instances (L2) from pods
asking for what no instance offers (L3)). A workload no rule explains is inconclusive.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runExplain(cmd.Context(), stdout, f) },
	}
	cmd.Flags().StringVar(&f.name, "cluster", "", "a running local nodeprint cluster")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "the kubeconfig of any cluster that runs Karpenter")
	cmd.Flags().StringVar(&f.catalogPath, "catalog", "", "the KWOK provider instance-types file Karpenter uses (enables the fit rules and prices)")
	cmd.Flags().StringSliceVarP(&f.namespaces, "namespace", "n", nil, "only these namespaces (default: all but kube-system, kube-public, kube-node-lease, karpenter)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the workloads and verdicts as JSON")
	cmd.Flags().DurationVar(&f.timeout, "timeout", time.Minute, "bound on reading the cluster")
	return cmd
}

func runExplain(ctx context.Context, stdout io.Writer, f *explainFlags) error {
	if (f.name == "") == (f.kubeconfig == "") {
		return usageError{fmt.Errorf("give either --cluster NAME (a local cluster) or --kubeconfig PATH")}
	}
	kubeconfig, opts, err := explainTarget(ctx, f)
	if err != nil {
		return err
	}
	cfg, err := kube.Config(kubeconfig)
	if err != nil {
		return usageError{err}
	}
	c, err := kube.NewClient(kubeconfig)
	if err != nil {
		return usageError{err}
	}
	ws, err := explain.Explain(ctx, cfg, c, opts...)
	if err != nil {
		return &cluster.PhaseError{Phase: "explain", Err: err}
	}
	// The cluster may be anyone's: what its pods and events say is masked
	// before it is printed.
	if ws, err = redact.Value(ws); err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ws)
	}
	printExplained(stdout, ws)
	return nil
}

// explainTarget is the kubeconfig to explain and the options: the
// cluster's catalog and health where its provider knows them (a local
// cluster), and what the flags give.
func explainTarget(ctx context.Context, f *explainFlags) (string, []explain.Option, error) {
	kind := cluster.KindLocal
	if f.kubeconfig != "" {
		kind = cluster.KindExisting
	}
	h, err := harness.Attach(ctx, harness.WithProvider(kind), harness.WithCluster(f.name),
		harness.WithKubeconfig(f.kubeconfig), harness.WithCatalog(f.catalogPath))
	var bad *harness.UsageError
	if errors.As(err, &bad) {
		return "", nil, usageError{err}
	}
	if err != nil {
		return "", nil, err
	}
	var opts []explain.Option
	if c, ok := h.Provider.(cluster.CatalogSource); ok && c.Catalog() != "" {
		opts = append(opts, explain.WithCatalog(c.Catalog()))
	}
	if f.catalogPath != "" {
		opts = append(opts, explain.WithCatalog(f.catalogPath))
	}
	if _, ok := h.Provider.(cluster.KarpenterOwner); ok {
		// nodeprint's own cluster: a component down is evidence.
		opts = append(opts, explain.WithHealth(func(ctx context.Context) string {
			st, err := h.Provider.Status(ctx)
			if err != nil {
				return err.Error()
			}
			return st.Problem()
		}))
	}
	if len(f.namespaces) > 0 {
		opts = append(opts, explain.InNamespaces(f.namespaces...))
	}
	return h.Kubeconfig(), append(opts, explain.WithTimeout(f.timeout)), nil
}

func printExplained(w io.Writer, ws []explain.Workload) {
	if len(ws) == 0 {
		fmt.Fprintln(w, "no workload has pending, restarting, OOMKilled or waiting pods")
		return
	}
	for _, x := range ws {
		var probs []string
		for p, n := range x.Problems {
			probs = append(probs, fmt.Sprintf("%d %s", n, p))
		}
		sort.Strings(probs)
		v := x.Verdict
		pool := "NodePool " + orNone(x.NodePool)
		if x.Unadmitted != "" {
			pool = "no NodePool admits it"
		}
		fmt.Fprintf(w, "%s/%s (%s): %s\n", x.Namespace, x.Name, pool, strings.Join(probs, ", "))
		if x.Unadmitted != "" {
			fmt.Fprintf(w, "    not admitted: %s\n", x.Unadmitted)
		}
		fmt.Fprintf(w, "    verdict: %s", v.Verdict)
		if v.Rule != "" {
			fmt.Fprintf(w, " by rule %s (%s); owner: %s", v.Rule, v.Title.En, v.Owner.En)
		}
		fmt.Fprintln(w)
		printReasonAndEvidence(w, v)
		if x.Runbook != "" {
			fmt.Fprintf(w, "    runbook: %s\n    first check: %s\n", x.Runbook, x.FirstCheck)
		}
	}
}

// orNone: a NodePool explain could not tell (several admit the pods).
func orNone(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
