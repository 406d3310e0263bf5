// Package harness builds what every job runs scenarios on: a cluster of
// any provider (brought up for the job, or one that is already running),
// the supervisor watching its components, and a runner bound to both; and
// it tears down what it started. The CLI, the suites and the benchmark
// build it here and nowhere else.
//
// What a provider can do is asked of it through interfaces, never by its
// name: a provider that switches Karpenter's catalog and settings (run.KarpenterSwitcher)
// gets scenarios of every catalog, one that cannot runs with the catalog it
// was given (WithCatalog); whether the harness stops the cluster depends
// only on whether it started it.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/supervise"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Harness is a cluster ready for scenario runs.
type Harness struct {
	// Provider is the cluster's provider.
	Provider cluster.Provider
	// Name is the cluster as reports name it.
	Name string
	// Runner runs scenarios on the cluster, supervised.
	Runner *run.Runner
	// Provenance is what a baseline recorded on this cluster says it was
	// made with (Karpenter's and Kubernetes' versions).
	Provenance fingerprint.Provenance

	watch *supervise.Watcher
	// started: Close brings the cluster down.
	started bool
	o       options
}

type options struct {
	kind       cluster.Kind
	reuse      string
	name       string
	kubeconfig string
	catalog    string
	toolchain  *toolchain.Toolchain
	progress   func(string)
	events     func(cluster.Event)
	buildLog   io.Writer
	runOpts    []run.Option
}

// Option configures New.
type Option func(*options)

// WithProvider chooses the cluster's provider (default local).
func WithProvider(k cluster.Kind) Option { return func(o *options) { o.kind = k } }

// WithCluster reuses the running cluster of that name instead of bringing
// one up; it must be healthy, and Close leaves it running (default: bring
// up a temporary cluster and bring it down in Close).
func WithCluster(name string) Option { return func(o *options) { o.reuse = name } }

// WithName names the temporary cluster New brings up (default
// "np-<pid>"). A killed job leaves it for `nodeprint cluster prune`.
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithKubeconfig is the kubeconfig of a cluster nodeprint does not own
// (the existing provider; default $KUBECONFIG, else ~/.kube/config).
func WithKubeconfig(path string) Option { return func(o *options) { o.kubeconfig = path } }

// WithCatalog is the instance-type catalog Karpenter runs with on a
// cluster whose provider cannot switch it (default: the KWOK provider's
// generic catalog).
func WithCatalog(path string) Option { return func(o *options) { o.catalog = path } }

// WithToolchain sets the binaries (default: toolchain.Find()).
func WithToolchain(tc *toolchain.Toolchain) Option { return func(o *options) { o.toolchain = tc } }

// WithProgress receives the supervisor's and the runs' progress lines
// (default: none).
func WithProgress(f func(string)) Option { return func(o *options) { o.progress = f } }

// WithClusterEvents receives the cluster's start and stop events (default:
// none).
func WithClusterEvents(f func(cluster.Event)) Option { return func(o *options) { o.events = f } }

// WithBuildOutput receives a toolchain build's output when the cluster has
// to build missing binaries (default: discarded).
func WithBuildOutput(w io.Writer) Option { return func(o *options) { o.buildLog = w } }

// WithRunnerOptions passes options to the runner, after the harness's own
// (the supervisor, the Karpenter in the inputs, progress), so they win.
func WithRunnerOptions(opts ...run.Option) Option {
	return func(o *options) { o.runOpts = append(o.runOpts, opts...) }
}

