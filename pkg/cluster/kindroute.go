package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// KindRoute is how the kind provider starts its nodes on this engine.
type KindRoute struct {
	// Privileged: the engine grants privileged containers and kind runs
	// unchanged. Otherwise kind runs with a docker wrapper first in its
	// PATH that replaces --privileged by the capabilities the engine can
	// grant (docs/cluster.md#kind-without-privileged-containers).
	Privileged bool
	// Dropped are the capabilities the wrapper leaves out: those the
	// engine itself lacks.
	Dropped []string
	// CgroupV1 is the engine's cgroup version 1: kubelet v1.35 and later
	// refuse it unless failCgroupV1 is false.
	CgroupV1 bool
}

// String says the route in a progress line and a report.
func (r KindRoute) String() string {
	if r.Privileged {
		return "privileged nodes (kind unchanged)"
	}
	return "nodes without --privileged: every capability but " + strings.Join(r.Dropped, ", ") + " (the engine lacks it), through nodeprint's docker wrapper"
}

// noOOMAdjust: without CAP_SYS_RESOURCE no process in the node can lower
// an oom_score_adj below 0, and runc treats a failed write as fatal.
func (r KindRoute) noOOMAdjust() bool {
	for _, c := range r.Dropped {
		if c == "SYS_RESOURCE" {
			return true
		}
	}
	return false
}

// wrapperRunFlags replace --privileged in `docker run`: what a privileged
// container gets on Docker 20.10, minus the capabilities the engine lacks.
func (r KindRoute) wrapperRunFlags() []string {
	f := []string{"--cap-add", "ALL"}
	for _, c := range r.Dropped {
		f = append(f, "--cap-drop", c)
	}
	return append(f, "--security-opt", "systempaths=unconfined", "--security-opt", "seccomp=unconfined",
		"--security-opt", "apparmor=unconfined", "--device-cgroup-rule", "a *:* rwm",
		"--device", "/dev/fuse", "--device", "/dev/kmsg")
}

