// Package harness builds what every job runs scenarios on: a cluster of
// any provider (brought up for the job, or one that is already running),
// the supervisor watching its components, a runner bound to both and the
// judge of its runs; and it tears down what it started. The CLI, the suites and the benchmark
// build it here and nowhere else.
//
// What a provider can do is asked of it through interfaces, never by its
// name (pkg/cluster's types.go): the runner asks the provider to switch
// Karpenter's catalog and settings (cluster.KarpenterSwitcher), and a
// cluster nodeprint does not own accepts only the catalog it was given
// (WithCatalog); whether the harness stops the cluster depends only on
// whether it started it.
package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// Harness is a cluster ready for scenario runs.
type Harness struct {
	// Provider is the cluster's provider.
	Provider cluster.Provider
	// Name is the cluster as reports name it.
	Name string
	// Runner runs scenarios on the cluster, supervised.
	Runner *run.Runner
	// Judge turns the runner's runs into report entries.
	Judge *verify.Judge
	// Provenance is what a baseline recorded on this cluster says it was
	// made with (Karpenter's and Kubernetes' versions).
	Provenance fingerprint.Provenance

	watch *supervise.Watcher
	// ropts are every runner's options (BuildRunner's too).
	ropts []run.Option
	// started: Close brings the cluster down.
	started bool
	o       options
}

type options struct {
	kind       cluster.Kind
	inCluster  bool
	reuse      string
	name       string
	kubeconfig string
	catalog    string
	toolchain  *toolchain.Toolchain
	progress   func(string)
	events     func(cluster.Event)
	buildLog   io.Writer
	runOpts    []run.Option
	judgeOpts  []verify.Option
	// The job's (NewJob).
	shard, karpenterVersion, karpenterBinary, baselineDir string
	parallel                                              int
	repeat                                                *verify.Repeat
	maxPairs                                              int
	// reference is the toolchain whose Karpenter build the reference arm
	// runs (Job.Reference); nil: no paired verification.
	reference    *toolchain.Toolchain
	layout       *repo.Layout
	needBaseline func(*scenario.Scenario) bool
}

// Option configures New.
type Option func(*options)

// WithProvider chooses the cluster's provider (default local).
func WithProvider(k cluster.Kind) Option { return func(o *options) { o.kind = k } }

// WithKarpenterInCluster runs Karpenter in the kind cluster the job
// starts, from its chart (cluster.WithKarpenterInCluster; default: a
// process of this machine).
func WithKarpenterInCluster() Option { return func(o *options) { o.inCluster = true } }

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

// WithJudgeOptions passes options to the judge, after the harness's own
// (progress), so they win.
func WithJudgeOptions(opts ...verify.Option) Option {
	return func(o *options) { o.judgeOpts = append(o.judgeOpts, opts...) }
}

// New brings up (or checks) the cluster, starts the supervisor and builds
// the runner, step by step; a step that fails undoes the ones before it.
func New(ctx context.Context, opts ...Option) (h *Harness, err error) {
	return newHarness(ctx, options{kind: cluster.KindLocal}, opts)
}

