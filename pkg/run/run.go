package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// CatalogSwitcher makes Karpenter run with a catalog (the local provider does).
type CatalogSwitcher interface {
	UseCatalog(ctx context.Context, path string) error
}

// Runner runs scenarios on one cluster.
type Runner struct {
	config   *rest.Config
	client   client.Client
	catalogs CatalogSwitcher
	progress func(string)
	cleanup  time.Duration
	// sweepQuiet is quietAfterIncident; tests shorten it.
	sweepQuiet time.Duration
	watch      *supervise.Watcher
	grace      time.Duration
	// karpenter is recorded in every run's inputs.
	karpenter inputs.Karpenter
}

// Option configures a Runner.
type Option func(*Runner)

// WithProgress receives progress lines (default: none).
func WithProgress(f func(string)) Option { return func(r *Runner) { r.progress = f } }

// WithKarpenter records which Karpenter runs the scenarios in every run's
// inputs (default: unknown, and a change of Karpenter cannot be told).
func WithKarpenter(k inputs.Karpenter) Option { return func(r *Runner) { r.karpenter = k } }

// WithCleanupTimeout bounds how long cleanup waits for Karpenter to remove
// the run's nodes (default 3 minutes).
func WithCleanupTimeout(d time.Duration) Option { return func(r *Runner) { r.cleanup = d } }

// NewRunner returns a runner for the cluster behind kubeconfig; cluster
// is that cluster's provider, which switches Karpenter's catalog for a
// scenario that names another (FixedCatalog for a cluster nodeprint does
// not own).
func NewRunner(kubeconfig string, cluster CatalogSwitcher, opts ...Option) (*Runner, error) {
	cfg, err := kube.Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	r := &Runner{config: cfg, client: c, catalogs: cluster, progress: func(string) {}, cleanup: 3 * time.Minute, grace: 30 * time.Second, sweepQuiet: quietAfterIncident}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

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
}

// NewID names a run after its scenario, with a random suffix.
func NewID(s *scenario.Scenario) string { return s.Metadata.Name + "-" + rand.String(5) }

// Run executes the scenario once (with its fault, if it has one) and
// removes what it created, also when it fails or ctx is cancelled. The
// options act on the fault as in RunFault (OnInject, WhileFaulted).
func (r *Runner) Run(ctx context.Context, s *scenario.Scenario, opts ...FaultOption) (res *Result, err error) {
	return r.run(ctx, s, hooksOf(opts))
}

// hooks let the caller act at two moments of a faulted run; nil is none.
type hooks struct {
	onInject     func(faults.Injector)
	whileFaulted func(context.Context, *Result)
}

func hooksOf(opts []FaultOption) hooks {
	o := &faultOpts{}
	for _, f := range opts {
		f(o)
	}
	return hooks{onInject: o.onInject, whileFaulted: o.whileFaulted}
}

