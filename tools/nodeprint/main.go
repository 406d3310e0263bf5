// Command nodeprint catches regressions in how Karpenter provisions nodes and
// says which layer broke. See the README and docs/ for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	runpkg "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailed      = 1 // a regression or a wrong attribution
	exitUsage       = 2 // bad input or usage
	exitEnvironment = 3 // the environment failed: a cluster that did not come up, a component that died
	exitInterrupted = 130
)

func main() {
	ctx, stop := notifyContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalled is the cause of the command's context when SIGINT or SIGTERM
// stopped it. It is the only thing that makes a command "interrupted"
// (exit 130): a cancelled context alone proves nothing, since the
// supervisor cancels a run's waits when a component dies, and that run is
// an environment failure (exit 3).
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "interrupted by " + s.sig.String() }

// notifyContext is signal.NotifyContext that records which signal arrived
// as the context's cause.
func notifyContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(signalled{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interrupted reports whether a signal stopped the command whose context
// ctx is (or derives from).
func interrupted(ctx context.Context) bool {
	var s signalled
	return errors.As(context.Cause(ctx), &s)
}

// usageError marks errors that are the caller's to fix (exit 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

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

// exitCode maps an error to the documented exit codes. An environment
// failure wins over a regression found beside it: CI should look at the
// environment first.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	var (
		usage   usageError
		name    *cluster.InvalidNameError
		missing *toolchain.MissingError
		phase   *cluster.PhaseError
		absent  *cluster.NotFoundError
		shard   *runpkg.ShardError
		kcfg    *cluster.KubeconfigError
		unsup   *runpkg.UnsupportedError
	)
	switch {
	case interrupted(ctx), errors.As(err, new(interruptedError)):
		return exitInterrupted
	case errors.As(err, &usage), errors.As(err, &name), strings.HasPrefix(err.Error(), "unknown command"),
		errors.Is(err, cluster.ErrAlreadyRunning), errors.As(err, &shard), errors.As(err, &kcfg), errors.As(err, &unsup):
		return exitUsage
	case errors.As(err, &missing), errors.As(err, &phase), errors.As(err, &absent), errors.As(err, new(environmentError)),
		errors.As(err, new(*runpkg.EnvironmentError)):
		return exitEnvironment
	default:
		// wrongError (a regression or a wrong attribution), staleError and anything unforeseen.
		return exitFailed
	}
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "nodeprint",
		Short:         "Catch regressions in Karpenter's node provisioning and attribute them to a layer",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newClusterCmd(stdout, stderr), newRecordCmd(stdout, stderr), newVerifyCmd(stdout, stderr),
		newRunCmd(stdout, stderr), newAttributeCmd(stdout, stderr), newFaultsCmd(stdout), newRulesCmd(stdout),
		newSOPCmd(stdout), newExplainCmd(stdout), newAcceptCmd(stdout))
	return root
}
