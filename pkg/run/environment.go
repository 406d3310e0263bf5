package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// EnvironmentError is a run the harness's environment failed under: a
// component of the cluster died, restarted or stopped answering. What the
// run observed cannot be trusted, so it is attributed to no layer: its
// verdict is inconclusive (environment) and the CLI exits 3.
type EnvironmentError struct {
	Run string
	// Incidents are what the supervisor saw, first one first.
	Incidents []supervise.Incident
	// Down names the components still down when the run gave up.
	Down []string
	// Err is what failed in the run because of it, if anything did.
	Err error
}

func (e *EnvironmentError) Error() string {
	msg := fmt.Sprintf("run %s: the environment failed: %s", e.Run, supervise.Incidents(e.Incidents))
	if len(e.Incidents) == 0 {
		msg = fmt.Sprintf("run %s: the environment failed: %s down", e.Run, strings.Join(e.Down, ", "))
	}
	if e.Err != nil {
		msg += " (then: " + e.Err.Error() + ")"
	}
	return msg
}

func (e *EnvironmentError) Unwrap() error { return e.Err }

// WithRecoveryGrace sets how long cleanup waits for a component that went
// down to come back before it leaves the run's objects in place (default
// 30 s: a restart by `nodeprint cluster restart` takes seconds). Without
// the API server nothing can be deleted, and without Karpenter or KWOK
// nothing deleted goes away. Zero suits a temporary cluster, which is
// removed with everything on it.
func WithRecoveryGrace(d time.Duration) Option { return func(r *Runner) { r.grace = d } }

// WithSupervisor makes every run check the cluster's components through w
// (default: none): a run starts only on a healthy cluster, stops waiting as
// soon as a component dies, restarts or stops answering, and then returns
// an *EnvironmentError instead of a verdict. The caller owns w and stops it.
func WithSupervisor(w *supervise.Watcher) Option { return func(r *Runner) { r.watch = w } }

// checkEnvironment probes now and refuses to start a run on a cluster with
// a component down.
func (r *Runner) checkEnvironment(ctx context.Context, id string) error {
	if r.watch == nil {
		return nil
	}
	all := r.watch.Check(ctx, time.Time{})
	down := r.watch.Down()
	if len(down) == 0 {
		return nil
	}
	var of []supervise.Incident
	for _, i := range all {
		for _, d := range down {
			if i.Component == d {
				of = append(of, i)
			}
		}
	}
	return &EnvironmentError{Run: id, Incidents: of, Down: down,
		Err: errors.New("the cluster was not healthy when the run was to start; nothing was applied")}
}

// abortOnIncident returns a context that is cancelled, with an
// *EnvironmentError as its cause, at the first incident since since.
func (r *Runner) abortOnIncident(ctx context.Context, id string, since time.Time) (context.Context, func()) {
	actx, cancel := context.WithCancelCause(ctx)
	if r.watch == nil {
		return actx, func() { cancel(nil) }
	}
	done := make(chan struct{})
	go func() {
		for {
			changed := r.watch.Changed()
			if inc := r.watch.Since(since); len(inc) > 0 {
				cancel(&EnvironmentError{Run: id, Incidents: inc})
				return
			}
			select {
			case <-changed:
			case <-actx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return actx, func() { close(done); cancel(nil) }
}

// environmentFailed wraps err as an *EnvironmentError when the supervisor
// saw an incident since since: an error the run hit while a component was
// down is the environment's, not the run's.
//
// ctx is the caller's, not cancelled: a "context canceled" in err then came
// from the incident stopping the run's waits (abortOnIncident), so the
// result keeps its text but not the cancellation, and nothing up the chain
// can read the incident as the command being interrupted (exit 130
// instead of 3).
func (r *Runner) environmentFailed(ctx context.Context, id string, since time.Time, err error) error {
	if err == nil || r.watch == nil {
		return err
	}
	var ee *EnvironmentError
	if !errors.As(err, &ee) {
		inc := r.watch.Check(ctx, since)
		if len(inc) == 0 {
			return err
		}
		ee = &EnvironmentError{Run: id, Incidents: inc, Down: r.watch.Down(), Err: err}
		err = ee
	}
	if !errors.Is(err, context.Canceled) {
		return err
	}
	cause := *ee
	if cause.Err != nil {
		cause.Err = errors.New(cause.Err.Error())
	}
	return &stoppedByIncident{msg: err.Error(), cause: &cause}
}

// stoppedByIncident is a run's error whose steps were cancelled by an
// incident: its text is the whole story, and it unwraps only to the
// incident.
type stoppedByIncident struct {
	msg   string
	cause *EnvironmentError
}

func (e *stoppedByIncident) Error() string { return e.msg }
func (e *stoppedByIncident) Unwrap() error { return e.cause }

// healthSince is the end-of-run health fact: empty when no incident
// happened since since and every component is up.
func (r *Runner) healthSince(ctx context.Context, since time.Time) string {
	if r.watch == nil {
		return ""
	}
	if inc := r.watch.Check(ctx, since); len(inc) > 0 {
		return supervise.Incidents(inc)
	}
	if down := r.watch.Down(); len(down) > 0 {
		return strings.Join(down, ", ") + " down"
	}
	return ""
}

// awaitRecovery waits up to recoveryGrace for every component to be up,
// for cleanup. It returns the components still down.
func (r *Runner) awaitRecovery(ctx context.Context, progress func(string)) []string {
	if r.watch == nil {
		return nil
	}
	r.watch.Check(ctx, time.Now())
	down := r.watch.Down()
	if len(down) == 0 {
		return nil
	}
	if r.grace <= 0 {
		return down
	}
	progress(fmt.Sprintf("%s down: waiting up to %s for it to come back before deleting anything", strings.Join(down, ", "), r.grace))
	deadline := time.NewTimer(r.grace)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return r.watch.Down()
		case <-deadline.C:
			return r.watch.Down()
		case <-tick.C:
		}
		r.watch.Check(ctx, time.Now())
		if down = r.watch.Down(); len(down) == 0 {
			progress("every component is up again")
			return nil
		}
	}
}
