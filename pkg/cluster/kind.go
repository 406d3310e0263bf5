package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	kindexec "sigs.k8s.io/kind/pkg/exec"
	kindlog "sigs.k8s.io/kind/pkg/log"

	"github.com/nodeprint/nodeprint/pkg/process"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// NewKind returns the kind provider: a kind cluster from
// kind-config/cluster.yaml (one node, the pinned Kubernetes version, the
// API server on loopback), with KWOK's controller and Karpenter run
// out-of-cluster as processes the harness owns, exactly as the local
// provider runs Karpenter. It needs a Docker engine. The configuration is
// rendered and checked here, so a bad kind-config/cluster.yaml is an error
// before anything starts. metrics-server is not installed (its image would
// have to be pulled), so pod usage is not measured on kind.
func NewKind(opts ...Option) (*KindCluster, error) {
	o := Options{name: DefaultName, timeout: 5 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	l, err := NewLocal(append(opts, WithTimeout(o.timeout), WithWorkRoot(kindWorkRoot(o)))...)
	if err != nil {
		return nil, err
	}
	cfg, err := KindConfig(l.tc, l.opts.name)
	if err != nil {
		return nil, &KindConfigError{Err: err}
	}
	kp := &kindPlane{l: l, config: cfg}
	l.cp = kp
	if st, err := l.readState(); o.inCluster || (err == nil && st.KarpenterInCluster) {
		kp.inCluster = true
		l.host = chartHost{k: kp}
	}
	return &KindCluster{Local: l}, nil
}

// InCluster says whether Karpenter runs in the cluster (WithKarpenterInCluster).
func (k *KindCluster) InCluster() bool { return k.cp.(*kindPlane).inCluster }

// KindCluster is the kind provider: a kind node holds the control plane,
// and the harness runs KWOK's controller and Karpenter beside it as the
// local provider does (the capabilities it shares with Local are Local's,
// through the embedding; what differs is its control plane, kindPlane).
type KindCluster struct {
	*Local
}

var (
	_ NodeContainers = (*KindCluster)(nil)
	_ NodeRoute      = (*KindCluster)(nil)
)

// kindRouteFile records, in the cluster's directory, the route its nodes
// took (start writes it).
const kindRouteFile = "kind-route"

// NodeRoute says how the cluster's nodes started, as up decided.
func (k *KindCluster) NodeRoute() (string, error) {
	b, err := os.ReadFile(filepath.Join(k.dir, kindRouteFile))
	if err != nil {
		return "", fmt.Errorf("kind cluster %q: the route its nodes took is not recorded: %w", k.opts.name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// NodeContainersPeakMemory reads each node container's memory cgroup
// high-water mark from inside it (cgroup v1 memory.max_usage_in_bytes,
// v2 memory.peak; the node has its own cgroup namespace).
func (k *KindCluster) NodeContainersPeakMemory(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "ps", "--quiet", "--filter", "label=io.x-k8s.kind.cluster="+k.opts.name).Output()
	if err != nil {
		return 0, fmt.Errorf("failed to list the nodes of kind cluster %q: %w", k.opts.name, err)
	}
	var sum int64
	for _, id := range strings.Fields(string(out)) {
		b, err := exec.CommandContext(ctx, "docker", "exec", id, "sh", "-c",
			"cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.peak").Output()
		if err != nil {
			return 0, fmt.Errorf("failed to read node container %s's peak memory: %w", id, err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("node container %s's peak memory %q: %w", id, b, err)
		}
		sum += v
	}
	if sum == 0 {
		return 0, fmt.Errorf("kind cluster %q has no running node container", k.opts.name)
	}
	return sum, nil
}

// kindWorkRoot keeps kind clusters apart from local ones of the same name.
func kindWorkRoot(o Options) string {
	if o.workRoot != "" {
		return o.workRoot
	}
	tc := o.toolchain
	if tc == nil {
		var err error
		if tc, err = toolchain.Find(); err != nil {
			return "" // NewLocal reports the same error
		}
	}
	return filepath.Join(tc.Work, "kind")
}

// KindConfigError is a kind-config/cluster.yaml that cannot be used: bad
// input, not an environment failure.
type KindConfigError struct{ Err error }

func (e *KindConfigError) Error() string { return "kind provider: " + e.Err.Error() }
func (e *KindConfigError) Unwrap() error { return e.Err }

// DockerEngine checks that a Docker engine answers (kind needs one; a
// docker client alone is not enough) and returns its version.
func DockerEngine(ctx context.Context) (string, error) {
	path, err := exec.LookPath("docker")
	if err != nil {
		return "", fmt.Errorf("the kind provider needs Docker: no docker command in PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	msg := strings.TrimSpace(string(out))
	if err != nil || msg == "" {
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		return "", fmt.Errorf("the kind provider needs a Docker engine and none answers (`docker info`: %v: %s); use the local provider, which needs none", err, msg)
	}
	return msg, nil
}

// kindPlane is a kind cluster plus KWOK's controller as a process.
type kindPlane struct {
	l      *Local
	config []byte
	// route is how the nodes start on this engine (preflight decides).
	route KindRoute
	// buildImage: the node image is nodeprint's and not in the engine.
	buildImage bool
	// inCluster: Karpenter runs in the cluster from its chart (chartHost).
	inCluster bool
}

func (k *kindPlane) kind() Kind         { return KindKind }
func (k *kindPlane) kubeconfig() string { return filepath.Join(k.l.dir, "kubeconfig.yaml") }
func (k *kindPlane) logDirs() []string  { return nil }

func (k *kindPlane) componentLog(name string) string {
	return filepath.Join(k.l.dir, "logs", name+".log")
}

func (k *kindPlane) startMessage() string {
	return fmt.Sprintf("creating kind cluster %q (%s) from %s", k.l.opts.name, KindNodeImage(k.l.tc), KindConfigFile)
}

func (k *kindPlane) provider() *kindcluster.Provider {
	return kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindlog.NoopLogger{}))
}

// preflight fails fast, before the toolchain is built or anything is
// created, where no Docker engine runs or where the engine refuses both
// privileged containers and the wrapper's flags; it decides the route the
// nodes take and renders the configuration for it.
func (k *kindPlane) preflight(ctx context.Context) error {
	version, err := DockerEngine(ctx)
	if err != nil {
		return &PhaseError{Phase: "docker", Err: err}
	}
	k.l.opts.progress(Event{Phase: "docker", Done: true, Message: "Docker engine " + version})
	if k.route, err = decideKindRoute(ctx); err != nil {
		return &PhaseError{Phase: "docker", Err: err}
	}
	k.l.opts.progress(Event{Phase: "docker", Message: "kind's route on this engine: " + k.route.String()})
	if k.config, err = routeConfig(k.config, k.route); err != nil {
		return &PhaseError{Phase: "docker", Err: err}
	}
	if k.buildImage, err = k.missingNodeImage(ctx); err != nil {
		return &PhaseError{Phase: "docker", Err: err}
	}
	return nil
}

// missingNodeImage says whether nodeprint's node image must be built; a
// node image of kind-config/cluster.yaml that the engine lacks and
// nodeprint does not build is a *NodeImageError.
func (k *kindPlane) missingNodeImage(ctx context.Context) (bool, error) {
	images, err := kindNodeImages(k.config)
	if err != nil {
		return false, err
	}
	build := false
	for _, image := range images {
		present, err := DockerImagePresent(ctx, image)
		switch {
		case err != nil:
			return false, err
		case present:
			k.l.opts.progress(Event{Phase: "docker", Message: "node image " + image + " is in the engine"})
		case image == KindNodeImage(k.l.tc):
			build = true
		default:
			return false, &NodeImageError{Image: image, Build: KindNodeImage(k.l.tc)}
		}
	}
	return build, nil
}

// build builds nodeprint's node image into the engine when preflight found
// it missing (tools/toolchain/kind-node).
func (k *kindPlane) build(ctx context.Context) error {
	if k.buildImage {
		k.l.opts.progress(Event{Phase: "toolchain", Message: "node image " + KindNodeImage(k.l.tc) + " is not in the engine: building it (make kind-node; about 8 minutes cold on 2 cores)"})
		if err := k.l.tc.Build(ctx, k.l.opts.buildLog, "kubernetes", "etcd", "kind-node"); err != nil {
			return err
		}
	}
	if !k.inCluster {
		return nil
	}
	// Each is a no-op when its stamp is current.
	k.l.opts.progress(Event{Phase: "toolchain", Message: "checking Karpenter's in-cluster image and helm (make karpenter-image helm; built when missing)"})
	return k.l.tc.Build(ctx, k.l.opts.buildLog, "karpenter-image", "helm")
}

// start creates the kind cluster. kind's Create takes no context: on
// cancellation the harness waits for it to return and lets the rollback
// delete what it made.
func (k *kindPlane) start(ctx context.Context) error {
	p := k.provider()
	names, err := p.List()
	if err != nil {
		return fmt.Errorf("failed to list kind clusters: %w", err)
	}
	if slices.Contains(names, k.l.opts.name) {
		// Not ours (our work directory did not exist): never touch it.
		return fmt.Errorf("%w: a kind cluster named %q exists and nodeprint did not create it; choose another --name", ErrAlreadyRunning, k.l.opts.name)
	}
	sched, err := kindScheduler()
	if err != nil {
		return fmt.Errorf("failed to render the scheduler's configuration: %w", err)
	}
	schedPath := filepath.Join(k.l.dir, "kube-scheduler.yaml")
	if err := os.WriteFile(schedPath, sched, 0o644); err != nil {
		return fmt.Errorf("failed to write the scheduler's configuration: %w", err)
	}
	if k.config, err = withScheduler(k.config, schedPath); err != nil {
		return err
	}
	if k.inCluster {
		if err := k.mapKarpenterMetrics(); err != nil {
			return err
		}
	}
	// Written only now: its presence is what tells stop that the kind
	// cluster of this name is nodeprint's to delete.
	if err := os.WriteFile(filepath.Join(k.l.dir, "kind-config.yaml"), k.config, 0o600); err != nil {
		return fmt.Errorf("failed to write the kind configuration: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.l.dir, kindRouteFile), []byte(k.route.String()+"\n"), 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", kindRouteFile, err)
	}
	// kind creates its network and never removes it: the marker tells stop
	// that this cluster made it, so that it is removed once unused.
	if exec.CommandContext(ctx, "docker", "network", "inspect", kindNetwork).Run() != nil {
		if err := os.WriteFile(filepath.Join(k.l.dir, kindNetworkMarker), nil, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", kindNetworkMarker, err)
		}
	}
	restore, err := k.route.useWrapper(k.l.dir)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer restore()
		done <- p.Create(k.l.opts.name, kindcluster.CreateWithRawConfig(k.config),
			kindcluster.CreateWithKubeconfigPath(k.kubeconfig()), kindcluster.CreateWithWaitForReady(2*time.Minute),
			kindcluster.CreateWithDisplayUsage(false), kindcluster.CreateWithDisplaySalutation(false),
			// Kept on failure for createFailed; the rollback deletes it.
			kindcluster.CreateWithRetain(true))
	}()
	select {
	case err := <-done:
		if err != nil {
			return k.createFailed(ctx, err)
		}
		return os.Chmod(k.kubeconfig(), 0o600)
	case <-ctx.Done():
		k.l.opts.progress(Event{Phase: "control-plane", Message: "waiting for kind to finish creating the cluster, to delete it"})
		<-done
		return ctx.Err()
	}
}

// createFailed keeps what says why kind could not create the cluster in
// the cluster's logs (which a failed start keeps): the output of kind's
// failing command and the node's journal of containerd and the kubelet.
func (k *kindPlane) createFailed(ctx context.Context, err error) error {
	logs := filepath.Join(k.l.dir, "logs")
	hint := ""
	if rerr := kindexec.RunErrorForError(err); rerr != nil && len(rerr.Output) > 0 {
		hint = filepath.Join(logs, "kind-create.log")
		_ = os.WriteFile(hint, rerr.Output, 0o600)
	}
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	node := k.l.opts.name + "-control-plane"
	if out, jerr := exec.CommandContext(jctx, "docker", "exec", node, "journalctl", "--no-pager", "-u", "containerd", "-u", "kubelet").CombinedOutput(); jerr == nil {
		_ = os.WriteFile(filepath.Join(logs, "kind-node-journal.log"), out, 0o600)
	}
	return &PhaseError{Phase: "control-plane", Err: fmt.Errorf("kind create cluster: %w", err), LogHint: hint}
}

func (k *kindPlane) beforeStages(ctx context.Context, c client.Client) error {
	// KWOK's CRDs: kwokctl installs them itself, kind does not.
	return applyCRDs(ctx, c, k.l.tc.Paths().KwokCRDs)
}

// kwokControllerSpec runs KWOK's controller out-of-cluster: it manages the
// nodes Karpenter's KWOK provider makes (labelled kwok.x-k8s.io/node=fake)
// and never kind's own node, reads stages from the API server, and serves
// its health endpoint on loopback.
func kwokControllerSpec(tc *toolchain.Toolchain, dir, kubeconfig string, port int) process.Spec {
	return process.Spec{
		Name: "kwok-controller", Path: tc.Paths().Kwok, Dir: dir,
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--manage-all-nodes=false",
			"--manage-nodes-with-label-selector=kwok.x-k8s.io/node=fake",
			"--server-address=127.0.0.1:" + strconv.Itoa(port),
			"--node-lease-duration-seconds=200",
			"--enable-crds=" + strings.Join(dynamicKinds, ","),
		},
		LogFile: filepath.Join(dir, "logs", "kwok-controller.log"),
		PIDFile: filepath.Join(dir, "kwok-controller.pid"),
	}
}

func (k *kindPlane) kwokSpec(st state) process.Spec {
	return kwokControllerSpec(k.l.tc, k.l.dir, k.kubeconfig(), st.KwokPort)
}

func (k *kindPlane) afterManifests(ctx context.Context) error {
	return k.l.phase(ctx, "kwok", "starting KWOK's controller out-of-cluster", func(ctx context.Context) error {
		st, err := k.l.readState()
		if err != nil {
			return err
		}
		if st.KwokPort, err = freePort(); err != nil {
			return err
		}
		if err := k.l.writeState(st); err != nil {
			return err
		}
		return k.runKwok(ctx, st)
	})
}

func (k *kindPlane) runKwok(ctx context.Context, st state) error {
	spec := k.kwokSpec(st)
	h, err := process.Start(spec)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", st.KwokPort)
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if !h.Alive() {
			return false, fmt.Errorf("kwok-controller exited during start-up: %w", process.ErrExited)
		}
		return httpOK(ctx, url) == nil, nil
	})
	if err != nil {
		return &PhaseError{Phase: "kwok", Err: err, LogHint: spec.LogFile}
	}
	return nil
}

