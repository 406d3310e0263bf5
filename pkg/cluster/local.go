package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"k8s.io/client-go/tools/clientcmd"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nodeprint/nodeprint/pkg/process"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Local is the default provider: kwokctl's binary runtime plus Karpenter as
// a process, all from bin/.
type Local struct {
	opts Options
	tc   *toolchain.Toolchain
	// dir holds everything of this cluster: state, logs, kwokctl's work dir.
	dir string

	mu     sync.Mutex
	cached *statusClients
}

// state is what Up records for later invocations (Status, Down).
type state struct {
	Name                 string    `json:"name"`
	CreatedAt            time.Time `json:"createdAt"`
	KubernetesVersion    string    `json:"kubernetesVersion"`
	KarpenterVersion     string    `json:"karpenterVersion"`
	KarpenterBinary      string    `json:"karpenterBinary"`
	KarpenterHealthPort  int       `json:"karpenterHealthPort"`
	KarpenterMetricsPort int       `json:"karpenterMetricsPort"`
	// Catalog is the instance-type catalog Karpenter runs with (empty: the
	// KWOK provider's generic catalog).
	Catalog string `json:"catalog,omitempty"`
	// APIServerVia, when set, is the URL Karpenter reaches the API server
	// through instead of the API server itself (the apiserver-degraded
	// fault's proxy). `nodeprint cluster restart karpenter` clears it.
	APIServerVia string `json:"apiServerVia,omitempty"`
}

// NewLocal returns the local provider. Nothing is started yet.
func NewLocal(opts ...Option) (*Local, error) {
	o := Options{name: DefaultName, timeout: 3 * time.Minute}
	for _, opt := range opts {
		opt(&o)
	}
	if err := ValidateName(o.name); err != nil {
		return nil, err
	}
	tc := o.toolchain
	if tc == nil {
		var err error
		if tc, err = toolchain.Find(); err != nil {
			return nil, err
		}
	}
	if o.workRoot == "" {
		o.workRoot = filepath.Join(tc.Root, ".work", "clusters")
	}
	if o.progress == nil {
		o.progress = func(Event) {}
	}
	return &Local{opts: o, tc: tc, dir: filepath.Join(o.workRoot, o.name)}, nil
}

// Name is the cluster's name.
func (l *Local) Name() string { return l.opts.name }

func (l *Local) kwokDir() string    { return filepath.Join(l.dir, "kwok") }
func (l *Local) clusterDir() string { return filepath.Join(l.kwokDir(), "clusters", l.opts.name) }
func (l *Local) statePath() string  { return filepath.Join(l.dir, "state.json") }

// Kubeconfig is the admin kubeconfig kwokctl wrote for the cluster.
func (l *Local) Kubeconfig() string { return filepath.Join(l.clusterDir(), "kubeconfig.yaml") }

// KarpenterLog is where Karpenter's output goes.
func (l *Local) KarpenterLog() string { return filepath.Join(l.dir, "logs", "karpenter.log") }

// viaKubeconfig is Karpenter's kubeconfig while its traffic goes through a proxy.
func (l *Local) viaKubeconfig() string { return filepath.Join(l.dir, "karpenter-via-kubeconfig.yaml") }

func (l *Local) karpenterSpec(st state) process.Spec {
	kubeconfig := l.Kubeconfig()
	if st.APIServerVia != "" {
		kubeconfig = l.viaKubeconfig()
	}
	return process.Spec{
		Name: "karpenter", Path: st.KarpenterBinary, Dir: l.dir,
		LogFile: l.KarpenterLog(), PIDFile: filepath.Join(l.dir, "karpenter.pid"),
		Env: append(os.Environ(),
			"KUBECONFIG="+kubeconfig,
			"SYSTEM_NAMESPACE="+KarpenterNamespace,
			"DISABLE_LEADER_ELECTION=true",
			"METRICS_PORT="+strconv.Itoa(st.KarpenterMetricsPort),
			"HEALTH_PROBE_PORT="+strconv.Itoa(st.KarpenterHealthPort),
			"INSTANCE_TYPES_FILE_PATH="+l.catalogPath(st),
		),
	}
}

// KarpenterNamespace is Karpenter's system namespace.
const KarpenterNamespace = "karpenter"