func (r *Runner) run(ctx context.Context, s *scenario.Scenario, h hooks) (res *Result, err error) {
	cat, err := catalog.Load(s.CatalogPath)
	if err != nil {
		return nil, err
	}
	shapes, err := fit.Load(ctx, s.CatalogPath)
	if err != nil {
		return nil, err
	}
	if r.catalogs != nil {
		if err := r.catalogs.UseCatalog(ctx, s.CatalogPath); err != nil {
			return nil, fmt.Errorf("failed to switch Karpenter to catalog %s: %w", s.Spec.Catalog, err)
		}
	}
	id := NewID(s)
	objs, err := Build(s, id)
	if err != nil {
		return nil, err
	}
	if err := r.checkEnvironment(ctx, id); err != nil {
		return nil, err
	}
	// Anything that fails from here while a component is down is the
	// environment's failure, cleanup's included (this defer runs last).
	since := time.Now()
	defer func() {
		if ctx.Err() == nil {
			err = r.environmentFailed(context.WithoutCancel(ctx), id, since, err)
		}
	}()
	workloads := map[string]int32{}
	for _, d := range objs.Deployments {
		workloads[d.Name] = ptr.Deref(d.Spec.Replicas, 1)
	}
	ob, err := observe.Start(ctx, r.config, observe.Target{Run: id, Namespace: id, NodePool: id, Workloads: workloads})
	if err != nil {
		return nil, err
	}
	// Stopped after cleanup, which waits on its informers.
	defer ob.Stop()
	// The run stops waiting at the first incident of the environment.
	actx, stopAbort := r.abortOnIncident(ctx, id, since)
	defer stopAbort()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cleanup)
		defer cancel()
		if cerr := r.cleanupRun(cctx, objs, ob, since); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	var inj faults.Injector
	var minObserve time.Duration
	var injected time.Time
	if s.Spec.Fault != nil {
		if inj, err = r.newInjector(s, id, objs, shapes); err != nil {
			return nil, err
		}
		if h.onInject != nil {
			h.onInject(inj)
		}
		// Restored before the run's objects are removed, so that cleanup
		// runs on a healthy cluster.
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if rerr := inj.Restore(rctx); rerr != nil {
				err = errors.Join(err, fmt.Errorf("failed to restore fault %s: %w", s.Spec.Fault.Name, rerr))
			}
		}()
		r.progress(fmt.Sprintf("run %s: injecting fault %s (%s)", id, s.Spec.Fault.Name, inj.Definition().Layer))
		injected = time.Now()
		if err := inj.Inject(actx); err != nil {
			return nil, fmt.Errorf("failed to inject fault %s: %w", s.Spec.Fault.Name, err)
		}
		minObserve = inj.MinObserve()
	}
	in, err := r.inputsOf(s, objs, cat)
	if err != nil {
		return nil, err
	}
	// Read after the injection: a fault may have restarted Karpenter.
	apiBefore := r.apiStatsNow(ctx)
	r.progress(fmt.Sprintf("run %s: applying namespace, node class, NodePool and %d workload(s)", id, len(objs.Deployments)))
	applied := time.Now()
	for _, o := range objs.All() {
		if err := r.client.Create(actx, o); err != nil {
			return nil, fmt.Errorf("failed to create %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	if len(objs.Deployments) > 0 {
		ob.MarkStart(objs.Deployments[0].CreationTimestamp.Time)
	}
	timeout := s.Spec.Settle.Timeout.Duration
	if s.Spec.Fault != nil {
		timeout = max(s.Spec.Fault.Window.Duration, minObserve)
	}
	outcome := ob.WaitSettled(actx, observe.Settle{
		Quiet: s.Spec.Settle.Quiet.Duration, Stall: s.Spec.Settle.Stall.Duration, Timeout: timeout, Min: minObserve,
		Progress: func(msg string) { r.progress("run " + id + ": " + msg) },
	})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("run %s interrupted: %w", id, ctx.Err())
	}
	var envErr *EnvironmentError
	if errors.As(context.Cause(actx), &envErr) {
		r.progress(fmt.Sprintf("run %s: stopped: %s", id, supervise.Incidents(envErr.Incidents)))
		return nil, envErr
	}
	snap := ob.Snapshot()
	fp, err := fingerprint.Compute(snap, cat)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	r.progress(fmt.Sprintf("run %s: %s: %d node(s) %s, $%.4f/h", id, outcome, fp.Selection.Nodes, fp.Selection.Key(), fp.Selection.HourlyCost))
	facts := r.facts(ctx, objs, shapes, apiBefore, since)
	if facts.Health != "" {
		// An incident after the settle: the observation may hold it.
		return nil, &EnvironmentError{Run: id, Incidents: r.watch.Since(since), Down: r.watch.Down()}
	}
	res = &Result{ID: id, Observation: snap, Fingerprint: fp, Catalog: cat, Facts: facts, Inputs: in, Fault: inj, Injected: injected,
		Applied: applied, AllReadySeen: ob.FirstAllReady()}
	if h.whileFaulted != nil && inj != nil {
		h.whileFaulted(ctx, res)
	}
	return res, nil
}

// cleanupRun deletes the run's objects and waits, on the observer's
// informers, until Karpenter has removed every NodeClaim of the run's
// NodePool and the namespace is gone. It waits no longer than Karpenter
// takes: a node's drain lasts at least Karpenter's minimum drain time (5 s).
// A component that fails under cleanup stops the waiting at once, as it
// stops a run's: a dead Karpenter removes no NodeClaim however long one
// waits. Cleanup then starts over once every component is up again, or
// leaves the objects in place when one stays down.
func (r *Runner) cleanupRun(ctx context.Context, objs *Objects, ob goneWaiter, since time.Time) error {
	r.progress("run " + objs.Namespace.Name + ": cleaning up")
	progress := func(msg string) { r.progress("run " + objs.Namespace.Name + ": cleaning up: " + msg) }
	for attempt := 1; ; attempt++ {
		if down := r.awaitRecovery(ctx, progress); len(down) > 0 {
			return fmt.Errorf("left namespace %s, NodePool %s and node class %s in place: %s still down (a temporary cluster is removed with them; "+
				"on a cluster you keep, `nodeprint cluster restart` the component and delete them)",
				objs.Namespace.Name, objs.NodePool.Name, objs.NodeClass.Name, strings.Join(down, ", "))
		}
		actx, stop := r.abortOnIncident(ctx, objs.Namespace.Name, time.Now())
		err := r.deleteRun(actx, objs, ob, progress)
		stop()
		var ee *EnvironmentError
		if ctx.Err() == nil && errors.As(context.Cause(actx), &ee) {
			if attempt < cleanupAttempts {
				progress("stopped waiting: " + supervise.Incidents(ee.Incidents))
				continue
			}
			return fmt.Errorf("gave up after %d attempts, a component failed under each: %s", attempt, supervise.Incidents(ee.Incidents))
		}
		if err != nil {
			return err
		}
		break
	}
	if r.watch != nil && len(r.watch.Since(since)) > 0 {
		return r.sweepAfterIncident(ctx, objs, progress)
	}
	return nil
}