func newHarness(ctx context.Context, o options, opts []Option) (h *Harness, err error) {
	for _, opt := range opts {
		opt(&o)
	}
	if o.progress == nil {
		o.progress = func(string) {}
	}
	if o.events == nil {
		o.events = func(cluster.Event) {}
	}
	if o.toolchain == nil {
		if o.toolchain, err = toolchain.Find(); err != nil {
			return nil, err
		}
	}
	h = &Harness{o: o, Provenance: repo.Provenance(o.toolchain)}
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
	if err := h.newProvider(o.catalogOrDefault()); err != nil {
		return err
	}
	p, name := h.Provider, h.Name
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

// newProvider creates the provider of the cluster the options name (a
// temporary one of this job when none is named).
func (h *Harness) newProvider(catalog string) error {
	o := h.o
	name := o.reuse
	if name == "" {
		name = o.name
	}
	if name == "" {
		name = fmt.Sprintf("np-%d", os.Getpid())
	}
	copts := []cluster.Option{cluster.WithName(name), cluster.WithProgress(o.events), cluster.WithToolchain(o.toolchain),
		cluster.WithKubeconfig(o.kubeconfig), cluster.WithCatalog(catalog)}
	if o.buildLog != nil {
		copts = append(copts, cluster.WithBuildOutput(o.buildLog))
	}
	if o.inCluster {
		copts = append(copts, cluster.WithKarpenterInCluster())
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
	return nil
}

// Attach is the harness of a running cluster for a read-only command
// (explain): the provider of the cluster WithCluster names, or, with the
// existing provider, of WithKubeconfig's; its catalog is WithCatalog's
// only (none: unknown). Nothing is started, supervised or run (no Runner,
// no Judge), and Close stops nothing. Unlike New it does not refuse a
// cluster with a component down: reading one is the point.
func Attach(ctx context.Context, opts ...Option) (*Harness, error) {
	o := options{kind: cluster.KindLocal}
	for _, opt := range opts {
		opt(&o)
	}
	if o.toolchain == nil && o.kind.Owned() {
		tc, err := toolchain.Find()
		if err != nil {
			return nil, err
		}
		o.toolchain = tc
	}
	if o.events == nil {
		o.events = func(cluster.Event) {}
	}
	if o.kind.Owned() && o.reuse == "" {
		return nil, &UsageError{Err: errors.New("attach to a running cluster: name it (--cluster)")}
	}
	h := &Harness{o: o}
	if err := h.newProvider(o.catalog); err != nil {
		return nil, err
	}
	if _, err := h.Provider.Status(ctx); err != nil {
		return nil, &cluster.PhaseError{Phase: "status", Err: err}
	}
	return h, nil
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

// newRunner binds a runner and its judge to the cluster. A cluster
// nodeprint does not own runs Karpenter with the catalog it was given, and
// its Karpenter is someone else's: the version is what its status says,
// the binary is not nodeprint's to digest.
func (h *Harness) newRunner(ctx context.Context) error {
	// Every process on this machine that runs scenarios on the cluster
	// (ginkgo -p, a second CLI) records its runs there: a run tells from
	// them whether it had Karpenter to itself.
	ropts := []run.Option{run.WithSupervisor(h.watch), run.WithProgress(h.o.progress),
		run.WithTenancyDir(filepath.Join(h.o.toolchain.Work, "tenancy"))}
	if owner, ok := h.Provider.(cluster.KarpenterOwner); ok {
		k, err := run.KarpenterAt(owner.KarpenterBinary(), h.o.toolchain.Versions.Karpenter)
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
		// Karpenter runs elsewhere: this machine's timings are not its.
		h.Provenance.Karpenter, h.Provenance.Kubernetes, h.Provenance.Machine = st.KarpenterVersion, st.KubernetesVersion, nil
		ropts = append(ropts, run.WithKarpenter(inputs.Karpenter{Version: st.KarpenterVersion}))
	}
	if h.started {
		// Nobody restarts a component of a job's own cluster, and its
		// teardown removes whatever a failed cleanup leaves.
		ropts = append(ropts, run.WithRecoveryGrace(0))
	}
	h.ropts = append(ropts, h.o.runOpts...)
	jopts := []verify.Option{verify.WithProgress(h.o.progress), verify.WithKubernetes(h.Provenance.Kubernetes)}
	ref, cand, err := h.arms()
	if err != nil {
		return err
	}
	if ref != nil {
		rr, err := run.NewRunner(h.Provider.Kubeconfig(), h.Provider, append(slices.Clone(h.ropts), ref...)...)
		if err != nil {
			return err
		}
		jopts = append(jopts, verify.WithReference(rr))
	}
	r, err := run.NewRunner(h.Provider.Kubeconfig(), h.Provider, append(slices.Clone(h.ropts), cand...)...)
	if err != nil {
		return err
	}
	h.Runner = r
	h.Judge = verify.New(r, append(jopts, h.o.judgeOpts...)...)
	return nil
}

// BuildRunner is a runner of the harness's cluster whose every run
// switches Karpenter to build b first (run.WithKarpenterBuild), supervised
// like h.Runner: an arm of a paired experiment (make sensitivity runs one
// per Karpenter build it compares). The provider must switch builds.
func (h *Harness) BuildRunner(b cluster.Build) (*run.Runner, error) {
	if _, ok := h.Provider.(cluster.KarpenterBuildSwitcher); !ok {
		return nil, fmt.Errorf("the %s cluster's provider cannot switch Karpenter builds between runs", h.Name)
	}
	k, err := run.KarpenterAt(b.Binary, b.Version)
	if err != nil {
		return nil, err
	}
	return run.NewRunner(h.Provider.Kubeconfig(), h.Provider, append(slices.Clone(h.ropts), run.WithKarpenterBuild(b, k))...)
}

// arms are the runner options of paired verification's two arms: each
// switches Karpenter to its own build before a run. None without a
// reference toolchain, or on a provider that cannot switch builds (the
// judge then says why it did not pair).
func (h *Harness) arms() (ref, cand []run.Option, err error) {
	if h.o.reference == nil {
		return nil, nil, nil
	}
	if _, ok := h.Provider.(cluster.KarpenterBuildSwitcher); !ok {
		return nil, nil, nil
	}
	for _, arm := range []struct {
		tc   *toolchain.Toolchain
		opts *[]run.Option
	}{{h.o.reference, &ref}, {h.o.toolchain, &cand}} {
		k, err := run.KarpenterOf(arm.tc)
		if err != nil {
			return nil, nil, err
		}
		*arm.opts = []run.Option{run.WithKarpenterBuild(cluster.ToolchainBuild(arm.tc), k)}
	}
	return ref, cand, nil
}

// catalogOrDefault is the catalog a cluster nodeprint does not own runs
// with: WithCatalog's, else the KWOK provider's generic one.
func (o options) catalogOrDefault() string {
	if o.catalog != "" {
		return o.catalog
	}
	return o.toolchain.Paths().InstanceTypes
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

// Kind is the cluster's provider.
func (h *Harness) Kind() cluster.Kind { return cmp.Or(h.o.kind, cluster.KindLocal) }

// Nodes says how the cluster's nodes started where that differs by
// machine (a cluster.NodeRoute provider); "" elsewhere or when unknown.
func (h *Harness) Nodes() string {
	nr, ok := h.Provider.(cluster.NodeRoute)
	if !ok {
		return ""
	}
	r, err := nr.NodeRoute()
	if err != nil {
		return ""
	}
	return r
}

// UsageError is a harness that cannot be built from what it was given (an
// unknown provider, a bad cluster name or kubeconfig): bad input, nothing
// was started.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }
