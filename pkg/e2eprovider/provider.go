// Package e2eprovider is nodeprint's local cluster as a cluster provider
// of sigs.k8s.io/e2e-framework: a team whose suites use e2e-framework gets
// a local control plane with Karpenter (KWOK provider) and KWOK from
//
//	testenv.Setup(envfuncs.CreateClusterWithOpts(e2eprovider.New(), "team-e2e"))
//	testenv.Finish(envfuncs.DestroyCluster("team-e2e"))
//
// The cluster is the one pkg/harness builds for the CLI and nodeprint's
// own suites (harness.New, torn down with Harness.Close); this package
// builds none itself.
//
// Karpenter's API packages register NodePool, NodeClaim and KWOKNodeClass
// in client-go's scheme, which e2e-framework's klient uses, so
// cfg.Client().Resources() reads and writes them without further setup.
//
// The provider is not an E2EClusterProviderWithImageLoader: KWOK's nodes
// run no containers, so there is no image to load and a LoadImage that
// returned nil would pretend. Nor is it an E2EClusterProviderWithLifeCycle:
// nodes are Karpenter's to launch and remove, which is what a suite on this
// cluster tests.
package e2eprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/types"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// DefaultWaitTimeout bounds WaitForControlPlane unless WithWaitTimeout
// says otherwise. Create already waits until every component is healthy,
// so this only has to outlast a component that is still settling.
const DefaultWaitTimeout = time.Minute

var _ types.E2EClusterProvider = (*Provider)(nil)

// Provider is a local cluster with Karpenter and KWOK, started by Create
// and brought down by Destroy. Its With… methods and options take effect
// at Create.
type Provider struct {
	name        string
	version     string
	root        string
	out         io.Writer
	waitTimeout time.Duration
	harnessOpts []harness.Option

	h  *harness.Harness
	rc *rest.Config
}

// New returns a provider with nothing started. envfuncs.CreateClusterWithOpts
// calls SetDefaults, WithName and WithOpts on it, then Create.
func New() *Provider { return &Provider{} }

// WithHarnessOptions passes options to harness.New, after the provider's
// own (the cluster's name, the toolchain, progress), so they win: a
// catalog, the runner's options (default: none). On a provider other than
// this package's it does nothing, as every e2e-framework ClusterOpts.
func WithHarnessOptions(opts ...harness.Option) types.ClusterOpts {
	return func(c types.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.harnessOpts = append(p.harnessOpts, opts...)
		}
	}
}

// WithOutput receives the cluster's progress and, on a machine without
// the toolchain, its build's output (default os.Stderr, which go test shows
// for a failing or -v run).
func WithOutput(w io.Writer) types.ClusterOpts {
	return func(c types.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.out = w
		}
	}
}

// WithWaitTimeout bounds WaitForControlPlane (default DefaultWaitTimeout).
func WithWaitTimeout(d time.Duration) types.ClusterOpts {
	return func(c types.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.waitTimeout = d
		}
	}
}

// SetDefaults fills in what no With… call set: the name np-e2e-<pid>,
// output to os.Stderr, the wait timeout.
func (p *Provider) SetDefaults() types.E2EClusterProvider {
	if p.name == "" {
		p.name = fmt.Sprintf("np-e2e-%d", os.Getpid())
	}
	if p.out == nil {
		p.out = os.Stderr
	}
	if p.waitTimeout == 0 {
		p.waitTimeout = DefaultWaitTimeout
	}
	return p
}

// WithName names the cluster (1 to 40 lowercase letters, digits and '-').
// A cluster of that name already running makes Create fail.
func (p *Provider) WithName(name string) types.E2EClusterProvider {
	p.name = name
	return p
}

// WithVersion asks for a Kubernetes version. The local cluster runs the
// toolchain's pinned version only (tools/toolchain/versions.mk, or
// K8S_VERSION when the toolchain was built with it), so Create fails for
// any other instead of running a version nobody asked for.
func (p *Provider) WithVersion(version string) types.E2EClusterProvider {
	p.version = version
	return p
}

