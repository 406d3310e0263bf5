package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// kwokctlConfig is the subset of kwokctl's KwokctlConfiguration nodeprint
// sets. Field names follow config.kwok.x-k8s.io/v1alpha1.
type kwokctlConfig struct {
	APIVersion        string           `json:"apiVersion"`
	Kind              string           `json:"kind"`
	Options           kwokctlOptions   `json:"options"`
	ComponentsPatches []componentPatch `json:"componentsPatches,omitempty"`
}

// componentPatch adds flags to a component kwokctl starts
// (ComponentPatches of config.kwok.x-k8s.io/v1alpha1).
type componentPatch struct {
	Name      string     `json:"name"`
	ExtraArgs []extraArg `json:"extraArgs"`
}

// extraArg is one flag, --Key=Value.
type extraArg struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// componentsPatches: metrics-server logs at -v=1. At its default level it
// says nothing when it leaves a pod out of a scrape (a zero CPU or memory
// sample) and nothing of how many pods each scrape found; at 1 it logs
// both ("Failed getting complete Pod metric", "Scrape finished … podCount"),
// a few lines every 15 s. A runbook command that never gets metrics quotes
// them (suites' metrics diagnosis).
//
// kube-controller-manager runs without leader election, as the scheduler
// does (schedulerConfig) and Karpenter does (DISABLE_LEADER_ELECTION): with
// one instance of each there is nobody to hand over to, and a component
// that cannot renew its lease within 10 s exits ("leaderelection lost").
// An API server that stalls that long (measured: 13 s while the run before
// removed its 1,000 pods) then takes two components down with it, and the
// run is inconclusive for the environment although nothing failed for good.
var componentsPatches = []componentPatch{
	{Name: "metrics-server", ExtraArgs: []extraArg{{Key: "v", Value: "1"}}},
	{Name: "kube-controller-manager", ExtraArgs: []extraArg{{Key: "leader-elect", Value: "false"}}},
}

type kwokctlOptions struct {
	Runtime                     string   `json:"runtime"`
	BindAddress                 string   `json:"bindAddress"`
	KubeVersion                 string   `json:"kubeVersion,omitempty"`
	KubeApiserverBinary         string   `json:"kubeApiserverBinary"`
	KubeControllerManagerBinary string   `json:"kubeControllerManagerBinary"`
	KubeSchedulerBinary         string   `json:"kubeSchedulerBinary"`
	KubectlBinary               string   `json:"kubectlBinary"`
	EtcdBinary                  string   `json:"etcdBinary"`
	KwokControllerBinary        string   `json:"kwokControllerBinary"`
	MetricsServerBinary         string   `json:"metricsServerBinary"`
	MetricsServerManifests      []string `json:"metricsServerManifests"`
	EnableMetricsServer         bool     `json:"enableMetricsServer"`
	DisableQPSLimits            bool     `json:"disableQPSLimits"`
	CacheDir                    string   `json:"cacheDir"`
	KubeSchedulerConfig         string   `json:"kubeSchedulerConfig,omitempty"`
	// EnableCRDs makes kwok-controller read these kinds from the API server
	// instead of from its start-up configuration, so the harness can add and
	// remove stages and resource usages (faults) while the cluster runs.
	EnableCRDs []string `json:"enableCRDs"`
}

// dynamicKinds are the KWOK kinds served as CRDs (see kwokctlOptions.EnableCRDs).
var dynamicKinds = []string{"Stage", "ResourceUsage", "ClusterResourceUsage", "Metric"}

// schedulerConfig caps the scheduler's backoff for pods it could not place
// at one second (the default doubles from 1 s to 10 s). Pods wait
// unschedulable until Karpenter's node is Ready; with the default, when
// the node appeared decided which of the pods were in a 2 s or 4 s backoff
// and came in a later wave, and a run's pod-ready p50 jumped by seconds
// between identical runs (measured: waves 1-1.6 s apart within one run,
// p50 3.6-5.9 s over 15 runs of web-service). Capped, pod-ready measures
// Karpenter, not where a pod was in the scheduler's retry schedule. QPS
// limits are off as kwokctl's flags set them: with a configuration file
// the scheduler ignores those flags. Leader election is off (see
// componentsPatches).
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 1
clientConnection:
  qps: 5000
  burst: 10000