// New brings up (or checks) the cluster, starts the supervisor and builds
// the runner, step by step; a step that fails undoes the ones before it.
func New(ctx context.Context, opts ...Option) (h *Harness, err error) {
	o := options{kind: cluster.KindLocal, progress: func(string) {}, events: func(cluster.Event) {}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.toolchain == nil {
		if o.toolchain, err = toolchain.Find(); err != nil {
			return nil, err
		}
	}
	h = &Harness{o: o, Provenance: run.Provenance(o.toolchain)}
	defer func() {
		if err != nil {
			err = errors.Join(err, h.Close(context.WithoutCancel(ctx)))
			h = nil
		}
	}()
	for _, step := range []func(context.Context) error{h.bringUp, h.supervise, h.newRunner} {
		if err := step(ctx); err != nil {
			return h, err
		}
	}
	return h, nil
}

// bringUp creates the provider and brings the cluster up, or checks the
// one WithCluster names.
func (h *Harness) bringUp(ctx context.Context) error {
	o := h.o
	name := o.reuse
	if name == "" {
		name = o.name
	}
	if name == "" {
		name = fmt.Sprintf("np-%d", os.Getpid())
	}
	copts := []cluster.Option{cluster.WithName(name), cluster.WithProgress(o.events), cluster.WithToolchain(o.toolchain),
		cluster.WithKubeconfig(o.kubeconfig)}
	if o.buildLog != nil {
		copts = append(copts, cluster.WithBuildOutput(o.buildLog))
	}
	if o.reuse == "" {
		// A cluster of this job only: if the job is killed, prune finds it.
		copts = append(copts, cluster.WithTemporary())
	}
	p, err := cluster.New(o.kind, copts...)
	if err != nil {
		return &UsageError{Err: err}
	}
	h.Provider, h.Name = p, name
	switch {
	case !o.kind.Owned():
		if o.reuse != "" {
			return &UsageError{Err: fmt.Errorf("cluster %q: a cluster of the %s provider is not nodeprint's to name; give its kubeconfig", o.reuse, o.kind)}
		}
		// Someone else's cluster: Up only checks it, and Close leaves it.
		h.Name = fmt.Sprintf("%s (%s)", o.kind, p.Kubeconfig())
		return p.Up(ctx)
	case o.reuse != "":
		return h.checkHealthy(ctx, name)
	}
	// Set before Up: Up rolls itself back, and Close brings down whatever
	// is left of a cluster that did not come up.
	h.started = true
	return p.Up(ctx)
}

// checkHealthy refuses a reused cluster with a component down.
func (h *Harness) checkHealthy(ctx context.Context, name string) error {
	st, err := h.Provider.Status(ctx)
	if err == nil && !st.Healthy() {
		err = fmt.Errorf("cluster %q: %s", name, st.Problem())
	}
	if err != nil {
		return &cluster.PhaseError{Phase: "status", Err: err}
	}
	return nil
}

// supervise starts watching the cluster's components: a component that
// dies, restarts or stops answering under a run makes it inconclusive
// (environment).
func (h *Harness) supervise(ctx context.Context) error {
	w, err := supervise.Start(ctx, h.Provider, supervise.WithProgress(h.o.progress))
	if err != nil {
		return &cluster.PhaseError{Phase: "status", Err: err}
	}
	h.watch = w
	return nil
}

// newRunner binds a runner to the cluster. A provider that cannot switch
// Karpenter's catalog runs with the one it was given, and its Karpenter is
// someone else's: the version is what its status says, the binary is not
// nodeprint's to digest.
func (h *Harness) newRunner(ctx context.Context) error {
	// Every process on this machine that runs scenarios on the cluster
	// (ginkgo -p, a second CLI) records its runs there: a run tells from
	// them whether it had Karpenter to itself.
	ropts := []run.Option{run.WithSupervisor(h.watch), run.WithProgress(h.o.progress),
		run.WithTenancyDir(filepath.Join(h.o.toolchain.Work, "tenancy"))}
	catalogs, ok := h.Provider.(run.KarpenterSwitcher)
	if ok {
		k, err := run.KarpenterOf(h.o.toolchain)
		if err != nil {
			return err
		}
		// nodeprint's own cluster: its API server is beside the harness,
		// so the observer's receive times measure at millisecond resolution.
		ropts = append(ropts, run.WithKarpenter(k), run.WithClock(observe.ReceivedClock))
	} else {
		st, err := h.Provider.Status(ctx)
		if err != nil {
			return &cluster.PhaseError{Phase: "status", Err: err}
		}
		catalog := h.o.catalog
		if catalog == "" {
			catalog = h.o.toolchain.Paths().InstanceTypes
		}
		catalogs = run.FixedCatalog(catalog)
		h.Provenance.Karpenter, h.Provenance.Kubernetes = st.KarpenterVersion, st.KubernetesVersion
		ropts = append(ropts, run.WithKarpenter(inputs.Karpenter{Version: st.KarpenterVersion}))
	}
	if h.started {
		// Nobody restarts a component of a job's own cluster, and its
		// teardown removes whatever a failed cleanup leaves.
		ropts = append(ropts, run.WithRecoveryGrace(0))
	}
	r, err := run.NewRunner(h.Provider.Kubeconfig(), catalogs, append(ropts, h.o.runOpts...)...)
	if err != nil {
		return err
	}
	h.Runner = r
	return nil
}

// downTimeout bounds bringing a temporary cluster down.
const downTimeout = 2 * time.Minute

// Close stops the supervisor and brings down the cluster New brought up
// (bounded by downTimeout); a reused or existing cluster keeps
// running. It is safe on a partly built harness and more than once.
func (h *Harness) Close(ctx context.Context) error {
	if h == nil {
		return nil
	}
	if h.watch != nil {
		h.watch.Stop()
		h.watch = nil
	}
	if !h.started {
		return nil
	}
	h.started = false
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), downTimeout)
	defer cancel()
	if err := h.Provider.Down(dctx); err != nil {
		return fmt.Errorf("failed to bring cluster %s down: %w", h.Name, err)
	}
	return nil
}

// Kubeconfig is the cluster's admin kubeconfig.
func (h *Harness) Kubeconfig() string { return h.Provider.Kubeconfig() }

// UsageError is a harness that cannot be built from what it was given (an
// unknown provider, a bad cluster name or kubeconfig): bad input, nothing
// was started.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
