package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// Runner runs scenarios on one cluster.
type Runner struct {
	config *rest.Config
	client client.Client
	// cluster is the cluster's provider; the runner asks it for the
	// capabilities it needs (cluster.KarpenterSwitcher, …), nil for none.
	cluster  cluster.Provider
	progress func(string)
	cleanup  time.Duration
	// sweepQuiet is quietAfterIncident; tests shorten it.
	sweepQuiet time.Duration
	watch      *supervise.Watcher
	grace      time.Duration
	// karpenter is recorded in every run's inputs.
	karpenter inputs.Karpenter
	// build, when it names a binary, is the Karpenter build every run
	// starts afresh first (WithKarpenterBuild).
	build cluster.Build
	// clock is the clock the observer reads latencies from.
	clock observe.Clock
	// tenancy knows which runs held Karpenter when: a run's
	// Karpenter-wide signals need it to itself. tenancyDir is where the
	// runs of every process are recorded (WithTenancyDir).
	tenancy    Tenancy
	tenancyDir string
	// syncTimeout, factsTimeout and requestTimeout are
	// ObserverSyncTimeout, FactsTimeout and RequestTimeout; tests shorten
	// them.
	syncTimeout, factsTimeout, requestTimeout time.Duration
}

// ObserverSyncTimeout bounds the start of a run's observer: its informers
// list and watch the run's namespace, NodePool, nodes and events, which
// an answering API server does in well under a second.
const ObserverSyncTimeout = time.Minute

// FactsTimeout bounds the reads at the end of a run (the NodePool and its
// node class, each workload's replicas, pod metrics, Karpenter's
// metrics): a few requests, each answered in milliseconds.
const FactsTimeout = time.Minute

// Option configures a Runner.
type Option func(*Runner)

// WithProgress receives progress lines (default: none).
func WithProgress(f func(string)) Option { return func(r *Runner) { r.progress = f } }

// WithKarpenter records which Karpenter runs the scenarios in every run's
// inputs (default: unknown, and a change of Karpenter cannot be told).
func WithKarpenter(k inputs.Karpenter) Option { return func(r *Runner) { r.karpenter = k } }

// WithKarpenterBuild makes every run start Karpenter afresh from build's
// binary first, through the provider's cluster.KarpenterBuildSwitcher
// (default: whatever binary runs, as it runs): paired verification's two
// arms are two runners of one cluster with two builds, and every run of
// either starts from a Karpenter just started. k is that build as runs'
// inputs record it (WithKarpenter).
func WithKarpenterBuild(build cluster.Build, k inputs.Karpenter) Option {
	return func(r *Runner) { r.build, r.karpenter = build, k }
}

// Karpenter is the Karpenter this runner's runs record in their inputs.
func (r *Runner) Karpenter() inputs.Karpenter { return r.karpenter }

// WithClock sets the clock a run's latencies are read from (default
// observe.ServerClock); the harness sets observe.ReceivedClock for a
// cluster beside it, whose Karpenter it runs.
func WithClock(c observe.Clock) Option { return func(r *Runner) { r.clock = c } }

// WithCleanupTimeout bounds how long cleanup waits for Karpenter to remove
// the run's nodes (default 3 minutes).
func WithCleanupTimeout(d time.Duration) Option { return func(r *Runner) { r.cleanup = d } }

// NewRunner returns a runner for the cluster behind kubeconfig; c is that
// cluster's provider: the runner asks it to run Karpenter with a
// scenario's catalog and settings (cluster.KarpenterSwitcher) and for
// Karpenter's metrics and process, where it has them (nil: none).
func NewRunner(kubeconfig string, c cluster.Provider, opts ...Option) (*Runner, error) {
	cfg, err := kube.Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	r := &Runner{config: cfg, cluster: c, progress: func(string) {}, cleanup: 3 * time.Minute, grace: 30 * time.Second, sweepQuiet: quietAfterIncident,
		syncTimeout: ObserverSyncTimeout, factsTimeout: FactsTimeout, requestTimeout: RequestTimeout}
	for _, o := range opts {
		o(r)
	}
	if r.tenancyDir != "" {
		r.tenancy.dir = clusterDir(r.tenancyDir, cfg.Host)
	}
	// Every request of the client is bounded: the REST mapper's discovery
	// takes no context, so without a timeout an API server that accepts
	// and never answers hangs the first Get of a kind forever. The
	// observer's informers watch through cfg itself, unbounded.
	ccfg := rest.CopyConfig(cfg)
	ccfg.Timeout = r.requestTimeout
	if r.client, err = client.New(ccfg, client.Options{Scheme: kube.Scheme}); err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	return r, nil
}