leaderElection:
  leaderElect: false
`

// writeKwokctlConfig writes the configuration kwokctl starts the control
// plane from: local binaries only (kwokctl downloads nothing), every
// component on loopback, client QPS limits off, metrics-server from its own
// manifests in bin/, the scheduler's backoff capped (schedulerConfig).
func writeKwokctlConfig(path string, tc *toolchain.Toolchain, cacheDir string) error {
	p := tc.Paths()
	sched := filepath.Join(filepath.Dir(path), "kube-scheduler.yaml")
	if err := os.WriteFile(sched, []byte(schedulerConfig), 0o600); err != nil {
		return fmt.Errorf("failed to write the scheduler's configuration: %w", err)
	}
	cfg := kwokctlConfig{
		APIVersion: "config.kwok.x-k8s.io/v1alpha1",
		Kind:       "KwokctlConfiguration",
		Options: kwokctlOptions{
			Runtime:                     "binary",
			BindAddress:                 "127.0.0.1",
			KubeVersion:                 tc.Versions.Kubernetes,
			KubeApiserverBinary:         p.KubeAPIServer,
			KubeControllerManagerBinary: p.KubeControllerManager,
			KubeSchedulerBinary:         p.KubeScheduler,
			KubectlBinary:               p.Kubectl,
			EtcdBinary:                  p.Etcd,
			KwokControllerBinary:        p.Kwok,
			MetricsServerBinary:         p.MetricsServer,
			MetricsServerManifests:      []string{p.MetricsServerManifests},
			EnableMetricsServer:         true,
			DisableQPSLimits:            true,
			CacheDir:                    cacheDir,
			KubeSchedulerConfig:         sched,
			EnableCRDs:                  dynamicKinds,
		},
		ComponentsPatches: componentsPatches,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("failed to encode the kwokctl configuration: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("failed to write the kwokctl configuration: %w", err)
	}
	return nil
}

// kwokPorts are the ports kwokctl chose, read back from the configuration it
// saved in its work directory.
type kwokPorts struct {
	KubeApiserverPort         int   `json:"kubeApiserverPort"`
	KubeControllerManagerPort int   `json:"kubeControllerManagerPort"`
	KubeSchedulerPort         int   `json:"kubeSchedulerPort"`
	KwokControllerPort        int   `json:"kwokControllerPort"`
	MetricsServerPort         int   `json:"metricsServerPort"`
	EtcdPort                  int   `json:"etcdPort"`
	SecurePort                *bool `json:"securePort"`
}

func readKwokPorts(clusterDir string) (kwokPorts, error) {
	path := filepath.Join(clusterDir, "kwok.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return kwokPorts{}, fmt.Errorf("failed to read kwokctl's saved configuration: %w", err)
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var d struct {
			Kind    string    `json:"kind"`
			Options kwokPorts `json:"options"`
		}
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			continue
		}
		if d.Kind == "KwokctlConfiguration" {
			return d.Options, nil
		}
	}
	return kwokPorts{}, fmt.Errorf("%s has no KwokctlConfiguration", path)
}

// controlPlane is the Kubernetes side of a cluster whose Karpenter runs as
// the harness's process: kwokctl's binary runtime or a kind cluster.
type controlPlane interface {
	// kind names the provider in Status.
	kind() Kind
	kubeconfig() string
	startMessage() string
	// preflight checks, before anything is built or started, what the
	// control plane needs from the machine.
	preflight(ctx context.Context) error
	// build builds what the control plane needs beyond the toolchain, in
	// the toolchain phase (kind: its node image, when the engine lacks it).
	build(ctx context.Context) error
	// start brings the control plane up (the control-plane phase).
	start(ctx context.Context) error
	// beforeStages runs after Karpenter's CRDs, before KWOK's stages are
	// applied (kind installs KWOK's CRDs here).
	beforeStages(ctx context.Context, c client.Client) error
	// afterManifests runs once the CRDs and stages are applied (kind starts
	// its out-of-cluster KWOK controller here).
	afterManifests(ctx context.Context) error
	// components probes the control plane's components for Status.
	components(ctx context.Context, cl *statusClients, cerr error) []ComponentStatus
	// restart starts the named components again after they exited during
	// start-up.
	restart(ctx context.Context, names []string) error
	componentLog(name string) string
	logDirs() []string
	// stop stops and deletes the control plane; it is a no-op when there
	// is none.
	stop(ctx context.Context) error
}

// kwokctlPlane is kwokctl's binary runtime: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok-controller and
// metrics-server as processes from bin/.
type kwokctlPlane struct{ l *Local }

func (k *kwokctlPlane) kind() Kind { return KindLocal }

func (k *kwokctlPlane) build(context.Context) error { return nil }

func (k *kwokctlPlane) kwokDir() string { return filepath.Join(k.l.dir, "kwok") }
func (k *kwokctlPlane) clusterDir() string {
	return filepath.Join(k.kwokDir(), "clusters", k.l.opts.name)
}
func (k *kwokctlPlane) kubeconfig() string { return filepath.Join(k.clusterDir(), "kubeconfig.yaml") }
func (k *kwokctlPlane) logDirs() []string  { return []string{filepath.Join(k.clusterDir(), "logs")} }

func (k *kwokctlPlane) startMessage() string {
	return "starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller, metrics-server"
}

func (k *kwokctlPlane) afterManifests(context.Context) error { return nil }

// preflight: the binaries are the toolchain phase's to check.
func (k *kwokctlPlane) preflight(context.Context) error { return nil }

// beforeStages: kwokctl installs KWOK's CRDs itself.
func (k *kwokctlPlane) beforeStages(context.Context, client.Client) error { return nil }

// start runs `kwokctl create cluster` in a process group of its own: a
// Ctrl-C in the terminal reaches only the harness, which cancels ctx and
// then rolls back with `kwokctl delete cluster`.
func (k *kwokctlPlane) start(ctx context.Context) error {
	l := k.l
	cfg := filepath.Join(l.dir, "kwokctl.yaml")
	if err := writeKwokctlConfig(cfg, l.tc, filepath.Join(l.dir, "cache")); err != nil {
		return err
	}
	logPath := filepath.Join(l.dir, "logs", "kwokctl.log")
	var offset int64
	if fi, err := os.Stat(logPath); err == nil {
		offset = fi.Size()
	}
	// No --wait: kwokctl's wait polls every 0.5 s through a kubectl
	// process and held the start for about 1.6 s. The API server is up
	// when kwokctl returns (it has applied KWOK's CRDs), so Karpenter's
	// CRDs and Karpenter start while the controllers finish starting;
	// the ready phase then waits for every component (bounded by Up's timeout).
	err := k.kwokctl(ctx, logPath, "create", "cluster", "--config", cfg,
		"--kubeconfig", filepath.Join(l.dir, "kubeconfig.merged"))
	if err != nil {
		return &PhaseError{Phase: "control-plane", Err: err, LogHint: logPath}
	}
	for _, e := range kwokctlSteps(logPath, offset) {
		l.opts.progress(e)
	}
	// kwokctl writes the private keys 0644 and the kubeconfig 0640; the
	// cluster directory is 0700 already, but the files say so too.
	return PrivateFiles(l.dir)
}

// PrivateFiles makes every private key and kubeconfig under dir readable
// by its owner only (0600).
func PrivateFiles(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return nil //nolint:nilerr // a file that vanished meanwhile is not ours to fail on
		}
		if !IsSecretFile(d.Name()) {
			return nil
		}
		if err := os.Chmod(path, 0o600); err != nil {
			return fmt.Errorf("failed to make %s private: %w", path, err)
		}
		return nil
	})
}

// IsSecretFile says whether a file of the cluster's directory holds a
// credential: a private key or a kubeconfig (a client certificate's key).
func IsSecretFile(name string) bool {
	return strings.HasSuffix(name, ".key") || strings.Contains(name, "kubeconfig")
}

// kwokctlSteps splits the control-plane phase into kwokctl's own steps,
// read from the elapsed times in its JSON log lines written after offset
// (kwokctl reports them nowhere else). A log it cannot read gives none.
func kwokctlSteps(path string, offset int64) []Event {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil
	}
	steps := []struct{ msg, phase, what string }{
		{"Cluster is created", "control-plane.create", "kwokctl: configuration and certificates"},
		{"Cluster is started", "control-plane.start", "kwokctl: etcd, kube-apiserver, the controllers, the scheduler and kwok-controller started"},
		{"Load resources", "control-plane.kwok-crds", "kwokctl: KWOK's CRDs and resources applied"},
		{"Cluster is ready", "control-plane.ready", "kwokctl: every component ready"},
	}
	took := map[string]time.Duration{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			Elapsed struct {
				Nanosecond int64 `json:"nanosecond"`
			} `json:"elapsed"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		took[line.Msg] += time.Duration(line.Elapsed.Nanosecond)
	}
	var out []Event
	for _, s := range steps {
		if d := took[s.msg]; d > 0 {
			out = append(out, Event{Phase: s.phase, Done: true, Elapsed: d, Message: s.what})
		}
	}
	return out
}

