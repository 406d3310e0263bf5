package cluster

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Karpenter has no option that binds its servers to an address: a binary
// that is not the loopback-patched build listens on every interface, so
// the harness refuses to start it (a shell script stands in for a
// --karpenter-binary built from the unpatched module).
func TestAKarpenterThatWouldListenOnEveryInterfaceIsNotStarted(t *testing.T) {
	root := t.TempDir()
	l, err := NewLocal(WithName("loop"), WithWorkRoot(root), WithToolchain(&toolchain.Toolchain{Root: root}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "loop"), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, "started")
	bin := filepath.Join(root, "karpenter")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\ntouch "+marker+"\nsleep 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = l.runKarpenter(ctx, state{KarpenterBinary: bin, KarpenterHealthPort: 1, KarpenterMetricsPort: 2, Catalog: "c.json"})
	if err == nil || !strings.Contains(err.Error(), "every interface") {
		t.Fatalf("runKarpenter of an unpatched binary: %v, want a refusal saying it would listen on every interface", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the binary was started")
	}
}

// Only a build against the harness's loopback-patched copy of the module
// (what build.sh's karpenter_compile records) is accepted.
func TestOnlyTheLoopbackPatchedBuildIsAccepted(t *testing.T) {
	dep := func(replace string) *debug.BuildInfo {
		m := &debug.Module{Path: karpenterModule, Version: "v1.14.1"}
		if replace != "" {
			m.Replace = &debug.Module{Path: replace}
		}
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/nodeprint/nodeprint/tools/karpenter"}, Deps: []*debug.Module{m}}
	}
	for name, tc := range map[string]struct {
		bi *debug.BuildInfo
		ok bool
	}{
		"pinned build":      {dep("../karpenter-src-v1.14.1"), true},
		"mutant build":      {dep("../karpenter-src-v1.14.1-mutant-expensive-types"), true},
		"unpatched module":  {dep(""), false},
		"another fork":      {dep("../karpenter-fork"), false},
		"the module's kwok": {&debug.BuildInfo{Main: debug.Module{Path: karpenterModule}}, false},
		"no karpenter":      {&debug.BuildInfo{Main: debug.Module{Path: "example.com/x"}}, false},
	} {
		err := loopbackBuild("k", tc.bi)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want accepted %v", name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "METRICS_PORT") {
			t.Errorf("%s: the refusal must say what Karpenter's options can and cannot set: %v", name, err)
		}
	}
}

// The harness's entries come last, so neither the inherited environment
// nor a scenario's settings move Karpenter's ports, API server or catalog.
func TestKarpenterEnvKeepsTheHarnessesEntriesLast(t *testing.T) {
	st := state{KarpenterMetricsPort: 4100, KarpenterHealthPort: 4101, Settings: map[string]string{"BATCH_MAX_DURATION": "20s", "METRICS_PORT": "8080"}}
	env := karpenterEnv([]string{"METRICS_PORT=9999", "HOME=/root"}, st, "/k.yaml", "/c.json")
	last := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		last[k] = v // exec keeps the last entry of a name
	}
	for k, want := range map[string]string{"METRICS_PORT": "4100", "HEALTH_PROBE_PORT": "4101", "KUBECONFIG": "/k.yaml",
		"INSTANCE_TYPES_FILE_PATH": "/c.json", "BATCH_MAX_DURATION": "20s", "HOME": "/root", "DISABLE_LEADER_ELECTION": "true"} {
		if last[k] != want {
			t.Errorf("%s=%q, want %q (env %v)", k, last[k], want, env)
		}
	}
}
