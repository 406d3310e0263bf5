// Command nodeprint catches regressions in how Karpenter provisions nodes and
// says which layer broke. See the README and docs/ for the commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func main() {
	ctx, stop := notifyContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "error:", err)
	code := exitCode(ctx, err)
	if code == exitInterrupted {
		fmt.Fprintln(stderr, "interrupted: everything this command started was stopped")
	}
	return code
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "nodeprint",
		Short:         "Catch regressions in Karpenter's node provisioning and attribute them to a layer",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var cacheDir string
	root.PersistentFlags().StringVar(&cacheDir, "cache-dir", "", "the per-user cache of an installed nodeprint: toolchain and cluster state (default $"+toolchain.CacheDirEnv+", else $XDG_CACHE_HOME/nodeprint, else ~/.cache/nodeprint)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return setCacheDir(cacheDir) }
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newClusterCmd(stdout, stderr), newRecordCmd(stdout, stderr), newVerifyCmd(stdout, stderr),
		newRunCmd(stdout, stderr), newAttributeCmd(stdout, stderr), newFaultsCmd(stdout), newRulesCmd(stdout),
		newSOPCmd(stdout), newExplainCmd(stdout), newAcceptCmd(stdout), newCatalogCmd(stdout, stderr), newImportCmd(stdout, stderr),
		newToolchainCmd(stdout, stderr), newInitCmd(stdout), newForecastCmd(stdout))
	return root
}
