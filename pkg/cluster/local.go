package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeprint/nodeprint/pkg/process"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Local runs Karpenter (and, with kind, the KWOK controller) as processes
// the harness owns, next to a control plane: kwokctl's binary runtime from
// bin/ (NewLocal, the default provider) or a kind cluster (NewKind).
type Local struct {
	opts Options
	tc   *toolchain.Toolchain
	// dir holds everything of this cluster: state, logs, the control
	// plane's work dir.
	dir string
	cp  controlPlane
	// host runs Karpenter: a process of this machine unless the kind
	// provider runs it in the cluster.
	host karpenterHost

	mu     sync.Mutex
	cached *statusClients
	// karpenterMu serialises what restarts Karpenter (a catalog switch, a
	// fault's proxy): parallel runs call UseKarpenter at once, and each must
	// see the others' switch, not restart Karpenter again.
	karpenterMu sync.Mutex

	// planMu guards what the provider stops on purpose, for Planned.
	planMu     sync.Mutex
	stopped    map[int]bool
	restarting map[string]int
}

// Planned reports whether the provider itself stopped component's process
// pid, or (pid 0) is restarting component now: a supervisor must not take
// a catalog switch or a fault's restart for an environment failure.
func (l *Local) Planned(component string, pid int) bool {
	l.planMu.Lock()
	defer l.planMu.Unlock()
	if pid == 0 {
		return l.restarting[component] > 0
	}
	return l.stopped[pid]
}

// plan marks component as being restarted until the returned func is
// called, and pid (0: none) as stopped on purpose for good.
func (l *Local) plan(component string, pid int) func() {
	l.planMu.Lock()
	defer l.planMu.Unlock()
	if l.stopped == nil {
		l.stopped, l.restarting = map[int]bool{}, map[string]int{}
	}
	if pid > 0 {
		l.stopped[pid] = true
	}
	l.restarting[component]++
	return func() {
		l.planMu.Lock()
		defer l.planMu.Unlock()
		l.restarting[component]--
	}
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
	// Settings are Karpenter's non-default settings, as environment
	// variables (empty: its defaults).
	Settings map[string]string `json:"settings,omitempty"`
	// APIServerVia, when set, is the URL Karpenter reaches the API server
	// through instead of the API server itself (the apiserver-degraded
	// fault's proxy). `nodeprint cluster restart karpenter` clears it.
	APIServerVia string `json:"apiServerVia,omitempty"`
	// KwokPort is the health port of KWOK's controller where the harness
	// runs it (kind); kwokctl keeps its own.
	KwokPort int `json:"kwokPort,omitempty"`
	// KarpenterInCluster: Karpenter runs in the kind cluster from its
	// chart, its metrics on the loopback port KarpenterMetricsPort.
	KarpenterInCluster bool `json:"karpenterInCluster,omitempty"`
	// Owner is the process the cluster lives for (WithTemporary); none
	// for a cluster from `nodeprint cluster up`.
	Owner *Owner `json:"owner,omitempty"`
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
		o.workRoot = filepath.Join(tc.Work, "clusters")
	}
	if o.progress == nil {
		o.progress = func(Event) {}
	}
	l := &Local{opts: o, tc: tc, dir: filepath.Join(o.workRoot, o.name)}
	l.cp = &kwokctlPlane{l: l}
	l.host = processHost{l: l}
	return l, nil
}

// Name is the cluster's name.
func (l *Local) Name() string { return l.opts.name }

func (l *Local) statePath() string { return filepath.Join(l.dir, "state.json") }

// Kubeconfig is the admin kubeconfig of the cluster's control plane.
func (l *Local) Kubeconfig() string { return l.cp.kubeconfig() }

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
		Env: karpenterEnv(os.Environ(), st, kubeconfig, l.catalogPath(st)),
	}
}