// restart: `kwokctl start cluster` starts only what is not running.
func (k *kwokctlPlane) restart(ctx context.Context, _ []string) error {
	return k.kwokctl(ctx, filepath.Join(k.l.dir, "logs", "kwokctl.log"), "start", "cluster")
}

func (k *kwokctlPlane) stop(ctx context.Context) error {
	if _, err := os.Stat(k.clusterDir()); err != nil {
		return nil
	}
	k.l.opts.progress(Event{Phase: "down", Message: "stopping the control plane (kwokctl delete cluster)"})
	return k.kwokctl(ctx, filepath.Join(k.l.dir, "logs", "kwokctl.log"), "delete", "cluster")
}

func (k *kwokctlPlane) componentLog(name string) string {
	return filepath.Join(k.clusterDir(), "logs", name+".log")
}

func (k *kwokctlPlane) kwokctl(ctx context.Context, logPath string, args ...string) error {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("failed to open %s: %w", logPath, err)
	}
	defer logf.Close()
	full := append([]string{"--name", k.l.opts.name}, args...)
	cmd := exec.CommandContext(ctx, k.l.tc.Paths().Kwokctl, full...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+k.kwokDir())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %v: %w", args[:2], err)
	}
	return nil
}

// components probes what kwokctl runs: the API server (whose /readyz
// includes etcd), the controllers' /healthz on the ports kwokctl chose, and
// metrics-server through its APIService.
func (k *kwokctlPlane) components(ctx context.Context, cl *statusClients, cerr error) []ComponentStatus {
	var out []ComponentStatus
	pid := func(component string) int {
		b, err := os.ReadFile(filepath.Join(k.clusterDir(), "pids", component+".pid"))
		if err != nil {
			return 0
		}
		var p int
		_, _ = fmt.Sscanf(string(b), "%d", &p)
		return p
	}
	add := func(name string, err error, ok string, pid int) {
		out = append(out, probed(name, err, ok, pid, k.componentLog(name)))
	}
	through := func(via string) { out[len(out)-1].Via = via }
	apiErr := cl.apiServerReady(ctx, cerr)
	add("etcd", apiErr, "ready (through kube-apiserver /readyz)", pid("etcd"))
	through("kube-apiserver")
	add("kube-apiserver", apiErr, "/readyz ok", pid("kube-apiserver"))
	ports, perr := readKwokPorts(k.clusterDir())
	probe := func(name, scheme string, port int) {
		if perr != nil {
			add(name, perr, "", pid(name))
			return
		}
		url := fmt.Sprintf("%s://127.0.0.1:%d/healthz", scheme, port)
		add(name, httpOK(ctx, url), url+" ok", pid(name))
	}
	secure := "https"
	if ports.SecurePort != nil && !*ports.SecurePort {
		secure = "http"
	}
	probe("kube-controller-manager", secure, ports.KubeControllerManagerPort)
	probe("kube-scheduler", secure, ports.KubeSchedulerPort)
	probe("kwok-controller", "http", ports.KwokControllerPort)
	msErr := cerr
	if msErr == nil {
		msErr = apiServiceAvailable(ctx, cl.client, "v1beta1.metrics.k8s.io")
	}
	add("metrics-server", msErr, "APIService v1beta1.metrics.k8s.io available", pid("metrics-server"))
	through("kube-apiserver")
	return out
}
