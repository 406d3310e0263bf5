// Package cluster brings up and tears down the cluster nodeprint runs on.
//
// The local provider (the default) needs no Docker: kwokctl's binary runtime
// starts a real control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok-controller, metrics-server) from the binaries in bin/,
// and Karpenter with its KWOK cloud provider runs as a process the provider
// owns. Everything listens on 127.0.0.1, on ports chosen at start, so two
// clusters with different names run side by side.
package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Status is what Status found.
type Status struct {
	Name              string
	Provider          string
	Exists            bool
	KubernetesVersion string
	KarpenterVersion  string
	Kubeconfig        string
	Components        []ComponentStatus
}

// Healthy reports whether the cluster exists and every component is healthy.
func (s Status) Healthy() bool {
	if !s.Exists || len(s.Components) == 0 {
		return false
	}
	for _, c := range s.Components {
		if !c.Healthy {
			return false
		}
	}
	return true
}

// ComponentStatus is one component's health.
type ComponentStatus struct {
	Name    string
	Healthy bool
	// Detail says what was checked, or why it failed.
	Detail string
	PID    int
	// Exited is true when the component's process is gone.
	Exited bool
	// Restarts counts the restarts of the component's container where a
	// container runtime counts them (a pod's); PID says nothing then. An
	// increase means it restarted; a new pod starts from 0.
	Restarts int32
	// Log is the component's log file, where the harness knows it.
	Log string
	// Via names the component this one is probed through (etcd through the
	// API server's /readyz, metrics-server through its APIService): while
	// that one is unhealthy, this one's failed probe says nothing about it.
	Via string
}

// Blocked reports whether c's probe failed only because the component it
// is asked through is unhealthy too. A process that exited is never
// blocked: that is its own failure.
func (s Status) Blocked(c ComponentStatus) bool {
	if c.Healthy || c.Exited || c.Via == "" {
		return false
	}
	for _, o := range s.Components {
		if o.Name == c.Via {
			return !o.Healthy
		}
	}
	return false
}

// Event is a progress report from a long operation.
type Event struct {
	// Phase is the step: toolchain, control-plane, crds, stages, karpenter, ready, rollback, down.
	Phase string
	// Done is true when the phase finished; Elapsed is then its duration.
	Done    bool
	Elapsed time.Duration
	// Message says what is happening or being waited for.
	Message string
}

// String is the event as a progress line says it: the phase, then its
// duration once it finished, else what it is doing.
func (e Event) String() string {
	if e.Done && e.Elapsed > 0 {
		return fmt.Sprintf("%-13s done in %s", e.Phase, e.Elapsed.Round(10*time.Millisecond))
	}
	return fmt.Sprintf("%-13s %s", e.Phase, e.Message)
}

// Kind names a provider.
type Kind string

// The providers.
const (
	KindLocal    Kind = "local"
	KindKind     Kind = "kind"
	KindExisting Kind = "existing"
)

// Owned says whether nodeprint starts the cluster and its Karpenter
// itself (local, kind): it can then switch catalogs, inject every fault
// and restart components. An existing cluster is someone else's.
func (k Kind) Owned() bool { return k == KindLocal || k == KindKind || k == "" }

// ServesPodMetrics says whether a cluster of this kind serves the pod
// metrics API (metrics.k8s.io) for KWOK's pods, which an HPA scales on:
// the local provider runs metrics-server against KWOK's controller; the
// kind provider runs KWOK's controller outside the node, where no
// metrics-server in the cluster could reach it; an existing cluster is
// taken at its word (its HPAs are its own).
func (k Kind) ServesPodMetrics() bool { return k != KindKind }

// Options are shared by the providers.
type Options struct {
	name      string
	progress  func(Event)
	toolchain *toolchain.Toolchain
	workRoot  string
	timeout   time.Duration
	buildLog  io.Writer
	// kubeconfig is the existing provider's cluster.
	kubeconfig string
	// catalog is the instance-type catalog the existing provider's
	// Karpenter runs with.
	catalog string
	// temporary records the calling process as the cluster's owner.
	temporary bool
	// inCluster runs Karpenter in the kind cluster from its chart.
	inCluster bool
}

// Option configures a provider.
type Option func(*Options)

// WithName sets the cluster's name (default "nodeprint"). It must be a DNS
// label of at most 40 characters: it becomes part of paths and commands.
func WithName(name string) Option { return func(o *Options) { o.name = name } }

// WithProgress receives progress events (default: none).
func WithProgress(f func(Event)) Option { return func(o *Options) { o.progress = f } }

// WithToolchain sets where the binaries are (default: toolchain.Find()).
func WithToolchain(t *toolchain.Toolchain) Option { return func(o *Options) { o.toolchain = t } }

