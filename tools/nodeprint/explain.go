package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/explain"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/redact"
)

func newExplainCmd(stdout io.Writer) *cobra.Command {
	var (
		name, kubeconfig, catalogPath string
		namespaces                    []string
		asJSON                        bool
		timeout                       time.Duration
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (name == "") == (kubeconfig == "") {
				return usageError{fmt.Errorf("give either --cluster NAME (a local cluster) or --kubeconfig PATH")}
			}
			var opts []explain.Option
			if name != "" {
				local, err := cluster.NewLocal(cluster.WithName(name))
				if err != nil {
					return usageError{err}
				}
				if _, err := local.Status(cmd.Context()); err != nil {
					return err
				}
				kubeconfig = local.Kubeconfig()
				opts = append(opts, explain.WithCatalog(local.Catalog()), explain.WithHealth(func(ctx2 context.Context) string {
					st, err := local.Status(ctx2)
					if err != nil {
						return err.Error()
					}
					return st.Problem()
				}))
			}
			if catalogPath != "" {
				opts = append(opts, explain.WithCatalog(catalogPath))
			}
			if len(namespaces) > 0 {
				opts = append(opts, explain.InNamespaces(namespaces...))
			}
			opts = append(opts, explain.WithTimeout(timeout))
			cfg, err := kube.Config(kubeconfig)
			if err != nil {
				return usageError{err}
			}
			c, err := kube.NewClient(kubeconfig)
			if err != nil {
				return usageError{err}
			}
			ws, err := explain.Explain(cmd.Context(), cfg, c, opts...)
			if err != nil {
				return &cluster.PhaseError{Phase: "explain", Err: err}
			}
			// The cluster may be anyone's: what its pods and events say
			// is masked before it is printed.
			if ws, err = redact.Value(ws); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(ws)
			}
			printExplained(stdout, ws)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "cluster", "", "a running local nodeprint cluster")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the kubeconfig of any cluster that runs Karpenter")
	cmd.Flags().StringVar(&catalogPath, "catalog", "", "the KWOK provider instance-types file Karpenter uses (enables the fit rules and prices)")
	cmd.Flags().StringSliceVarP(&namespaces, "namespace", "n", nil, "only these namespaces (default: all but kube-system, kube-public, kube-node-lease, karpenter)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the workloads and verdicts as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "bound on reading the cluster")
	return cmd
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