func (l *Local) readState() (state, error) {
	b, err := os.ReadFile(l.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return state{}, &NotFoundError{Name: l.opts.name, WorkDir: l.dir}
	}
	if err != nil {
		return state{}, fmt.Errorf("failed to read cluster state: %w", err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, fmt.Errorf("failed to read cluster state %s: %w (remove it with `nodeprint cluster down --name %s`)", l.statePath(), err, l.opts.name)
	}
	return st, nil
}

func (l *Local) writeState(st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(l.statePath(), b, 0o600)
}

// phase runs f as a named phase with progress events; a failure becomes a *PhaseError.
func (l *Local) phase(ctx context.Context, name, msg string, f func(ctx context.Context) error) error {
	start := time.Now()
	l.opts.progress(Event{Phase: name, Message: msg})
	if err := f(ctx); err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", ctx.Err(), err)
		}
		var pe *PhaseError
		if errors.As(err, &pe) {
			return err
		}
		return &PhaseError{Phase: name, Err: err}
	}
	l.opts.progress(Event{Phase: name, Done: true, Elapsed: time.Since(start), Message: msg})
	return nil
}

// Up starts the cluster. On failure or cancellation it rolls back: nothing
// it started is left running and its directory is removed.
func (l *Local) Up(ctx context.Context) (err error) {
	if _, statErr := os.Stat(l.dir); statErr == nil {
		if st, err := l.Status(ctx); err == nil && st.Healthy() {
			return fmt.Errorf("%w: %q is up (kubeconfig %s)", ErrAlreadyRunning, l.opts.name, l.Kubeconfig())
		}
		return fmt.Errorf("%w: %q has a work directory %s but is not healthy: run `nodeprint cluster down --name %s` first",
			ErrAlreadyRunning, l.opts.name, l.dir, l.opts.name)
	}
	if err := l.phase(ctx, "toolchain", "checking the binaries in "+l.tc.Bin, func(ctx context.Context) error {
		return l.tc.Ensure(ctx, l.opts.buildLog)
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.timeout)
	defer cancel()
	// Held until every component runs: see startLock.
	// The lock is machine-wide (in the temporary directory), not per
	// checkout: ports are a machine's, and two checkouts start clusters too.
	lock, err := acquireStartLock(ctx, os.TempDir(), func(msg string) {
		l.opts.progress(Event{Phase: "control-plane", Message: msg})
	})
	if err != nil {
		return &PhaseError{Phase: "control-plane", Err: err}
	}
	defer lock.release()
	if err := os.MkdirAll(filepath.Join(l.dir, "logs"), 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", l.dir, err)
	}
	defer func() {
		if err == nil {
			return
		}
		// Roll back with a fresh context: the caller's may be what failed.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer rcancel()
		l.opts.progress(Event{Phase: "rollback", Message: "stopping what was started"})
		// An interrupted start is not a failure worth its logs.
		if !errors.Is(err, context.Canceled) {
			if kept, lerr := l.keepLogs(); lerr == nil && kept != "" {
				err = fmt.Errorf("%w (the logs of every component are kept in %s)", err, kept)
			}
		}
		if derr := l.Down(rctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", derr))
		}
	}()

	st := state{Name: l.opts.name, CreatedAt: time.Now().UTC(), KubernetesVersion: l.tc.Versions.Kubernetes,
		KarpenterVersion: l.tc.Versions.Karpenter, KarpenterBinary: l.tc.Paths().Karpenter}
	if err := l.writeState(st); err != nil {
		return err
	}

	if err := l.phase(ctx, "control-plane", "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller, metrics-server", l.startControlPlane); err != nil {
		return err
	}
	if err := l.phase(ctx, "crds", "applying Karpenter's CRDs from the pinned module and KWOK's stages", l.applyManifests); err != nil {
		return err
	}
	if err := l.phase(ctx, "karpenter", "starting Karpenter "+st.KarpenterVersion+" (KWOK provider)", func(ctx context.Context) error {
		var err error
		st, err = l.startKarpenter(ctx, st)
		return err
	}); err != nil {
		return err
	}
	return l.phase(ctx, "ready", "checking every component end to end", func(ctx context.Context) error {
		return l.waitHealthy(ctx)
	})
}

// startControlPlane runs `kwokctl create cluster` in a process group of its
// own: a Ctrl-C in the terminal reaches only the harness, which cancels ctx
// and then rolls back with `kwokctl delete cluster`.
func (l *Local) startControlPlane(ctx context.Context) error {
	cfg := filepath.Join(l.dir, "kwokctl.yaml")
	if err := writeKwokctlConfig(cfg, l.tc, filepath.Join(l.dir, "cache")); err != nil {
		return err
	}
	logPath := filepath.Join(l.dir, "logs", "kwokctl.log")
	err := l.kwokctl(ctx, logPath, "create", "cluster", "--config", cfg,
		"--kubeconfig", filepath.Join(l.dir, "kubeconfig.merged"), "--wait", "2m")
	if err != nil {
		return &PhaseError{Phase: "control-plane", Err: err, LogHint: logPath}
	}
	return nil
}

func (l *Local) kwokctl(ctx context.Context, logPath string, args ...string) error {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", logPath, err)
	}
	defer logf.Close()
	full := append([]string{"--name", l.opts.name}, args...)
	cmd := exec.CommandContext(ctx, l.tc.Paths().Kwokctl, full...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+l.kwokDir())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %v: %w", args[:2], err)
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("failed to find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// keepLogs copies the logs of a cluster that failed to start out of its work
// directory (which the rollback removes) into <work root>/../failed/, so
// the reason stays readable. It returns where they went.
func (l *Local) keepLogs() (string, error) {
	dst := filepath.Join(filepath.Dir(l.opts.workRoot), "failed", l.opts.name+"-"+time.Now().UTC().Format("20060102T150405Z"))
	n := 0
	for _, src := range []string{filepath.Join(l.dir, "logs"), filepath.Join(l.clusterDir(), "logs")} {
		entries, err := os.ReadDir(src)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				continue
			}
			if err := os.MkdirAll(dst, 0o700); err != nil {
				return "", err
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
				return "", err
			}
			n++
		}
	}
	if n == 0 {
		return "", nil
	}
	return dst, nil
}