// capNames are the capabilities by number (linux/capability.h), as
// Docker's --cap-drop spells them.
var capNames = []string{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"}

// missingCaps lists the capabilities of capNames absent from a CapBnd
// mask (hex, as /proc/<pid>/status shows it).
func missingCaps(capBnd string) ([]string, error) {
	mask, err := strconv.ParseUint(strings.TrimSpace(capBnd), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("CapBnd %q: %w", capBnd, err)
	}
	var out []string
	for i, n := range capNames {
		if mask&(1<<uint(i)) == 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// capBnd reads the CapBnd line of a /proc/<pid>/status file.
func capBnd(status string) (string, error) {
	f, err := os.Open(status)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapBnd:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("%s: no CapBnd line", status)
}

// engineLacks says which capabilities the Docker engine's own process
// lacks, read from its /proc status when the engine runs on this machine;
// else it assumes the one this project's machines withhold.
func engineLacks(ctx context.Context) (caps []string, how string) {
	out, err := exec.CommandContext(ctx, "pidof", "dockerd").Output()
	if err == nil {
		if f := strings.Fields(string(out)); len(f) > 0 {
			if v, err := capBnd(filepath.Join("/proc", f[0], "status")); err == nil {
				if caps, err := missingCaps(v); err == nil && len(caps) > 0 {
					return caps, "dockerd's capability bounding set"
				}
			}
		}
	}
	return []string{"SYS_RESOURCE"}, "assumed (dockerd's /proc status is not readable here)"
}

// routeConfig adds to a rendered kind configuration what the route needs:
// on cgroup v1, failCgroupV1: false (kubelet v1.35 and later refuse cgroup
// v1 otherwise, and kind sets nothing); where no process in the node can
// lower an oom_score_adj below 0, kubelet's own oomScoreAdj 0 and
// containerd's restrict_oom_score_adj, which keeps every container's at or
// above containerd's own instead of failing the container.
func routeConfig(config []byte, r KindRoute) ([]byte, error) {
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(config, cfg); err != nil {
		return nil, fmt.Errorf("failed to read the rendered kind configuration: %w", err)
	}
	var kubelet []string
	if r.CgroupV1 {
		kubelet = append(kubelet, "failCgroupV1: false")
	}
	if r.noOOMAdjust() {
		kubelet = append(kubelet, "oomScoreAdj: 0")
		cfg.ContainerdConfigPatches = append(cfg.ContainerdConfigPatches,
			"[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true\n")
	}
	if len(kubelet) > 0 {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, "kind: KubeletConfiguration\n"+strings.Join(kubelet, "\n")+"\n")
	}
	return yaml.Marshal(cfg)
}

// wrapperScript is the docker that kind finds first in its PATH on the
// unprivileged route: `docker run --privileged` becomes the route's flags,
// `docker exec --privileged` a plain exec (it runs with the container's
// capabilities), everything else goes to the real docker unchanged. Only
// the first --privileged is replaced: kind puts it before the image, and
// what follows the image is the container's own command line.
const wrapperScript = `#!/usr/bin/env bash
# Written by nodeprint for kind on an engine that refuses privileged
# containers (docs/cluster.md#kind-without-privileged-containers).
real=%s
if [[ ${1-} == run || ${1-} == exec ]]; then
	sub=$1
	shift
	args=()
	replaced=
	for a in "$@"; do
		if [[ -z $replaced && $a == --privileged ]]; then
			replaced=1
			if [[ $sub == run ]]; then args+=(%s); fi
			continue
		fi
		args+=("$a")
	done
	exec "$real" "$sub" "${args[@]}"
fi
exec "$real" "$@"
`

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeWrapper writes the route's docker wrapper into dir/docker-wrapper
// and returns that directory.
func (r KindRoute) writeWrapper(dir, realDocker string) (string, error) {
	wdir := filepath.Join(dir, "docker-wrapper")
	if err := os.MkdirAll(wdir, 0o700); err != nil {
		return "", fmt.Errorf("failed to write the docker wrapper: %w", err)
	}
	flags := r.wrapperRunFlags()
	for i := range flags {
		flags[i] = shellQuote(flags[i])
	}
	body := fmt.Sprintf(wrapperScript, shellQuote(realDocker), strings.Join(flags, " "))
	if err := os.WriteFile(filepath.Join(wdir, "docker"), []byte(body), 0o700); err != nil {
		return "", fmt.Errorf("failed to write the docker wrapper: %w", err)
	}
	return wdir, nil
}

// pathMu serialises the PATH changes of useWrapper.
var pathMu sync.Mutex

// useWrapper puts the route's docker wrapper first in this process's PATH
// until restore is called: kind runs `docker` through os/exec with the
// process's PATH and offers no other hook (its exec.DefaultCmder is a
// concrete type). On the privileged route it changes nothing.
func (r KindRoute) useWrapper(dir string) (restore func(), err error) {
	if r.Privileged {
		return func() {}, nil
	}
	realDocker, err := exec.LookPath("docker")
	if err != nil {
		return nil, fmt.Errorf("the kind provider needs Docker: %w", err)
	}
	wdir, err := r.writeWrapper(dir, realDocker)
	if err != nil {
		return nil, err
	}
	pathMu.Lock()
	old := os.Getenv("PATH")
	if err := os.Setenv("PATH", wdir+string(os.PathListSeparator)+old); err != nil {
		pathMu.Unlock()
		return nil, err
	}
	return func() {
		_ = os.Setenv("PATH", old)
		pathMu.Unlock()
	}, nil
}

// kindSchedulerPath is where the node sees nodeprint's scheduler
// configuration (an extra mount of the cluster's copy).
const kindSchedulerPath = "/etc/nodeprint/kube-scheduler.yaml"

// kindScheduler is the local provider's scheduler configuration
// (schedulerConfig: backoff capped at 1 s, client rate limits off) with the
// kubeconfig kubeadm writes for the scheduler: a scheduler started with
// --config reads its connection from the file, not from its flags.
func kindScheduler() ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(schedulerConfig), &cfg); err != nil {
		return nil, err
	}
	cc, _ := cfg["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = "/etc/kubernetes/scheduler.conf"
	cfg["clientConnection"] = cc
	return yaml.Marshal(cfg)
}

// withScheduler makes every control-plane node of a rendered kind
// configuration run kube-scheduler with nodeprint's configuration, written
// to hostPath: mounted into the node, and from there into the scheduler's
// static pod by kubeadm. Without it the kind scheduler retries unplaced
// pods with kubeadm's default backoff (1 s doubling to 10 s), and pod-ready
// latencies measure where a pod was in that schedule (see schedulerConfig).
func withScheduler(config []byte, hostPath string) ([]byte, error) {
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(config, cfg); err != nil {
		return nil, fmt.Errorf("failed to read the rendered kind configuration: %w", err)
	}
	for i := range cfg.Nodes {
		if cfg.Nodes[i].Role == kindv1alpha4.ControlPlaneRole {
			cfg.Nodes[i].ExtraMounts = append(cfg.Nodes[i].ExtraMounts,
				kindv1alpha4.Mount{HostPath: hostPath, ContainerPath: kindSchedulerPath, Readonly: true})
		}
	}
	cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, `kind: ClusterConfiguration
scheduler:
  extraArgs:
  - name: config
    value: `+kindSchedulerPath+`
  extraVolumes:
  - name: nodeprint-scheduler
    hostPath: `+kindSchedulerPath+`
    mountPath: `+kindSchedulerPath+`
    readOnly: true
    pathType: File
`)
	return yaml.Marshal(cfg)
}

// withPortMapping maps loopback port hostPort of this machine to
// containerPort of the control-plane node.
func withPortMapping(config []byte, containerPort, hostPort int) ([]byte, error) {
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(config, cfg); err != nil {
		return nil, fmt.Errorf("failed to read the rendered kind configuration: %w", err)
	}
	for i := range cfg.Nodes {
		if cfg.Nodes[i].Role == kindv1alpha4.ControlPlaneRole {
			cfg.Nodes[i].ExtraPortMappings = append(cfg.Nodes[i].ExtraPortMappings, kindv1alpha4.PortMapping{
				ContainerPort: int32(containerPort), HostPort: int32(hostPort), ListenAddress: "127.0.0.1", Protocol: kindv1alpha4.PortMappingProtocolTCP})
			break
		}
	}
	return yaml.Marshal(cfg)
}
