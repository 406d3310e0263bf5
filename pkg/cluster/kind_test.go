package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func testToolchain(t *testing.T) *toolchain.Toolchain {
	t.Helper()
	tc, err := toolchain.Find(toolchain.WithRoot("../.."))
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

func TestKwokControllerSpecManagesOnlyKarpentersNodesOnLoopback(t *testing.T) {
	tc := testToolchain(t)
	spec := kwokControllerSpec(tc, "/w/c", "/w/c/kubeconfig.yaml", 4321)
	want := []string{
		"--kubeconfig=/w/c/kubeconfig.yaml",
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=kwok.x-k8s.io/node=fake",
		"--server-address=127.0.0.1:4321",
		"--enable-crds=Stage,ResourceUsage,ClusterResourceUsage,Metric",
	}
	for _, w := range want {
		if !slices.Contains(spec.Args, w) {
			t.Errorf("kwok-controller args %q lack %q", spec.Args, w)
		}
	}
	if spec.Path != tc.Paths().Kwok || spec.PIDFile != "/w/c/kwok-controller.pid" || !strings.HasPrefix(spec.LogFile, "/w/c/logs/") {
		t.Errorf("spec %+v: want bin/kwok with its pid file and log in the cluster's directory", spec)
	}
}

func TestNewKindRefusesABadConfigBeforeStarting(t *testing.T) {
	tc := kindToolchain(t, "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking: {apiServerAddress: 0.0.0.0}\n")
	_, err := NewKind(WithToolchain(tc), WithWorkRoot(t.TempDir()))
	var ce *KindConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "apiServerAddress") {
		t.Fatalf("NewKind: %v, want a *KindConfigError naming apiServerAddress", err)
	}
}

// Where no Docker engine answers (this project's machines and CI), Up
// fails at once with an environment error that says so, starts nothing
// and leaves no directory.
func TestKindUpWithoutADockerEngine(t *testing.T) {
	if v, err := DockerEngine(context.Background()); err == nil {
		t.Skipf("a Docker engine (%s) answers here: the lifecycle suite's kind spec runs the provider for real", v)
	}
	work := t.TempDir()
	var phases []string
	k, err := NewKind(WithToolchain(testToolchain(t)), WithWorkRoot(work), WithName("kind-test"),
		WithProgress(func(e Event) { phases = append(phases, e.Phase) }))
	if err != nil {
		t.Fatal(err)
	}
	err = k.Up(context.Background())
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != "docker" || !strings.Contains(err.Error(), "needs a Docker engine") {
		t.Fatalf("Up: %v, want a *PhaseError of phase docker saying a Docker engine is needed", err)
	}
	if slices.Contains(phases, "toolchain") || slices.Contains(phases, "control-plane") {
		t.Errorf("phases %v: nothing may be built or started without an engine", phases)
	}
	if _, err := os.Stat(filepath.Join(work, "kind-test")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Up left %s behind (%v)", filepath.Join(work, "kind-test"), err)
	}
	st, err := k.Status(context.Background())
	var nf *NotFoundError
	if !errors.As(err, &nf) || st.Provider != "kind" {
		t.Errorf("Status after a failed Up: %+v, %v; want a *NotFoundError from the kind provider", st, err)
	}
	if err := k.Down(context.Background()); err != nil {
		t.Errorf("Down of a cluster that never started: %v", err)
	}
}
