package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/importer"
	"github.com/nodeprint/nodeprint/pkg/kube"
)

func newImportCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		kubeconfig, dir, name, nodePool string
		namespaces                      []string
		timeout                         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "import --kubeconfig PATH -n NAMESPACE... [--out DIR]",
		Short: "Write a scenario from a live cluster: its workloads with their replicas and HPAs, and its NodePools (read-only)",
		Long: `import reads the Deployments, StatefulSets, ReplicaSets (not owned by a Deployment) and Jobs (not
owned by a CronJob) of the namespaces, the HPAs that target them and the NodePools, and writes into
--out (default .): scenarios/<name>.yaml, nodepools.yaml and workloads/<namespace>/<kind>-<name>.yaml,
the scenario naming the others (policy.nodePoolFile, workloads[].manifest). The scenario runs under
the NodePool whose nodes run most of the pods (--nodepool to choose). It only reads, never Secrets
or ConfigMaps; names and labels are kept, annotations and status are not, and what was left out is
said on stderr. Files that exist are not overwritten.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return usageError{fmt.Errorf("--kubeconfig PATH is needed: the cluster to import from")}
			}
			c, err := kube.NewClient(kubeconfig)
			if err != nil {
				return usageError{err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			res, err := importer.Import(ctx, c, importer.Options{Name: name, Namespaces: namespaces, NodePool: nodePool})
			if err != nil {
				if ctx.Err() != nil || !errors.Is(err, importer.ErrInput) {
					return &cluster.PhaseError{Phase: "import", Err: err}
				}
				return usageError{err}
			}
			if err := writeNew(dir, res.Files); err != nil {
				return err
			}
			for _, n := range res.Notes {
				fmt.Fprintln(stderr, "note:", n)
			}
			fmt.Fprintf(stdout, "scenario written to %s; record its baseline with `nodeprint record %s`\n", filepath.Join(dir, res.Scenario), filepath.Join(dir, res.Scenario))
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to read")
	cmd.Flags().StringSliceVarP(&namespaces, "namespace", "n", nil, "namespaces to import (repeat or comma-separate)")
	cmd.Flags().StringVar(&dir, "out", ".", "directory to write into")
	cmd.Flags().StringVar(&name, "name", "imported", "the scenario's name")
	cmd.Flags().StringVar(&nodePool, "nodepool", "", "the NodePool the scenario runs under (default: the one running most of the pods)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "bound on reading the cluster")
	return cmd
}

// writeNew writes the files under dir, refusing (before writing any) to
// overwrite one that exists.
func writeNew(dir string, files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return usageError{fmt.Errorf("%s exists: import into an empty directory (--out), or move it away", filepath.Join(dir, p))}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return fmt.Errorf("failed to write %s: %w", full, err)
		}
	}
	return nil
}