// settingsEnv is the settings as environment entries, sorted.
func settingsEnv(settings map[string]string) []string {
	out := make([]string, 0, len(settings))
	for k, v := range settings {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// KarpenterNamespace is Karpenter's system namespace.
const KarpenterNamespace = "karpenter"

func (l *Local) readState() (state, error) {
	b, err := os.ReadFile(l.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return state{}, &NotFoundError{Name: l.opts.name, WorkDir: l.dir, Provider: l.cp.kind()}
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
	// Written to a temporary file and renamed: a reader (Status, another
	// nodeprint process) never sees a half-written file.
	tmp, err := os.CreateTemp(l.dir, ".state-*.json")
	if err != nil {
		return fmt.Errorf("failed to write cluster state: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("failed to write cluster state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("failed to write cluster state: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.statePath()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("failed to write cluster state: %w", err)
	}
	return nil
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
	if err := l.cp.preflight(ctx); err != nil {
		return err
	}
	if err := l.phase(ctx, "toolchain", "checking the binaries in "+l.tc.Bin, func(ctx context.Context) error {
		if err := l.tc.Ensure(ctx, l.opts.buildLog); err != nil {
			return err
		}
		if err := l.cp.build(ctx); err != nil {
			return err
		}
		// Before anything starts: runKarpenter refuses it anyway.
		return l.karpenter().checkBinary()
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.timeout)
	defer cancel()
	// Held until every component runs: see startLock.
	lock, err := l.lockPorts(ctx, "control-plane")
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
		KarpenterVersion: l.tc.Versions.Karpenter, KarpenterBinary: l.karpenter().binary()}
	if l.opts.temporary {
		st.Owner = currentOwner()
	}
	if err := l.writeState(st); err != nil {
		return err
	}

	if err := l.phase(ctx, "control-plane", l.cp.startMessage(), l.cp.start); err != nil {
		return err
	}
	if err := l.phase(ctx, "crds", "applying Karpenter's CRDs from the pinned module and KWOK's stages", l.applyManifests); err != nil {
		return err
	}
	if err := l.cp.afterManifests(ctx); err != nil {
		return err
	}
	if err := l.phase(ctx, "karpenter", "starting Karpenter "+st.KarpenterVersion+" (KWOK provider)", func(ctx context.Context) error {
		// Read afresh: the control plane's phases may have added to it
		// (the kind provider's KWOK port), and writing st back as it was
		// would lose that.
		cur, err := l.readState()
		if err != nil {
			return err
		}
		st, err = l.karpenter().start(ctx, cur)
		return err
	}); err != nil {
		return err
	}
	return l.phase(ctx, "ready", "checking every component end to end", func(ctx context.Context) error {
		return l.waitHealthy(ctx)
	})
}

func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts finds n distinct free loopback ports. Each listener is held
// until all are found: two ports asked for one after the other can be the
// same one (seen: Karpenter's health and metrics servers both given 36719,
// and Karpenter panicking on the second bind).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("failed to find a free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// keepLogs copies the logs of a cluster that failed to start out of its work
// directory (which the rollback removes) into <work root>/../failed/, so
// the reason stays readable. It returns where they went.
func (l *Local) keepLogs() (string, error) {
	dst := filepath.Join(filepath.Dir(l.opts.workRoot), "failed", l.opts.name+"-"+time.Now().UTC().Format("20060102T150405Z"))
	n, err := l.copyLogs(dst)
	if err != nil || n == 0 {
		return "", err
	}
	return dst, nil
}

// KeepLog copies every component's log out of the cluster's directory
// (keepLogs), which a temporary cluster's teardown removes right after the
// failure it reports, and returns where log, one of them, went; log itself
// when the copy fails (supervise.LogKeeper: the supervisor calls it once
// for each exit it records).
func (l *Local) KeepLog(log string) string {
	dst, err := l.keepLogs()
	if err != nil || dst == "" {
		return log
	}
	return filepath.Join(dst, filepath.Base(log))
}

// ExportLogs copies the logs of every component (Karpenter and the
// control plane's processes) into dest, creating it, and returns how many
// files it copied: a test keeps them after the cluster is brought down.
// A cluster that wrote no log yet is an error, not an empty directory.
func (l *Local) ExportLogs(dest string) (int, error) {
	n, err := l.copyLogs(dest)
	if err != nil {
		return n, fmt.Errorf("failed to export the logs of cluster %q: %w", l.opts.name, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("failed to export the logs of cluster %q: it has none in %s", l.opts.name, l.dir)
	}
	return n, nil
}

// copyLogs copies the files of the cluster's log directories into dst
// (created only when there is one to copy); unreadable ones are skipped, as
// a component may be rotating or removing its log while it runs.
func (l *Local) copyLogs(dst string) (int, error) {
	n := 0
	for _, src := range append([]string{filepath.Join(l.dir, "logs")}, l.cp.logDirs()...) {
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
				return n, err
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

func (l *Local) catalogPath(st state) string {
	if st.Catalog != "" {
		return st.Catalog
	}
	return l.tc.Paths().InstanceTypes
}

// UseKarpenter makes Karpenter run with the instance-type catalog at path
// (empty: the KWOK provider's generic catalog) and the settings (its
// environment variables; none: its defaults), restarting it when it runs
// with others. Karpenter reads both once, at start.
func (l *Local) UseKarpenter(ctx context.Context, path string, settings map[string]string) error {
	l.karpenterMu.Lock()
	defer l.karpenterMu.Unlock()
	st, err := l.readState()
	if err != nil {
		return err
	}
	if path == l.tc.Paths().InstanceTypes {
		path = ""
	}
	if len(settings) == 0 {
		settings = nil
	}
	if st.Catalog == path && maps.Equal(st.Settings, settings) {
		return nil
	}
	st.Catalog, st.Settings = path, maps.Clone(settings)
	if err := l.writeState(st); err != nil {
		return err
	}
	return l.restartKarpenter(ctx, st.APIServerVia)
}

// StartKarpenterBuild stops Karpenter and starts it afresh from build's
// binary (KarpenterBuildSwitcher); its catalog and settings stay.
func (l *Local) StartKarpenterBuild(ctx context.Context, build Build) error {
	if build.Binary == "" {
		return errors.New("StartKarpenterBuild: no binary given")
	}
	if err := CheckKarpenterBinary(build.Binary); err != nil {
		return err
	}
	l.karpenterMu.Lock()
	defer l.karpenterMu.Unlock()
	st, err := l.readState()
	if err != nil {
		return err
	}
	return l.restartKarpenterAs(ctx, st.APIServerVia, build)
}

// KarpenterBinary is the toolchain's Karpenter (or the build it was
// given), or the build the in-cluster image holds.
func (l *Local) KarpenterBinary() string { return l.karpenter().binary() }

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
	return l.karpenter().metricsURL(st)
}

// RestartKarpenterVia restarts Karpenter with its API-server traffic sent
// to server (a URL of a proxy in front of the API server); an empty server
// restores the direct connection.
func (l *Local) RestartKarpenterVia(ctx context.Context, server string) error {
	l.karpenterMu.Lock()
	defer l.karpenterMu.Unlock()
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

// KarpenterPID is the process id of the Karpenter the local provider runs.
func (l *Local) KarpenterPID() (int, error) {
	st, err := l.readState()
	if err != nil {
		return 0, err
	}
	h, err := process.Adopt(l.karpenterSpec(st))
	if err != nil {
		return 0, fmt.Errorf("karpenter is not running: %w", err)
	}
	return h.PID, nil
}
