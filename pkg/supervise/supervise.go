// Package supervise watches a cluster's components while scenarios run on
// it, so that a component that dies, restarts or stops answering is
// reported as a failure of the harness's environment, never read as a
// regression of the infrastructure, the policy or the application.
//
// A Watcher probes the cluster's status every interval and, where a
// component is a local process, waits on its pidfd so that a death is
// known at once. Components that a provider stops on purpose (a catalog
// switch restarts Karpenter) are not incidents: the provider says so
// through Planner.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/process"
)

// Source is what a Watcher probes: every cluster provider.
type Source interface {
	Status(ctx context.Context) (cluster.Status, error)
}

// Planner is implemented by providers that stop or restart components on
// purpose. Planned reports whether component's process pid (0: any) is
// being stopped or restarted by the provider itself.
type Planner interface {
	Planned(component string, pid int) bool
}

// LogKeeper is implemented by providers whose components' logs go with
// the cluster (a temporary cluster is removed right after the failure it
// reports). KeepLog copies log where it stays and returns the copy's path,
// or log itself when it cannot; the watcher calls it once for each exit it
// records, and the incident names what it returned.
type LogKeeper interface {
	KeepLog(log string) string
}

// Incident is one thing that went wrong with the environment.
type Incident struct {
	At        time.Time `json:"at"`
	Component string    `json:"component"`
	// What happened, in words: "exited (pid 123)", "restarted (pid 123 → 456)",
	// "unhealthy for 3 probes: …".
	What string `json:"what"`
}

func (i Incident) String() string { return i.Component + " " + i.What }

// Incidents lists incidents in one line, first one first.
func Incidents(in []Incident) string {
	parts := make([]string, len(in))
	for i, x := range in {
		parts[i] = x.String()
	}
	return strings.Join(parts, "; ")
}

type options struct {
	interval, timeout, unhealthy time.Duration
	progress                     func(string)
}

// Option configures a Watcher.
type Option func(*options)

// WithInterval sets how often the cluster is probed (default 2 s).
func WithInterval(d time.Duration) Option { return func(o *options) { o.interval = d } }

// WithProbeTimeout bounds one probe (default 10 s): a probe that does not
// answer in time counts as failed.
func WithProbeTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithUnhealthyAfter sets how long a component that still runs must fail
// every probe before it is an incident (default 10 s: a loaded API server
// answers /readyz late now and then). An exit or a restart is an incident
// at once.
func WithUnhealthyAfter(d time.Duration) Option { return func(o *options) { o.unhealthy = d } }

// WithProgress receives a line for each incident and recovery (default: none).
func WithProgress(f func(string)) Option { return func(o *options) { o.progress = f } }

// component is what the watcher knows of one component.
type component struct {
	pid int
	// failing is when the component's probe began to fail (zero: it passes).
	failing time.Time
	// down: exited, or failing for the threshold, and not yet back.
	down bool
	// waiting is the pid a pidfd waiter watches.
	waiting int
	// restarts is the container restart count last seen.
	restarts int32
}

// Watcher supervises a cluster until Stop.
type Watcher struct {
	src     Source
	planner Planner
	keeper  LogKeeper
	opts    options
	now     func() time.Time

	// probeMu serialises probes (the loop, Check, the pidfd waiters).
	probeMu sync.Mutex

	mu        sync.Mutex
	comps     map[string]*component
	incidents []Incident
	changed   chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	waiter sync.WaitGroup
}

// Start probes the cluster once, to learn its components, and goes on
// probing in the background until Stop or ctx is done. It fails when the
// first probe cannot read the cluster's status at all.
func Start(ctx context.Context, src Source, opts ...Option) (*Watcher, error) {
	o := options{interval: 2 * time.Second, timeout: 10 * time.Second, unhealthy: 10 * time.Second, progress: func(string) {}}
	for _, f := range opts {
		f(&o)
	}
	w := &Watcher{src: src, opts: o, now: time.Now, comps: map[string]*component{}, changed: make(chan struct{}),
		done: make(chan struct{}), wake: make(chan struct{}, 1)}
	w.planner, _ = src.(Planner)
	w.keeper, _ = src.(LogKeeper)
	w.ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := w.probe(ctx); err != nil {
		w.cancel()
		return nil, fmt.Errorf("failed to start supervising the cluster: %w", err)
	}
	stop := context.AfterFunc(ctx, w.cancel)
	go func() {
		defer close(w.done)
		defer stop()
		w.loop()
	}()
	return w, nil
}

// Stop ends the supervision and waits for its goroutines.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
	// A Check in progress may still start a waiter; it sees the
	// cancelled context and returns at once.
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	w.waiter.Wait()
}

func (w *Watcher) loop() {
	t := time.NewTicker(w.opts.interval)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
		_ = w.probe(w.ctx)
	}
}

// Check probes the cluster now and returns the incidents since t,
// including what this probe found.
func (w *Watcher) Check(ctx context.Context, since time.Time) []Incident {
	_ = w.probe(ctx) // an unreadable status is the "cluster" component's failure
	return w.Since(since)
}

// Since returns the incidents at or after t.
func (w *Watcher) Since(t time.Time) []Incident {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Incident
	for _, i := range w.incidents {
		if !i.At.Before(t) {
			out = append(out, i)
		}
	}
	return out
}