// WithPath is the nodeprint checkout whose bin/ holds the toolchain
// (default: $NODEPRINT_ROOT, else the nodeprint module above the working
// directory). A team's repository outside the checkout sets one of the two.
func (p *Provider) WithPath(path string) types.E2EClusterProvider {
	p.root = path
	return p
}

// WithOpts applies the options (WithHarnessOptions, WithOutput,
// WithWaitTimeout).
func (p *Provider) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// Create starts the cluster through harness.New and returns its admin
// kubeconfig. It takes no arguments: the local cluster has no command line
// to pass them to, and dropping them would hide a mistake.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	if len(args) > 0 {
		return "", fmt.Errorf("failed to create cluster %q: the nodeprint provider takes no arguments (got %q); configure it with WithOpts(e2eprovider.WithHarnessOptions(...))", p.name, args)
	}
	if p.h != nil {
		return "", fmt.Errorf("failed to create cluster %q: this provider already runs cluster %q; Destroy it first", p.name, p.h.Name)
	}
	p.SetDefaults()
	var topts []toolchain.Option
	if p.root != "" {
		topts = append(topts, toolchain.WithRoot(p.root))
	}
	tc, err := toolchain.Find(topts...)
	if err != nil {
		return "", fmt.Errorf("failed to find the nodeprint toolchain for cluster %q: %w", p.name, err)
	}
	if p.version != "" && strings.TrimPrefix(p.version, "v") != strings.TrimPrefix(tc.Versions.Kubernetes, "v") {
		return "", fmt.Errorf("failed to create cluster %q: Kubernetes %s was asked for, but the toolchain in %s runs %s only (build another with K8S_VERSION=… make tools)",
			p.name, p.version, tc.Bin, tc.Versions.Kubernetes)
	}
	out := p.out
	opts := []harness.Option{harness.WithName(p.name), harness.WithToolchain(tc), harness.WithBuildOutput(out),
		harness.WithProgress(func(msg string) { fmt.Fprintln(out, msg) }),
		harness.WithClusterEvents(func(e cluster.Event) { fmt.Fprintf(out, "cluster %s: %s\n", p.name, e) })}
	h, err := harness.New(ctx, append(opts, p.harnessOpts...)...)
	if err != nil {
		return "", fmt.Errorf("failed to create cluster %q: %w", p.name, err)
	}
	rc, err := kube.Config(h.Kubeconfig())
	if err != nil {
		return "", errors.Join(fmt.Errorf("failed to read the kubeconfig of cluster %q: %w", p.name, err), h.Close(context.WithoutCancel(ctx)))
	}
	p.h, p.rc = h, rc
	return h.Kubeconfig(), nil
}

// CreateWithConfig is Create for an empty configFile. The local cluster
// reads no configuration file (a kind or kwokctl one would not apply), so
// any other is refused.
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if configFile != "" {
		return "", fmt.Errorf("failed to create cluster %q with %s: the nodeprint provider reads no configuration file; configure it with WithOpts(e2eprovider.WithHarnessOptions(...))", p.name, configFile)
	}
	return p.Create(ctx)
}

// GetKubeconfig is the path of the cluster's admin kubeconfig, or "" before
// Create (the interface leaves no room for an error).
func (p *Provider) GetKubeconfig() string {
	if p.h == nil {
		return ""
	}
	return p.h.Kubeconfig()
}

// GenerateKubeconfig returns the path of the admin kubeconfig the harness
// wrote at Create; there is no other to generate, so arguments are refused.
func (p *Provider) GenerateKubeconfig(args ...string) (string, error) {
	if p.h == nil {
		return "", fmt.Errorf("failed to generate a kubeconfig for cluster %q: it is not created", p.name)
	}
	if len(args) > 0 {
		return "", fmt.Errorf("failed to generate a kubeconfig for cluster %q: the nodeprint provider writes one admin kubeconfig and takes no arguments (got %q)", p.name, args)
	}
	return p.h.Kubeconfig(), nil
}