func (k *kindPlane) restart(ctx context.Context, names []string) error {
	if !slices.Contains(names, "kwok-controller") {
		return fmt.Errorf("cannot restart %s: kind runs it", strings.Join(names, ", "))
	}
	st, err := k.l.readState()
	if err != nil {
		return err
	}
	return k.runKwok(ctx, st)
}

func (k *kindPlane) components(ctx context.Context, cl *statusClients, cerr error) []ComponentStatus {
	apiErr := cl.apiServerReady(ctx, cerr)
	out := []ComponentStatus{probed("kube-apiserver", apiErr, "kind control plane /readyz ok", 0, "")}
	st, err := k.l.readState()
	if err != nil {
		return append(out, probed("kwok-controller", err, "", 0, ""))
	}
	spec := k.kwokSpec(st)
	h, err := process.Adopt(spec)
	if err != nil {
		return append(out, probed("kwok-controller", fmt.Errorf("not running: %w (log: %s)", err, spec.LogFile), "", 0, spec.LogFile))
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", st.KwokPort)
	return append(out, probed("kwok-controller", httpOK(ctx, url), url+" ok", h.PID, spec.LogFile))
}

// stop stops KWOK's controller and deletes the kind cluster; Down calls it
// only for a cluster whose work directory exists, that is one nodeprint
// created.
func (k *kindPlane) stop(ctx context.Context) error {
	var errs []error
	if st, err := k.l.readState(); err == nil && st.KwokPort != 0 {
		if h, err := process.Adopt(k.kwokSpec(st)); err == nil {
			k.l.opts.progress(Event{Phase: "down", Message: "stopping KWOK's controller"})
			if err := h.Stop(ctx, 10*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(k.l.dir, "kind-config.yaml")); err == nil {
		k.l.opts.progress(Event{Phase: "down", Message: fmt.Sprintf("deleting kind cluster %q", k.l.opts.name)})
		if _, derr := DockerEngine(ctx); derr != nil {
			// Nothing was created without an engine; nothing can be deleted.
			return errors.Join(errs...)
		}
		if err := k.provider().Delete(k.l.opts.name, k.kubeconfig()); err != nil {
			errs = append(errs, fmt.Errorf("kind delete cluster %s: %w", k.l.opts.name, err))
		}
		if err := k.removeNetwork(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kindNetwork is the Docker network kind puts its nodes on, and
// kindNetworkMarker the file that says this cluster created it.
const (
	kindNetwork       = "kind"
	kindNetworkMarker = "kind-network-created"
)

// removeNetwork removes kind's network when this cluster created it and
// no container uses it any more (another kind cluster started since may).
func (k *kindPlane) removeNetwork(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(k.l.dir, kindNetworkMarker)); err != nil {
		return nil
	}
	out, err := exec.CommandContext(ctx, "docker", "network", "inspect", "--format", "{{len .Containers}}", kindNetwork).Output()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		return nil // gone already, or in use by a cluster that is not ours
	}
	k.l.opts.progress(Event{Phase: "down", Message: "removing the Docker network " + kindNetwork + " this cluster created"})
	if out, err := exec.CommandContext(ctx, "docker", "network", "rm", kindNetwork).CombinedOutput(); err != nil {
		return fmt.Errorf("docker network rm %s: %w: %s", kindNetwork, err, firstLine(string(out)))
	}
	return nil
}