// ObservationEnv names the observation (gzipped JSON) BenchmarkPipeline
// reads instead of the committed testdata/observation-5000.json.gz;
// make bench passes the one it just recorded.
const ObservationEnv = "NODEPRINT_OBSERVATION"

// RequestTimeout bounds each request of a runner's client (not the
// observer's watches): a list of a 5,000-pod run takes a second or two.
const RequestTimeout = 30 * time.Second

// Result is one finished run.
type Result struct {
	ID          string
	Observation *observe.Observation
	Fingerprint *fingerprint.Fingerprint
	Catalog     *catalog.Catalog
	// Facts were read from the cluster before cleanup, for the classifier.
	Facts attribute.Facts
	// Inputs are what the run applied, and the Karpenter it ran with.
	Inputs *inputs.Inputs
	// Fault is the injector of a faulted run; Injected is when it was
	// injected (zero without a fault).
	Fault    faults.Injector
	Injected time.Time
	// Applied is the local time the run's objects were applied and
	// AllReadySeen the local time the observer first saw every pod Ready
	// (zero if it never did): the run's floor at the local clock's
	// resolution, for the benchmark.
	Applied, AllReadySeen time.Time
	// KarpenterMetrics is the URL of Karpenter's Prometheus metrics on the
	// run's cluster ("" where nodeprint does not know it): what a runbook's
	// <karpenter-metrics> stands for.
	KarpenterMetrics string
}

// NewID names a run after its scenario, with a random suffix.
func NewID(s *scenario.Scenario) string { return s.Metadata.Name + "-" + rand.String(5) }

// Run executes the scenario once (with its fault, if it has one) and
// removes what it created, also when it fails or ctx is cancelled. The
// options act at moments of the run (OnInject, WhileFaulted, WhileClean).
func (r *Runner) Run(ctx context.Context, s *scenario.Scenario, opts ...FaultOption) (res *Result, err error) {
	return r.run(ctx, s, hooksOf(opts), nil)
}

// hooks let the caller act at moments of a run: before a fault is
// injected, once a faulted run or a run without a fault has settled; nil
// is none.
type hooks struct {
	onInject     func(faults.Injector)
	whileFaulted func(context.Context, *Result)
	whileClean   func(context.Context, *Result)
}

func hooksOf(opts []FaultOption) hooks {
	o := &faultOpts{}
	for _, f := range opts {
		f(o)
	}
	return hooks{onInject: o.onInject, whileFaulted: o.whileFaulted, whileClean: o.whileClean}
}

// attempt is one run's state as it goes through its steps; undo holds
// what each step did that must be undone, last first.
type attempt struct {
	s *scenario.Scenario
	h hooks
	// replay, when set, is what the run applies in place of s's objects
	// and Karpenter settings (Replay).
	replay *inputs.Inputs
	id     string
	objs   *Objects
	cat    *catalog.Catalog
	shapes *fit.Catalog
	ob     *observe.Observer
	// actx is cancelled, with an *EnvironmentError as its cause, at the
	// first incident of the environment: the run stops waiting then.
	actx       context.Context
	since      time.Time
	inj        faults.Injector
	injected   time.Time
	minObserve time.Duration
	in         *inputs.Inputs
	meter      *meter
	// used is Karpenter's usage over the run, once measured.
	used *usage.Usage
	// apiAt is when the meter's first sample was read: the start of the
	// window over which the run's Karpenter-wide signals are read.
	apiAt   time.Time
	applied time.Time
	outcome observe.Outcome
	undo    []func(context.Context) error
}

