package cluster

import (
	"debug/buildinfo"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Karpenter's operator (sigs.k8s.io/karpenter v1.14.1, pkg/operator) binds
// its metrics and health servers to fmt.Sprintf(":%d", port), every
// interface. Its options set the ports (--metrics-port, METRICS_PORT;
// --health-probe-port, HEALTH_PROBE_PORT), and no option sets the address,
// so no flag or environment variable can keep it on loopback. The
// harness's own builds (tools/toolchain/build.sh, karpenter_compile: the
// pinned release, another --karpenter-version, make mutants) compile
// against a copy of the module whose operator.go binds 127.0.0.1; that
// copy replaces the module from the relative directory
// karpenter-src-NAME, which the binary's build info records. A binary
// without it is refused rather than started.
const (
	karpenterModule     = "sigs.k8s.io/karpenter"
	loopbackPatchPrefix = "karpenter-src-"
)

// CheckKarpenterBinary refuses the Karpenter binary at path unless it is
// a build whose servers bind loopback only.
func CheckKarpenterBinary(path string) error {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return notLoopback(path, fmt.Sprintf("its Go build info cannot be read (%v)", err))
	}
	return loopbackBuild(path, bi)
}

// loopbackBuild accepts a build of Karpenter against the harness's
// loopback-patched module.
func loopbackBuild(path string, bi *debug.BuildInfo) error {
	for _, d := range bi.Deps {
		if d.Path != karpenterModule {
			continue
		}
		if d.Replace != nil && strings.HasPrefix(filepath.Base(d.Replace.Path), loopbackPatchPrefix) {
			return nil
		}
		return notLoopback(path, fmt.Sprintf("it is built against %s %s, not the harness's copy patched to bind 127.0.0.1", karpenterModule, moduleString(d)))
	}
	if bi.Main.Path == karpenterModule {
		return notLoopback(path, "it is built from "+karpenterModule+" itself, whose servers bind every interface")
	}
	return notLoopback(path, "its build info names no "+karpenterModule+" module")
}

func moduleString(m *debug.Module) string {
	if m.Replace != nil {
		return m.Version + " => " + m.Replace.Path
	}
	return m.Version
}

func notLoopback(path, why string) error {
	return fmt.Errorf("karpenter %s would listen on every interface: %s. Karpenter's options set its ports (METRICS_PORT, HEALTH_PROBE_PORT) but not their address, "+
		"so the harness starts only builds whose servers bind 127.0.0.1: build it with `make mutants` (a patch in tools/mutants) or tools/toolchain/build.sh, which patch pkg/operator/operator.go", path, why)
}

// karpenterEnv is what the harness sets in Karpenter's environment, after
// the inherited environment and the scenario's settings so that neither
// can move its servers, its API server or its catalog (the last entry of
// a name wins).
func karpenterEnv(inherited []string, st state, kubeconfig, catalog string) []string {
	env := append(append([]string(nil), inherited...), settingsEnv(st.Settings)...)
	return append(env,
		"KUBECONFIG="+kubeconfig,
		"SYSTEM_NAMESPACE="+KarpenterNamespace,
		"DISABLE_LEADER_ELECTION=true",
		"METRICS_PORT="+strconv.Itoa(st.KarpenterMetricsPort),
		"HEALTH_PROBE_PORT="+strconv.Itoa(st.KarpenterHealthPort),
		"INSTANCE_TYPES_FILE_PATH="+catalog,
	)
}
