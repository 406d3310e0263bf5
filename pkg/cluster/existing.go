package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

// RequiredCRDs are the resources every scenario creates or watches: a
// cluster without them does not run Karpenter's KWOK provider.
var RequiredCRDs = []string{
	"nodepools.karpenter.sh",
	"nodeclaims.karpenter.sh",
	"kwoknodeclasses.karpenter.kwok.sh",
}

// Existing is a cluster nodeprint did not create and does not own: a
// kubeconfig to a cluster that already runs Karpenter with its KWOK
// provider. Up only checks it, Down stops nothing, and scenarios that need
// to change the infrastructure (L1 faults, another instance catalog) are
// refused before anything is applied (see harness.CheckProvider).
type Existing struct {
	opts       Options
	kubeconfig string
	// context is the kubeconfig's current context, the cluster's name in
	// status and reports.
	context string
}

// NewExisting returns the existing-cluster provider for the kubeconfig set
// with WithKubeconfig (default: $KUBECONFIG, else ~/.kube/config). A
// kubeconfig that does not exist or does not parse is an error here, before
// anything is contacted.
func NewExisting(opts ...Option) (*Existing, error) {
	o := Options{name: DefaultName, timeout: 30 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.progress == nil {
		o.progress = func(Event) {}
	}
	path := o.kubeconfig
	if path == "" {
		path = clientcmd.NewDefaultClientConfigLoadingRules().GetDefaultFilename()
	}
	if path == "" {
		return nil, &KubeconfigError{Err: errors.New("no kubeconfig given: pass --kubeconfig PATH or set KUBECONFIG")}
	}
	if _, err := os.Stat(path); err != nil {
		return nil, &KubeconfigError{Path: path, Err: err}
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, &KubeconfigError{Path: path, Err: err}
	}
	if _, ok := cfg.Contexts[cfg.CurrentContext]; !ok {
		return nil, &KubeconfigError{Path: path, Err: fmt.Errorf("current-context %q is not one of its contexts", cfg.CurrentContext)}
	}
	return &Existing{opts: o, kubeconfig: path, context: cfg.CurrentContext}, nil
}

// KubeconfigError is a kubeconfig that cannot be used: bad input, not an
// environment failure.
type KubeconfigError struct {
	Path string
	Err  error
}

func (e *KubeconfigError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("kubeconfig %s: %v", e.Path, e.Err)
}

func (e *KubeconfigError) Unwrap() error { return e.Err }

// Name is the kubeconfig's current context.
func (e *Existing) Name() string { return e.context }

// Kubeconfig is the kubeconfig the provider was given.
func (e *Existing) Kubeconfig() string { return e.kubeconfig }

// Up checks that the cluster answers and serves Karpenter's and the KWOK
// provider's CRDs. It starts and creates nothing.
func (e *Existing) Up(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.timeout)
	defer cancel()
	start := time.Now()
	e.opts.progress(Event{Phase: "connect", Message: "checking the existing cluster in " + e.kubeconfig})
	st, err := e.Status(ctx)
	if err != nil {
		return &PhaseError{Phase: "connect", Err: err}
	}
	if !st.Healthy() {
		return &PhaseError{Phase: "connect", Err: errors.New(unhealthy(st))}
	}
	e.opts.progress(Event{Phase: "connect", Done: true, Elapsed: time.Since(start)})
	return nil
}

// Down stops and deletes nothing: nodeprint did not create the cluster.
// Each run deletes the objects it created itself.
func (e *Existing) Down(context.Context) error {
	e.opts.progress(Event{Phase: "down", Done: true, Message: "existing cluster: nothing to stop (nodeprint did not create it)"})
	return nil
}

// Status probes the API server and the CRDs, and reads Karpenter's version
// from its Deployment where it runs in the cluster.
func (e *Existing) Status(ctx context.Context) (Status, error) {
	out := Status{Name: e.context, Provider: string(KindExisting), Kubeconfig: e.kubeconfig, KarpenterVersion: "unknown"}
	cfg, err := kube.Config(e.kubeconfig)
	if err != nil {
		return out, err
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return out, fmt.Errorf("failed to create a client for %s: %w", e.kubeconfig, err)
	}
	apiErr := apiServerReady(ctx, cs, cfg.Host)
	out.Components = append(out.Components, component("kube-apiserver", apiErr, cfg.Host+"/readyz ok"))
	if apiErr != nil {
		return out, nil
	}
	out.Exists = true
	if v, err := cs.Discovery().ServerVersion(); err == nil {
		out.KubernetesVersion = v.GitVersion
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme})
	if err != nil {
		return out, fmt.Errorf("failed to create a client for %s: %w", e.kubeconfig, err)
	}
	var missing []string
	for _, name := range RequiredCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			missing = append(missing, name)
		}
	}
	var crdErr error
	if len(missing) > 0 {
		crdErr = fmt.Errorf("missing CRD(s) %s: the cluster must run Karpenter with its KWOK provider (sigs.k8s.io/karpenter/kwok)", strings.Join(missing, ", "))
	}
	out.Components = append(out.Components, component("karpenter-crds", crdErr, strings.Join(RequiredCRDs, ", ")+" served"))
	out.KarpenterVersion = karpenterDeploymentVersion(ctx, c)
	return out, nil
}

func component(name string, err error, ok string) ComponentStatus {
	cs := ComponentStatus{Name: name, Healthy: err == nil, Detail: ok}
	if err != nil {
		cs.Detail = err.Error()
	}
	return cs
}

// karpenterDeploymentVersion is the image tag of an in-cluster Karpenter
// Deployment (Helm labels it app.kubernetes.io/name=karpenter), or
// "unknown" when Karpenter runs elsewhere.
func karpenterDeploymentVersion(ctx context.Context, c client.Client) string {
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/name": "karpenter"}); err != nil {
		return "unknown"
	}
	for _, d := range list.Items {
		for _, ctr := range d.Spec.Template.Spec.Containers {
			img := strings.SplitN(ctr.Image, "@", 2)[0]
			if i := strings.LastIndex(img, ":"); i > 0 && !strings.Contains(img[i:], "/") {
				return img[i+1:]
			}
		}
	}
	return "unknown"
}

// UseKarpenter accepts only the catalog the cluster's Karpenter runs with
// (WithCatalog), with the settings it runs with: nodeprint cannot restart
// a Karpenter it does not own (harness.CheckProvider refuses such
// scenarios first).
func (e *Existing) UseKarpenter(_ context.Context, path string, settings map[string]string) error {
	if len(settings) > 0 {
		return fmt.Errorf("the cluster's Karpenter cannot be restarted with the scenario's settings")
	}
	if !SameFile(path, e.opts.catalog) {
		return fmt.Errorf("the cluster's Karpenter runs with catalog %s and nodeprint cannot restart it with %s", e.opts.catalog, path)
	}
	return nil
}

// Catalog is the catalog the cluster's Karpenter runs with (WithCatalog).
func (e *Existing) Catalog() string { return e.opts.catalog }

// SameFile is whether a and b name one file: a catalog given on the
// command line is relative to the working directory or reached through a
// symbolic link as often as not, while a scenario's is under the fixtures
// directory. Paths that do not exist (the generic catalog before the
// toolchain is built) compare as cleaned absolute paths.
func SameFile(a, b string) bool {
	if ai, err := os.Stat(a); err == nil {
		if bi, err := os.Stat(b); err == nil {
			return os.SameFile(ai, bi)
		}
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(aa) == filepath.Clean(bb)
}