// Changed is closed at the next incident.
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Down names the components that are down now: exited, or failing their
// probe for the threshold, and not back since.
func (w *Watcher) Down() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, c := range w.comps {
		if c.down {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (w *Watcher) record(i Incident) {
	w.mu.Lock()
	w.incidents = append(w.incidents, i)
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	w.opts.progress("environment: " + i.String())
}

func (w *Watcher) planned(name string, pid int) bool {
	return w.planner != nil && w.planner.Planned(name, pid)
}

// probe reads the status once and records what changed.
func (w *Watcher) probe(ctx context.Context) error {
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, w.opts.timeout)
	defer cancel()
	st, err := w.src.Status(pctx)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	now := w.now()
	// The status itself is a component: a cluster whose state cannot be
	// read (its directory removed under the run) is down too.
	readable := cluster.ComponentStatus{Name: "cluster", Healthy: err == nil, Detail: "status readable"}
	if err != nil {
		readable.Detail = "status unreadable: " + err.Error()
	}
	w.observe(now, readable, false)
	if err != nil {
		return err
	}
	if errors.Is(pctx.Err(), context.DeadlineExceeded) {
		// Components that answered late were marked unhealthy by Status.
		w.opts.progress(fmt.Sprintf("environment: a status probe took longer than %s", w.opts.timeout))
	}
	for _, cs := range st.Components {
		w.observe(now, cs, st.Blocked(cs))
	}
	return nil
}

// observe applies one component's status; blocked: its probe failed only
// because the component it is asked through is unhealthy. Called with
// probeMu held.
func (w *Watcher) observe(now time.Time, cs cluster.ComponentStatus, blocked bool) {
	w.mu.Lock()
	incidents, recovered, wait, exitLog := w.update(now, cs, blocked)
	w.mu.Unlock()
	if exitLog != "" && w.keeper != nil {
		// Copied outside mu: the copy reads every component's log.
		kept := w.keeper.KeepLog(exitLog)
		for i := range incidents {
			incidents[i].What = strings.Replace(incidents[i].What, exitLog, kept, 1)
		}
	}
	if recovered {
		w.opts.progress(fmt.Sprintf("environment: %s is healthy again", cs.Name))
	}
	if wait > 0 {
		w.waitFor(wait)
	}
	for _, i := range incidents {
		w.record(i)
	}
}

// update is observe's bookkeeping, with mu held: the incidents the status
// shows, whether a down component is healthy again, a pid to start
// waiting on (0: none), and the log an exit incident names ("": none).
func (w *Watcher) update(now time.Time, cs cluster.ComponentStatus, blocked bool) (incidents []Incident, recovered bool, wait int, exitLog string) {
	c := w.comps[cs.Name]
	first := c == nil
	if first {
		c = &component{}
		w.comps[cs.Name] = c
	}
	add := func(what string) { incidents = append(incidents, Incident{At: now, Component: cs.Name, What: what}) }
	wasDown := c.down
	switch {
	case first:
		// Learn the component; one that is down already is reported.
		if !cs.Healthy && !blocked {
			c.down = true
			add("unhealthy when supervision started: " + cs.Detail)
		}
	case c.pid > 0 && cs.PID > 0 && cs.PID != c.pid:
		if !w.planned(cs.Name, c.pid) {
			add(fmt.Sprintf("restarted (pid %d → %d)", c.pid, cs.PID))
		}
	case cs.Restarts > c.restarts:
		add(fmt.Sprintf("restarted (its container restarted %d more time(s))", cs.Restarts-c.restarts))
	case c.pid > 0 && (cs.Exited || cs.PID == 0) && !c.down:
		if !w.planned(cs.Name, c.pid) {
			c.down = true
			what := fmt.Sprintf("exited (pid %d)", c.pid)
			if cs.Log != "" {
				what, exitLog = fmt.Sprintf("exited (pid %d; its log: %s)", c.pid, cs.Log), cs.Log
			}
			add(what)
		}
	}
	if cs.PID > 0 && !cs.Exited {
		c.pid = cs.PID
	}
	c.restarts = cs.Restarts
	switch {
	case cs.Healthy:
		c.failing, c.down = time.Time{}, false
	case cs.Exited:
	case w.planned(cs.Name, 0), blocked:
		// The provider is restarting it, or the component it is asked
		// through is down (an incident of its own): its own failure counts
		// from when it can be asked again.
		c.failing = time.Time{}
	default:
		if c.failing.IsZero() {
			c.failing = now
		}
		if d := now.Sub(c.failing); d >= w.opts.unhealthy && !c.down {
			c.down = true
			add(fmt.Sprintf("unhealthy for %s: %s", d.Round(time.Second), cs.Detail))
		}
	}
	recovered = wasDown && !c.down && !first
	if c.pid > 0 && c.waiting != c.pid && !c.down {
		c.waiting, wait = c.pid, c.pid
	}
	return incidents, recovered, wait, exitLog
}

// waitFor wakes the loop as soon as pid exits, so the next probe records
// the exit at once. Without pidfd the interval's probe finds it.
func (w *Watcher) waitFor(pid int) {
	if w.ctx.Err() != nil {
		return
	}
	w.waiter.Add(1)
	go func() {
		defer w.waiter.Done()
		if err := process.WaitExit(w.ctx, pid); err != nil {
			return
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}()
}
