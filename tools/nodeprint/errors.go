package main

// The command's exit codes and the errors that decide them, in one place:
// every command returns an error, and exitCode alone maps it to a code.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/harness"
	runpkg "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// wrongError marks fault scenarios whose verdict was not the expected one
// and plain scenarios whose verdict was not none (exit 1).
type wrongError struct{ n, of int }

func (e wrongError) Error() string {
	return fmt.Sprintf("%d of %d scenario(s) failed: a regression, or an attribution other than the expected one", e.n, e.of)
}

// environmentError marks scenarios that could not complete because the
// environment failed under them (exit 3).
type environmentError struct{ n, of int }

func (e environmentError) Error() string {
	return fmt.Sprintf("%d of %d scenario(s) could not complete: the environment failed (see each scenario's error)", e.n, e.of)
}

// environmentFailure is a failure of the machine rather than of the input
// (a toolchain build that fails): exit 3.
type environmentFailure struct{ error }

func (e environmentFailure) Unwrap() error { return e.error }

// interruptedError replaces the scenarios' own errors (a cancelled
// request, a rate limiter's wait) when a signal stopped them: they did not
// fail, they were stopped (exit 130). Only a recorded signal makes one
// (interrupted), never a cancelled context in an error chain.
type interruptedError struct{ n, of int }

func (e interruptedError) Error() string {
	return fmt.Sprintf("%d of %d scenario(s) interrupted before they completed; what they created was deleted", e.n, e.of)
}

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailed      = 1 // a regression or a wrong attribution
	exitUsage       = 2 // bad input or usage
	exitEnvironment = 3 // the environment failed: a cluster that did not come up, a component that died
	exitInterrupted = 130
)

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
		shard   *harness.ShardError
		kcfg    *cluster.KubeconfigError
		unsup   *harness.UnsupportedError
		nofiles *toolchain.NotFoundError
		module  *toolchain.ModuleError
	)
	switch {
	case interrupted(ctx), errors.As(err, new(interruptedError)):
		return exitInterrupted
	case errors.As(err, &usage), errors.As(err, &name), strings.HasPrefix(err.Error(), "unknown command"),
		errors.Is(err, cluster.ErrAlreadyRunning), errors.As(err, &shard), errors.As(err, &kcfg), errors.As(err, &unsup),
		errors.As(err, &nofiles):
		return exitUsage
	case errors.As(err, &missing), errors.As(err, &phase), errors.As(err, &absent), errors.As(err, new(environmentError)),
		errors.As(err, new(*runpkg.EnvironmentError)), errors.As(err, new(environmentFailure)), errors.As(err, &module):
		return exitEnvironment
	default:
		// wrongError (a regression or a wrong attribution), staleError and anything unforeseen.
		return exitFailed
	}
}

// staleError marks committed runbooks that differ from what the rules and
// fingerprints generate (exit 1).
type staleError struct {
	dir   string
	diffs []string
}

func (e staleError) Error() string {
	shown := e.diffs
	more := ""
	if len(shown) > 8 {
		shown, more = shown[:8], fmt.Sprintf(" and %d more", len(e.diffs)-8)
	}
	return fmt.Sprintf("the runbooks in %s are out of date with the rules or fingerprints (%s%s): run `make sop` and commit the result",
		e.dir, strings.Join(shown, ", "), more)
}