// WithWorkRoot sets the directory under which each cluster keeps its state
// in a folder named after it (default: the toolchain's Work/clusters: <checkout>/.work/clusters, or the per-user cache of an installed binary).
func WithWorkRoot(dir string) Option { return func(o *Options) { o.workRoot = dir } }

// WithTimeout bounds Up (default 3 minutes, not counting a toolchain build).
func WithTimeout(d time.Duration) Option { return func(o *Options) { o.timeout = d } }

// WithBuildOutput receives the toolchain build's output when Up has to build
// missing binaries (default: discarded).
func WithBuildOutput(w io.Writer) Option { return func(o *Options) { o.buildLog = w } }

// WithKubeconfig is the kubeconfig of the existing provider's cluster
// (default: $KUBECONFIG, else ~/.kube/config). The other providers write
// their own and ignore it.
func WithKubeconfig(path string) Option { return func(o *Options) { o.kubeconfig = path } }

// WithCatalog is, for the existing provider, the instance-type catalog
// (a file) its Karpenter runs with (default: none known, and UseKarpenter
// refuses every catalog). The local and kind providers switch catalogs
// themselves and ignore it.
func WithCatalog(path string) Option { return func(o *Options) { o.catalog = path } }

// WithKarpenterInCluster makes the kind provider run Karpenter in the
// cluster, as Karpenter's own CI does: its image built locally, loaded into
// the nodes, installed from the release's chart (default: a process of
// this machine, as the local provider runs it). A cluster that was started
// so is reopened so without it. The other providers refuse it.
func WithKarpenterInCluster() Option { return func(o *Options) { o.inCluster = true } }

// DefaultName is the cluster name used when none is given.
const DefaultName = "nodeprint"

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a cluster name before it reaches a path or a command line.
func ValidateName(name string) error {
	if len(name) > 40 || !nameRE.MatchString(name) {
		return &InvalidNameError{Name: name}
	}
	return nil
}

// InvalidNameError is returned for a cluster name that is not a short DNS label.
type InvalidNameError struct{ Name string }

func (e *InvalidNameError) Error() string {
	return fmt.Sprintf("invalid cluster name %q: use 1 to 40 lowercase letters, digits and '-', starting and ending with a letter or digit", e.Name)
}

// NotFoundError is returned when an operation needs a cluster that does not exist.
type NotFoundError struct {
	Name, WorkDir string
	// Provider is the provider that looked (empty: local).
	Provider Kind
}

func (e *NotFoundError) Error() string {
	flag := ""
	if e.Provider != "" && e.Provider != KindLocal {
		flag = "--provider " + string(e.Provider) + " "
	}
	return fmt.Sprintf("no cluster named %q (nothing in %s): start it with `nodeprint cluster up %s--name %s`", e.Name, e.WorkDir, flag, e.Name)
}

// PhaseError says which phase of Up failed; the cause is wrapped.
type PhaseError struct {
	Phase string
	Err   error
	// LogHint names a log file worth reading, if any.
	LogHint string
}

func (e *PhaseError) Error() string {
	msg := fmt.Sprintf("cluster did not come up: %s: %v", e.Phase, e.Err)
	if e.LogHint != "" {
		msg += " (see " + e.LogHint + ")"
	}
	return msg
}

func (e *PhaseError) Unwrap() error { return e.Err }

// ErrAlreadyRunning is wrapped when Up finds the cluster already there.
var ErrAlreadyRunning = errors.New("cluster already exists")

// New returns the provider of the given kind.
func New(kind Kind, opts ...Option) (Provider, error) {
	switch kind {
	case KindLocal, "", KindExisting:
		var o Options
		for _, opt := range opts {
			opt(&o)
		}
		if o.inCluster {
			return nil, fmt.Errorf("the %s provider cannot run Karpenter in the cluster: only the kind provider can (--provider kind)", cmp.Or(kind, KindLocal))
		}
		if kind == KindExisting {
			return NewExisting(opts...)
		}
		return NewLocal(opts...)
	case KindKind:
		k, err := NewKind(opts...)
		if err != nil {
			return nil, err
		}
		if k.InCluster() {
			return &KindInCluster{k: k}, nil
		}
		return k, nil
	default:
		return nil, fmt.Errorf("unknown cluster provider %q: want local, kind or existing", kind)
	}
}

// Problem says what is unhealthy, or "" when the cluster is healthy.
func (s Status) Problem() string {
	if !s.Exists {
		return "the cluster does not exist"
	}
	if s.Healthy() {
		return ""
	}
	return "unhealthy: " + unhealthy(s)
}