// cleanupAttempts bounds how often cleanup starts over after a component
// failed under it and came back.
const cleanupAttempts = 3

// goneWaiter is what cleanup waits on: the run's observer.
type goneWaiter interface {
	WaitNodeClaimsGone(ctx context.Context, progress func(string)) error
	WaitNamespaceGone(ctx context.Context, progress func(string)) error
}

// deleteRun deletes the run's objects and waits until they are gone.
// Deleting again what is already being deleted is harmless, so cleanup
// can start it over.
func (r *Runner) deleteRun(ctx context.Context, objs *Objects, ob goneWaiter, progress func(string)) error {
	var errs []error
	del := func(o client.Object) {
		if err := r.client.Delete(ctx, o, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %T %s: %w", o, client.ObjectKeyFromObject(o), err))
		}
	}
	del(objs.Namespace)
	del(objs.NodePool)
	if err := ob.WaitNodeClaimsGone(ctx, progress); err != nil {
		errs = append(errs, fmt.Errorf("failed waiting for Karpenter to remove the NodeClaims of NodePool %s: %w", objs.NodePool.Name, err))
	}
	del(objs.NodeClass)
	// The namespace goes last: the namespace controller removes its pods
	// (KWOK deletes them) before it is gone. A run is cleaned up when none
	// of its objects is left.
	if err := ob.WaitNamespaceGone(ctx, progress); err != nil {
		errs = append(errs, fmt.Errorf("failed waiting for namespace %s to be deleted: %w", objs.Namespace.Name, err))
	}
	if len(errs) == 0 {
		if err := r.removeOrphanNodes(ctx, objs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeOrphanNodes deletes the nodes of the run's NodePool that outlived
// every NodeClaim, and waits until they are gone. KWOK's provider creates
// a launch's node itself: a launch still in flight when the NodePool was
// deleted (an HPA scaling up while cleanup began) can create its node after
// Karpenter removed the NodeClaim, and nothing of Karpenter's removes it.
// Seen once in a soak repetition, under memory-leak-hpa; every later spec
// of the suite then failed on that leftover.
func (r *Runner) removeOrphanNodes(ctx context.Context, objs *Objects) error {
	if err := r.untilNothingLeft(ctx, objs, 0); err != nil {
		return fmt.Errorf("failed to see the nodes of NodePool %s gone: %w", objs.NodePool.Name, err)
	}
	return nil
}

// quietAfterIncident is how long no NodeClaim or node of a run's deleted
// NodePool may appear before cleanup after an incident is done: longer
// than Karpenter's largest batch window (10 s).
const quietAfterIncident = 15 * time.Second

// sweepAfterIncident is cleanup's last step when a component failed
// during the run. The informers of the observer, of Karpenter and of the
// garbage collector were all cut off; what they saw gone is asked of the
// API server, and a NodeClaim that Karpenter launched for the deleted
// NodePool from its stale cache (seen once, in the spec that restarts the
// API server) is deleted, until none has appeared for quietAfterIncident.
func (r *Runner) sweepAfterIncident(ctx context.Context, objs *Objects, progress func(string)) error {
	progress(fmt.Sprintf("a component failed since the run began: asking the API server until namespace %s is gone and no NodeClaim or node of NodePool %s has appeared for %s",
		objs.Namespace.Name, objs.NodePool.Name, r.sweepQuiet))
	if err := r.untilNothingLeft(ctx, objs, r.sweepQuiet); err != nil {
		return fmt.Errorf("failed to see the run's objects gone after the incident: %w", err)
	}
	return nil
}

// untilNothingLeft asks the API server every second, deleting what
// deleteLeftovers deletes, until nothing of the run has been left for quiet
// (at once, for 0).
func (r *Runner) untilNothingLeft(ctx context.Context, objs *Objects, quiet time.Duration) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seen := time.Now()
	for {
		left, err := r.deleteLeftovers(ctx, objs)
		switch {
		case err != nil || len(left) > 0:
			seen = time.Now()
		case time.Since(seen) >= quiet:
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("left: %s", strings.Join(left, ", "))
			}
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-tick.C:
		}
	}
}

// deleteLeftovers lists what of the run the API server still has (the
// list is what it returns), and deletes the NodeClaims of the run's NodePool that are not being deleted
// and, once none is left, the NodePool's nodes.
func (r *Runner) deleteLeftovers(ctx context.Context, objs *Objects) ([]string, error) {
	var left []string
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(objs.Namespace), &corev1.Namespace{}); err == nil {
		left = append(left, "Namespace/"+objs.Namespace.Name)
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	// remove deletes what is left and not being deleted yet.
	remove := func(o client.Object, kind, why string) error {
		if !o.GetDeletionTimestamp().IsZero() {
			return nil
		}
		r.progress(fmt.Sprintf("run %s: cleaning up: deleting %s %s, %s", objs.Namespace.Name, kind, o.GetName(), why))
		if err := r.client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete %s %s: %w", kind, o.GetName(), err)
		}
		return nil
	}
	of := client.MatchingLabels{karpv1.NodePoolLabelKey: objs.NodePool.Name}
	ncs := &karpv1.NodeClaimList{}
	if err := r.client.List(ctx, ncs, of); err != nil {
		return nil, err
	}
	for i := range ncs.Items {
		nc := &ncs.Items[i]
		left = append(left, "NodeClaim/"+nc.Name)
		if err := remove(nc, "NodeClaim", "launched for the deleted NodePool"); err != nil {
			return nil, err
		}
	}
	nodes := &corev1.NodeList{}
	if err := r.client.List(ctx, nodes, of); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		left = append(left, "Node/"+n.Name)
		// KWOK's provider creates the node of a launch; when the
		// NodeClaim was deleted first, nothing of Karpenter's owns the
		// node any more and it would stay Ready for good.
		if len(ncs.Items) == 0 {
			if err := remove(n, "node", "whose NodeClaim is gone"); err != nil {
				return nil, err
			}
		}
	}
	return left, nil
}