// run goes through the steps of a run: prepare (catalog, objects, a
// healthy cluster, the observer), inject the fault, apply the objects,
// settle, measure, and the scale-in where the scenario has one. Each step registers how to undo what it did; they are
// undone last first whether the run succeeds, fails or is cancelled:
// the fault is restored, then the run's objects are removed, then the
// observer stops (cleanup waits on its informers).
func (r *Runner) run(ctx context.Context, s *scenario.Scenario, h hooks, replay *inputs.Inputs) (res *Result, err error) {
	a := &attempt{s: s, h: h, replay: replay, id: NewID(s)}
	// Held until cleanup is done (this defer runs after the rollback's).
	release, err := r.tenancy.Hold(a.id)
	if err != nil {
		r.progress(fmt.Sprintf("run %s: %v: runs of other processes will not know of it", a.id, err))
	}
	defer release()
	if err := r.prepare(ctx, a); err != nil {
		return nil, err
	}
	// Anything that fails from here while a component is down is the
	// environment's failure, cleanup's included (this defer runs last).
	defer func() {
		err = errors.Join(err, a.rollback(context.WithoutCancel(ctx)))
		if ctx.Err() == nil {
			err = r.environmentFailed(context.WithoutCancel(ctx), a.id, a.since, err)
		}
	}()
	for _, step := range []func(context.Context, *attempt) error{r.observe, r.inject, r.apply, r.settle} {
		if err := step(ctx, a); err != nil {
			return nil, err
		}
	}
	if res, err = r.measure(ctx, a); err != nil {
		return nil, err
	}
	if err := r.scaleIn(ctx, a, res); err != nil {
		return nil, err
	}
	// At the run's end (after its scale-in, where it has one), while the
	// fault is in place and the run's objects exist.
	if a.h.whileFaulted != nil && a.inj != nil {
		a.h.whileFaulted(ctx, res)
	}
	if a.h.whileClean != nil && a.inj == nil {
		a.h.whileClean(ctx, res)
	}
	return res, nil
}

// rollback undoes the steps, last first, and joins their errors.
func (a *attempt) rollback(ctx context.Context) error {
	var errs []error
	for i := len(a.undo) - 1; i >= 0; i-- {
		errs = append(errs, a.undo[i](ctx))
	}
	a.undo = nil
	return errors.Join(errs...)
}

// prepare loads the catalog and switches Karpenter to it, builds the
// run's objects and checks that the cluster is healthy; nothing is
// applied yet.
func (r *Runner) prepare(ctx context.Context, a *attempt) (err error) {
	s := a.s
	if a.cat, err = catalog.Load(s.CatalogPath); err != nil {
		return err
	}
	if a.shapes, err = fit.Load(ctx, s.CatalogPath); err != nil {
		return err
	}
	if err := r.useBuild(ctx); err != nil {
		return err
	}
	if err := r.useSettings(ctx, a); err != nil {
		return err
	}
	if a.replay != nil {
		if a.cat.Digest != a.replay.Catalog.Digest {
			return fmt.Errorf("%w: they were recorded with catalog sha256 %s, %s is sha256 %s", ErrReplay, short(a.replay.Catalog.Digest), s.CatalogPath, short(a.cat.Digest))
		}
		a.objs, err = BuildFrom(a.replay, s, a.id)
	} else {
		a.objs, err = Build(s, a.id)
	}
	if err != nil {
		return err
	}
	if err := r.checkEnvironment(ctx, a.id); err != nil {
		return err
	}
	a.since = time.Now()
	return nil
}

// settings are the Karpenter settings the run applies: the recorded ones
// of a replay, else the scenario's.
func (a *attempt) settings() map[string]string {
	if a.replay == nil {
		return a.s.Spec.Karpenter.Env()
	}
	if a.replay.Karpenter.Settings == nil {
		return map[string]string{}
	}
	return a.replay.Karpenter.Settings
}