func (l *Local) catalogPath(st state) string {
	if st.Catalog != "" {
		return st.Catalog
	}
	return l.tc.Paths().InstanceTypes
}

// UseCatalog makes Karpenter run with the instance-type catalog at path
// (empty: the KWOK provider's generic catalog), restarting it when it runs
// with another one. Karpenter reads its catalog once, at start.
func (l *Local) UseCatalog(ctx context.Context, path string) error {
	st, err := l.readState()
	if err != nil {
		return err
	}
	if path == l.tc.Paths().InstanceTypes {
		path = ""
	}
	if st.Catalog == path {
		return nil
	}
	st.Catalog = path
	if err := l.writeState(st); err != nil {
		return err
	}
	return l.restartKarpenter(ctx, st.APIServerVia)
}

// Catalog is the instance catalog Karpenter runs with now: the one a
// scenario switched to, else the KWOK provider's generic catalog.
func (l *Local) Catalog() string {
	if st, err := l.readState(); err == nil && st.Catalog != "" {
		return st.Catalog
	}
	return l.tc.Paths().InstanceTypes
}

// APIServer is the API server's URL from the cluster's kubeconfig.
func (l *Local) APIServer() string {
	cfg, err := clientcmd.LoadFromFile(l.Kubeconfig())
	if err != nil {
		return ""
	}
	for _, c := range cfg.Clusters {
		return c.Server
	}
	return ""
}

// KarpenterMetrics is the URL of Karpenter's Prometheus metrics.
func (l *Local) KarpenterMetrics() string {
	st, err := l.readState()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", st.KarpenterMetricsPort)
}

// RestartKarpenterVia restarts Karpenter with its API-server traffic sent
// to server (a URL of a proxy in front of the API server); an empty server
// restores the direct connection.
func (l *Local) RestartKarpenterVia(ctx context.Context, server string) error {
	if server != "" {
		cfg, err := clientcmd.LoadFromFile(l.Kubeconfig())
		if err != nil {
			return fmt.Errorf("failed to read %s: %w", l.Kubeconfig(), err)
		}
		for _, c := range cfg.Clusters {
			c.Server = server
		}
		if err := clientcmd.WriteToFile(*cfg, l.viaKubeconfig()); err != nil {
			return fmt.Errorf("failed to write %s: %w", l.viaKubeconfig(), err)
		}
	}
	return l.restartKarpenter(ctx, server)
}