// GetKubectlContext is the current context of the cluster's kubeconfig, or
// "" before Create or when the kubeconfig cannot be read (the interface
// leaves no room for an error; GenerateKubeconfig and kubectl then say why).
func (p *Provider) GetKubectlContext() string {
	if p.h == nil {
		return ""
	}
	cfg, err := clientcmd.LoadFromFile(p.h.Kubeconfig())
	if err != nil {
		return ""
	}
	return cfg.CurrentContext
}

// ExportLogs copies Karpenter's and the control plane's logs into dest.
func (p *Provider) ExportLogs(_ context.Context, dest string) error {
	if p.h == nil {
		return fmt.Errorf("failed to export the logs of cluster %q: it is not created", p.name)
	}
	ex, ok := p.h.Provider.(cluster.LogExporter)
	if !ok {
		return fmt.Errorf("failed to export the logs of cluster %q: its provider (%T) keeps no logs nodeprint can copy", p.name, p.h.Provider)
	}
	if _, err := ex.ExportLogs(dest); err != nil {
		return err
	}
	return nil
}

// Destroy brings the cluster down and removes its files (Harness.Close).
// Destroying a cluster that was never created is an error: a suite whose
// Setup failed should read why, not a clean teardown.
func (p *Provider) Destroy(ctx context.Context) error {
	if p.h == nil {
		return fmt.Errorf("failed to destroy cluster %q: it is not created", p.name)
	}
	h := p.h
	p.h, p.rc = nil, nil
	if err := h.Close(ctx); err != nil {
		return fmt.Errorf("failed to destroy cluster %q: %w", p.name, err)
	}
	return nil
}

// WaitForControlPlane waits until the harness finds every component
// healthy and c, the suite's own client, reads NodePools and
// KWOKNodeClasses: the API server answers it and Karpenter's CRDs are
// served. It is bounded by WithWaitTimeout and names what it last saw.
func (p *Provider) WaitForControlPlane(ctx context.Context, c klient.Client) error {
	if p.h == nil {
		return fmt.Errorf("failed to wait for the control plane of cluster %q: it is not created", p.name)
	}
	if c == nil {
		return fmt.Errorf("failed to wait for the control plane of cluster %q: no client", p.name)
	}
	wctx, cancel := context.WithTimeout(ctx, p.waitTimeout)
	defer cancel()
	for {
		last := p.controlPlaneReady(wctx, c)
		if last == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("failed to wait %s for the control plane of cluster %q: %w", p.waitTimeout, p.name, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (p *Provider) controlPlaneReady(ctx context.Context, c klient.Client) error {
	st, err := p.h.Provider.Status(ctx)
	if err != nil {
		return fmt.Errorf("failed to read the cluster's status: %w", err)
	}
	if !st.Healthy() {
		return errors.New(st.Problem())
	}
	if err := c.Resources().List(ctx, &karpv1.NodePoolList{}); err != nil {
		return fmt.Errorf("failed to list NodePools with the suite's client: %w", err)
	}
	if err := c.Resources().List(ctx, &kwokv1alpha1.KWOKNodeClassList{}); err != nil {
		return fmt.Errorf("failed to list KWOKNodeClasses with the suite's client: %w", err)
	}
	return nil
}

// KubernetesRestConfig is the cluster's admin rest config (client-side
// rate limits raised, as nodeprint's own clients), or nil before Create.
func (p *Provider) KubernetesRestConfig() *rest.Config { return p.rc }

// Harness is the harness Create built (nil before Create and after
// Destroy), for a suite that also runs nodeprint scenarios on the cluster
// (Harness.Runner).
func (p *Provider) Harness() *harness.Harness { return p.h }