// useSettings runs Karpenter with the scenario's catalog and the run's
// settings, where the provider can switch them.
func (r *Runner) useSettings(ctx context.Context, a *attempt) error {
	sw, ok := r.cluster.(cluster.KarpenterSwitcher)
	if !ok {
		return nil
	}
	whose := "the scenario's"
	if a.replay != nil {
		whose = "the recorded"
	}
	if err := sw.UseKarpenter(ctx, a.s.CatalogPath, a.settings()); err != nil {
		return fmt.Errorf("failed to run Karpenter with catalog %s and %s settings: %w", a.s.Spec.Catalog, whose, err)
	}
	return nil
}

// useBuild starts Karpenter afresh from the runner's build, if it has
// one.
func (r *Runner) useBuild(ctx context.Context) error {
	if r.build.Binary == "" {
		return nil
	}
	bs, ok := r.cluster.(cluster.KarpenterBuildSwitcher)
	if !ok {
		return fmt.Errorf("this cluster's provider cannot switch Karpenter builds between runs (it does not run Karpenter from nodeprint's toolchain), so it cannot run %s", r.build.Binary)
	}
	if err := bs.StartKarpenterBuild(ctx, r.build); err != nil {
		return fmt.Errorf("failed to run Karpenter from %s: %w", r.build.Binary, err)
	}
	return nil
}

// observe starts the observer on the run's objects and the watch for
// incidents, and registers the run's cleanup: from here on, whatever the
// run created is deleted.
func (r *Runner) observe(ctx context.Context, a *attempt) error {
	workloads := map[string]int32{}
	for _, d := range a.objs.Deployments {
		workloads[d.Name] = ptr.Deref(d.Spec.Replicas, 1)
	}
	// The watch for incidents first: an API server that stops answering
	// while the informers sync stops the run, as at any later step.
	actx, stopAbort := r.abortOnIncident(ctx, a.id, a.since)
	a.actx = actx
	a.undo = append(a.undo, func(context.Context) error { stopAbort(); return nil })
	sctx, cancel := context.WithTimeout(actx, r.syncTimeout)
	defer cancel()
	ob, err := observe.Start(sctx, r.config, observe.Target{Run: a.id, Namespace: a.id, NodePool: a.id, OtherNodePools: a.objs.OtherNodePoolNames(), Workloads: workloads, Clock: r.clock})
	if err != nil {
		if sctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("run %s: the observer's informers did not sync within %s (the API server did not answer their lists and watches): %w", a.id, r.syncTimeout, err)
		}
		return err
	}
	a.ob = ob
	a.undo = append(a.undo, func(context.Context) error { ob.Stop(); return nil }, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, r.cleanup)
		defer cancel()
		return r.cleanupRun(cctx, a.objs, ob, a.since)
	})
	return nil
}

// inject binds the scenario's fault to the run and injects it, before
// anything of the run is applied; its Restore runs before cleanup, so
// that cleanup runs on a healthy cluster. Without a fault it does nothing.
func (r *Runner) inject(_ context.Context, a *attempt) (err error) {
	f := a.s.Spec.Fault
	if f == nil {
		return nil
	}
	if a.inj, err = r.newInjector(a.s, a.objs, a.shapes); err != nil {
		return err
	}
	if a.h.onInject != nil {
		a.h.onInject(a.inj)
	}
	inj := a.inj
	a.undo = append(a.undo, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := inj.Restore(rctx); err != nil {
			return fmt.Errorf("failed to restore fault %s: %w", f.Name, err)
		}
		return nil
	})
	r.progress(fmt.Sprintf("run %s: injecting fault %s (%s)", a.id, f.Name, inj.Definition().Layer))
	a.injected = time.Now()
	if err := inj.Inject(a.actx); err != nil {
		return fmt.Errorf("failed to inject fault %s: %w", f.Name, err)
	}
	a.minObserve = inj.MinObserve()
	return nil
}