// Record runs a scenario n times and aggregates the runs into a baseline.
func (r *Runner) Record(ctx context.Context, env fingerprint.Environment, s *scenario.Scenario, n int) (*fingerprint.Baseline, error) {
	var fps []*fingerprint.Fingerprint
	var applied *inputs.Inputs
	for i := 0; i < n; i++ {
		res, err := r.Run(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("scenario %s, run %d of %d: %w", s.Metadata.Name, i+1, n, err)
		}
		if applied != nil {
			if d := inputs.Diff(applied, res.Inputs); len(d) > 0 {
				return nil, fmt.Errorf("scenario %s, run %d of %d applied other inputs than run 1 (%s): nothing recorded", s.Metadata.Name, i+1, n, inputs.Summary(d, 3))
			}
		}
		applied = res.Inputs
		fps = append(fps, res.Fingerprint)
		env.CatalogDigest = res.Catalog.Digest
	}
	env.Catalog = s.Spec.Catalog
	b, err := fingerprint.NewBaseline(s.Metadata.Name, env, fps)
	if err != nil {
		return nil, err
	}
	b.Inputs = applied
	return b, nil
}

// Leftovers lists the objects of any run that still exist: namespaces,
// NodePools and node classes with the run label, and the nodes and
// NodeClaims of run NodePools. After cleanup it must be empty.
func Leftovers(ctx context.Context, c client.Client) ([]string, error) {
	var out []string
	has := client.HasLabels{observe.RunLabel}
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss, has); err != nil {
		return nil, fmt.Errorf("failed to list namespaces: %w", err)
	}
	for _, n := range nss.Items {
		out = append(out, "Namespace/"+n.Name)
	}
	nps := &karpv1.NodePoolList{}
	if err := c.List(ctx, nps, has); err != nil {
		return nil, fmt.Errorf("failed to list NodePools: %w", err)
	}
	for _, n := range nps.Items {
		out = append(out, "NodePool/"+n.Name)
	}
	ncs := &karpv1.NodeClaimList{}
	if err := c.List(ctx, ncs); err != nil {
		return nil, fmt.Errorf("failed to list NodeClaims: %w", err)
	}
	for _, n := range ncs.Items {
		out = append(out, "NodeClaim/"+n.Name)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return nil, fmt.Errorf("failed to list nodes: %w", err)
	}
	for _, n := range nodes.Items {
		out = append(out, "Node/"+n.Name)
	}
	return out, nil
}
