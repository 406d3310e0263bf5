package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func newToolchainCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "toolchain",
		Short: "Build and inspect the binaries nodeprint runs (kube-apiserver, etcd, KWOK, metrics-server, Karpenter)",
		Long: `The toolchain is built from pinned Go module sources, nothing else is downloaded.
In a checkout it lives in the checkout's bin/ (make tools builds the same).
An installed nodeprint builds it into a per-user cache shared by every team repository on
the machine: --cache-dir, else $NODEPRINT_CACHE_DIR, else $XDG_CACHE_HOME/nodeprint, else
~/.cache/nodeprint. docs/install.md says more.`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.AddCommand(newToolchainBuildCmd(stdout, stderr), newToolchainStatusCmd(stdout), newToolchainPathCmd(stdout))
	return cmd
}

func newToolchainBuildCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "build",
		Short: "Build what is missing or stale (about 11 minutes on a cold machine; seconds when built)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tc, err := toolchain.Find()
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "building the toolchain of %s into %s\n", describeSource(tc), tc.Bin)
			if err := tc.Build(cmd.Context(), stderr); err != nil {
				return environmentFailure{err}
			}
			if err := tc.Check(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "toolchain ready in %s\n", tc.Bin)
			return nil
		},
	}
}

func newToolchainStatusCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Say where the toolchain is, what each component was built as, and what is missing (exit 3 when incomplete)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			tc, err := toolchain.Find()
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "source:    %s (%s)\nbinaries:  %s\nstate:     %s\n\n", describeSource(tc), tc.Root, tc.Bin, tc.Work)
			w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "COMPONENT\tPINNED\tBUILT")
			for _, c := range tc.Status() {
				built := c.Built
				switch {
				case built == "" && c.Optional:
					built = "not built (the kind provider builds it when it needs it)"
				case built == "":
					built = "not built"
				case !c.Current():
					built += " (stale: the next build replaces it)"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", c.Name, c.Want, built)
			}
			w.Flush()
			return tc.Check()
		},
	}
}

func newToolchainPathCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "path",
		Short: "Print the toolchain's directory (what a CI cache keeps)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			tc, err := toolchain.Find()
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, tc.Bin)
			return nil
		},
	}
}

func describeSource(tc *toolchain.Toolchain) string {
	if tc.Source == toolchain.Installed {
		return "nodeprint " + tc.Version + " (installed)"
	}
	return "the checkout"
}

// setCacheDir makes --cache-dir the cache of every toolchain.Find of
// this process and of the processes it starts.
func setCacheDir(dir string) error {
	if dir == "" {
		return nil
	}
	return os.Setenv(toolchain.CacheDirEnv, dir)
}

// project is the repository whose scenarios, fingerprints and runbooks
// the commands default to: a team repository (nodeprint.yaml) at or above
// the working directory, else the checkout nodeprint runs from.
func project(tc *toolchain.Toolchain) repo.Layout { return repo.Default(tc) }