// apply creates the run's objects (cleanup, registered by observe,
// deletes them).
func (r *Runner) apply(ctx context.Context, a *attempt) (err error) {
	// What is applied, after the injection: a policy fault edits the
	// run's NodePool before it is created.
	cat := inputs.Catalog{Name: a.s.Spec.Catalog, Digest: a.cat.Digest}
	if a.in, err = recordInputs(a.objs, a.id, r.karpenter, cat, a.settings()); err != nil {
		return err
	}
	// Read after the injection: a fault may have restarted Karpenter.
	a.meter, a.apiAt = r.startMeter(ctx), time.Now()
	r.progress(fmt.Sprintf("run %s: applying namespace, node class, NodePool and %d workload(s)", a.id, len(a.objs.Deployments)))
	a.applied = time.Now()
	for _, o := range a.objs.All() {
		if err := r.client.Create(a.actx, o); err != nil {
			return fmt.Errorf("failed to create %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	if len(a.objs.Deployments) > 0 {
		a.ob.MarkStart(a.objs.Deployments[0].CreationTimestamp.Time)
	}
	return nil
}

// settle waits until the run settles, stalls or times out (a faulted run
// is watched for its window, and at least as long as its fault needs), or
// the environment fails.
func (r *Runner) settle(ctx context.Context, a *attempt) error {
	timeout := a.s.Spec.Settle.Timeout.Duration
	if a.s.Spec.Fault != nil {
		timeout = max(a.s.Spec.Fault.Window.Duration, a.minObserve)
	}
	a.outcome = a.ob.WaitSettled(a.actx, observe.Settle{
		Quiet: a.s.Spec.Settle.Quiet.Duration, Stall: a.s.Spec.Settle.Stall.Duration, Timeout: timeout, Min: a.minObserve, MinFromReady: podClocked(a.inj),
		Progress: func(msg string) { r.progress("run " + a.id + ": " + msg) },
	})
	return r.waitEnded(ctx, a, "")
}

// waitEnded is why a wait of the run ended early: an interrupt, an
// incident of the environment, or nil when neither happened. during says
// which wait ("" for the scale-out's).
func (r *Runner) waitEnded(ctx context.Context, a *attempt, during string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("run %s interrupted%s: %w", a.id, during, ctx.Err())
	}
	var envErr *EnvironmentError
	if errors.As(context.Cause(a.actx), &envErr) {
		r.progress(fmt.Sprintf("run %s: stopped: %s", a.id, supervise.Incidents(envErr.Incidents)))
		return envErr
	}
	return nil
}

// podClocked reports whether the run's fault counts its observation from
// the pods' start (faults.PodClocked).
func podClocked(inj faults.Injector) bool {
	_, ok := inj.(faults.PodClocked)
	return ok
}

// measure fingerprints the settled run and reads its facts, while the
// fault is still in place and the run's objects exist.
func (r *Runner) measure(ctx context.Context, a *attempt) (*Result, error) {
	snap := a.ob.Snapshot()
	fp, err := fingerprint.Compute(snap, a.cat)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", a.id, err)
	}
	r.progress(fmt.Sprintf("run %s: %s: %d node(s) %s, $%.4f/h", a.id, a.outcome, fp.Selection.Nodes, fp.Selection.Key(), fp.Selection.HourlyCost))
	a.used = a.meter.stop(ctx)
	fp.Karpenter = a.used
	facts, err := r.facts(ctx, a)
	if err != nil {
		return nil, err
	}
	if len(facts.SharedKarpenter) > 0 && a.used != nil {
		// Karpenter's counters are process-wide: another run's work is in them.
		a.used.SharedWith = len(facts.SharedKarpenter)
	}
	if facts.Health != "" {
		// An incident after the settle: the observation may hold it.
		return nil, &EnvironmentError{Run: a.id, Incidents: r.watch.Since(a.since), Down: r.watch.Down()}
	}
	res := &Result{ID: a.id, Observation: snap, Fingerprint: fp, Catalog: a.cat, Facts: facts, Inputs: a.in, Fault: a.inj, Injected: a.injected,
		Applied: a.applied, AllReadySeen: a.ob.FirstAllReady(), KarpenterMetrics: r.karpenterMetrics()}
	return res, nil
}
