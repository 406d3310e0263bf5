// Package environment is what a platform team imports to write its own
// Ginkgo suite against Karpenter: a local cluster with Karpenter and KWOK
// started through pkg/harness (StartCluster), a client with Karpenter's and
// KWOK's types bound to a kubeconfig (New), the assertion helpers
// (Expect…, EventuallyExpect…) in the style of Karpenter's own
// test/pkg/environment, so a team's specs read like Karpenter's, a
// namespace for a spec's own objects (NewApplied), and helpers around
// explain (ExpectExplained) and nodeprint's observer (StartObserver).
//
// It is the only package under pkg/ that imports Ginkgo and Gomega: its
// helpers fail the running spec, so they may be called only from Ginkgo
// nodes. The nodeprint CLI never imports it; nodeprint's own suites build
// on it (suites/internal/suitekit).
//
// Every wait is bounded by the Environment's timeout (WithTimeout) as well
// as by the spec's context, and its failure names what it waited for.
package environment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/kube"
)

// ReuseClusterEnv names an already running local cluster for StartCluster
// to use instead of starting one (it is then left running). Handy while
// writing specs:
//
//	nodeprint cluster up --name dev && NODEPRINT_CLUSTER=dev go test ./mysuite/
const ReuseClusterEnv = "NODEPRINT_CLUSTER"

// DefaultTimeout bounds each wait unless WithTimeout says otherwise: on the
// local cluster Karpenter launches KWOK nodes in seconds, so a wait that
// takes minutes is a failure, not a slow cluster.
const DefaultTimeout = 2 * time.Minute

// Environment is a cluster as specs see it.
type Environment struct {
	// Kubeconfig is the cluster's admin kubeconfig.
	Kubeconfig string
	// Client knows core Kubernetes, Karpenter v1 (NodePool, NodeClaim)
	// and the KWOK node class.
	Client client.Client
	// Harness is the cluster StartCluster started (nil after New).
	Harness *harness.Harness

	timeout time.Duration
}

type options struct {
	timeout     time.Duration
	harnessOpts []harness.Option
}

// Option configures New and StartCluster.
type Option func(*options)

// WithTimeout bounds every wait of the Environment's helpers (default
// DefaultTimeout). The spec's own SpecTimeout still applies.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithHarnessOptions passes options to harness.New, after StartCluster's
// own (progress to GinkgoWriter, the cluster's name), so they win
// (default: none). Only StartCluster starts a cluster: New rejects them.
func WithHarnessOptions(opts ...harness.Option) Option {
	return func(o *options) { o.harnessOpts = append(o.harnessOpts, opts...) }
}

func newOptions(opts []Option) (options, error) {
	o := options{timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("invalid timeout %s: it must be positive", o.timeout)
	}
	return o, nil
}

// New connects to the cluster of kubeconfig, a local cluster or any other
// with Karpenter's CRDs.
func New(kubeconfig string, opts ...Option) (*Environment, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if len(o.harnessOpts) > 0 {
		return nil, errors.New("harness options configure a cluster StartCluster starts; New starts none")
	}
	return connect(kubeconfig, o)
}

func connect(kubeconfig string, o options) (*Environment, error) {
	c, err := kube.NewClient(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("failed to connect to the cluster of %s: %w", kubeconfig, err)
	}
	return &Environment{Kubeconfig: kubeconfig, Client: c, timeout: o.timeout}, nil
}

// StartCluster starts a local cluster with Karpenter (KWOK provider)
// through harness.New, building the pinned toolchain first where it is
// missing, and registers its teardown with DeferCleanup: call it from a
// BeforeSuite (or SynchronizedBeforeSuite's first function) whose
// NodeTimeout allows a cold build, about 11 minutes.
//
// The cluster is named <name>-<pid>: go test runs packages side by side,
// and each gets its own cluster. If the suite is killed, `nodeprint
// cluster prune` removes it. With $NODEPRINT_CLUSTER (ReuseClusterEnv)
// set, that running cluster is used instead and left running.
func StartCluster(ctx context.Context, name string, opts ...Option) *Environment {
	GinkgoHelper()
	o, err := newOptions(opts)
	Expect(err).NotTo(HaveOccurred())
	hopts := []harness.Option{harness.WithProgress(func(msg string) { fmt.Fprintln(GinkgoWriter, msg) }),
		harness.WithClusterEvents(func(e cluster.Event) { fmt.Fprintf(GinkgoWriter, "cluster: %s\n", e) })}
	if reuse := os.Getenv(ReuseClusterEnv); reuse != "" {
		By(fmt.Sprintf("reusing the running cluster %q (%s)", reuse, ReuseClusterEnv))
		hopts = append(hopts, harness.WithCluster(reuse))
	} else {
		name = fmt.Sprintf("%s-%d", name, os.Getpid())
		By(fmt.Sprintf("starting the local cluster %q", name))
		hopts = append(hopts, harness.WithName(name), harness.WithBuildOutput(GinkgoWriter))
	}
	h, err := harness.New(ctx, append(hopts, o.harnessOpts...)...)
	Expect(err).NotTo(HaveOccurred(), "starting the cluster")
	// Close brings down only a cluster the harness started.
	DeferCleanup(func(ctx SpecContext) {
		By(fmt.Sprintf("stopping the harness of cluster %q", h.Name))
		Expect(h.Close(ctx)).To(Succeed())
	}, NodeTimeout(3*time.Minute))
	e, err := connect(h.Kubeconfig(), o)
	Expect(err).NotTo(HaveOccurred())
	e.Harness = h
	return e
}

// Timeout is the bound of each of the Environment's waits.
func (e *Environment) Timeout() time.Duration { return e.timeout }

// cleanupTimeout bounds a cleanup that waits once: the wait's own timeout
// and a margin for the delete call, so the wait's message, not Ginkgo's
// node timeout, is what a stuck deletion reports.
func (e *Environment) cleanupTimeout() time.Duration { return e.timeout + 30*time.Second }
