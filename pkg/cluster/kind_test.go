package cluster

import (
	"context"
	"errors"
	"fmt"
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

// fakeEngine is what a scripted docker command answers.
type fakeEngine struct {
	// engine: `info` answers with a server version (else it fails).
	engine bool
	// refusesPrivileged: `run` fails as this project's engine does
	// (exit 125, unable to apply caps) instead of reaching the probe's
	// missing entrypoint (exit 127).
	refusesPrivileged bool
	// present: `image inspect` finds the node image.
	present bool
	// pullCode and pullOut: what `pull` exits with and prints.
	pullCode int
	pullOut  string
}

// fakeDocker puts a docker command first in PATH that answers as e says
// and returns the file its calls are logged to, one per line.
func fakeDocker(t *testing.T, e fakeEngine) string {
	t.Helper()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	run := `echo 'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/nodeprint-probe": stat /nodeprint-probe: no such file or directory: unknown.'; exit 127`
	if e.refusesPrivileged {
		run = `echo 'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown.'; echo "Run 'docker run --help' for more information"; exit 125`
	}
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
case "$1" in
info) %s ;;
image) %s ;;
pull) echo %q; exit %d ;;
import) cat >/dev/null; echo sha256:0098d9a5 ;;
run) %s ;;
rmi) echo "Untagged: $2" ;;
esac
`, calls, map[bool]string{true: "echo 20.10.24", false: "echo 'Cannot connect to the Docker daemon' >&2; exit 1"}[e.engine],
		map[bool]string{true: "echo sha256:abc", false: "echo 'Error: No such image' >&2; exit 1"}[e.present], e.pullOut, e.pullCode, run)
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

// failedKindUp runs Up of kind cluster kind-test against the fake engine
// and returns Up's error, after checking that the failure came before
// anything was built or started (why says what was missing) and left no
// directory behind.
func failedKindUp(t *testing.T, tc *toolchain.Toolchain, why string) (*KindCluster, error) {
	t.Helper()
	work := t.TempDir()
	var phases []string
	k, err := NewKind(WithToolchain(tc), WithWorkRoot(work), WithName("kind-test"),
		WithProgress(func(e Event) { phases = append(phases, e.Phase) }))
	if err != nil {
		t.Fatal(err)
	}
	err = k.Up(context.Background())
	if slices.Contains(phases, "toolchain") || slices.Contains(phases, "control-plane") {
		t.Errorf("phases %v: nothing may be built or started %s", phases, why)
	}
	if _, serr := os.Stat(filepath.Join(work, "kind-test")); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("Up left %s behind (%v)", filepath.Join(work, "kind-test"), serr)
	}
	return k, err
}

// Where no Docker engine answers, Up fails at once with an environment
// error that says so, starts nothing and leaves no directory.
func TestKindUpWithoutADockerEngine(t *testing.T) {
	fakeDocker(t, fakeEngine{pullCode: 1})
	k, err := failedKindUp(t, testToolchain(t), "without an engine")
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != "docker" || !strings.Contains(err.Error(), "needs a Docker engine") {
		t.Fatalf("Up: %v, want a *PhaseError of phase docker saying a Docker engine is needed", err)
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

// An engine without a registry (this project's machines) and without the
// node image: Up fails before anything is built or created, naming the
// image and how to get it, as an environment failure.
func TestKindUpWithoutTheNodeImageAndNoRegistry(t *testing.T) {
	calls := fakeDocker(t, fakeEngine{engine: true, pullCode: 1,
		pullOut: `Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host`})
	tc := testToolchain(t)
	_, err := failedKindUp(t, tc, "without the node image")
	var pe *PhaseError
	var ie *NodeImageError
	if !errors.As(err, &pe) || pe.Phase != "docker" || !errors.As(err, &ie) {
		t.Fatalf("Up: %v, want a *PhaseError of phase docker holding a *NodeImageError", err)
	}
	for _, want := range []string{KindNodeImage(tc), "cannot be pulled", "no such host", "docker load", "local provider"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "pull "+KindNodeImage(tc)) {
		t.Errorf("docker calls:\n%s\nwant a pull of the image (what kind would do on a runner with a registry)", b)
	}
}

// An engine that refuses privileged containers (this project's, whose
// capability bounding set lacks CAP_SYS_RESOURCE): Up fails before
// anything is built or created and before any pull, quoting the engine,
// and removes the probe's image.
func TestKindUpOnAnEngineThatRefusesPrivilegedContainers(t *testing.T) {
	calls := fakeDocker(t, fakeEngine{engine: true, refusesPrivileged: true, pullCode: 1, pullOut: "no registry"})
	_, err := failedKindUp(t, testToolchain(t), "on an engine that refuses privileged containers")
	var pe *PhaseError
	var re *PrivilegedError
	if !errors.As(err, &pe) || pe.Phase != "docker" || !errors.As(err, &re) {
		t.Fatalf("Up: %v, want a *PhaseError of phase docker holding a *PrivilegedError", err)
	}
	want := "Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: " +
		"unable to start container process: unable to apply caps: operation not permitted: unknown."
	if re.Engine != want {
		t.Errorf("the engine's answer: %q, want its first line %q", re.Engine, want)
	}
	for _, w := range []string{"refuses privileged containers", "unable to apply caps", "CapBnd", "local provider"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error %q does not say %q", err, w)
		}
	}
	b, _ := os.ReadFile(calls)
	image := fmt.Sprintf("nodeprint-probe:privileged-%d", os.Getpid())
	for _, w := range []string{"import --message", "run --rm --network none --privileged --entrypoint /nodeprint-probe " + image, "rmi " + image} {
		if !strings.Contains(string(b), w) {
			t.Errorf("docker calls:\n%s\nwant %q", b, w)
		}
	}
	if strings.Contains(string(b), "pull ") {
		t.Errorf("docker calls:\n%s\nno node image may be pulled for an engine that cannot run it", b)
	}
}

// The probe's verdict comes from docker's exit code alone: 127 (the
// entrypoint is missing) means the capabilities were granted.
func TestCheckPrivilegedGranted(t *testing.T) {
	calls := fakeDocker(t, fakeEngine{engine: true})
	if err := checkPrivileged(context.Background()); err != nil {
		t.Fatalf("checkPrivileged on an engine that grants privileged containers: %v", err)
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), "rmi nodeprint-probe:privileged-") {
		t.Errorf("docker calls:\n%s\nthe probe's image is not removed", b)
	}
}

// On a runner with a registry the image is pulled as kind would pull it;
// an image already in the engine is used without a pull.
func TestEnsureImagePullsOnlyWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		name              string
		present, wantPull bool
	}{
		{name: "present: no pull", present: true},
		{name: "absent, registry reachable: pulled", wantPull: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := fakeDocker(t, fakeEngine{engine: true, present: tc.present, pullOut: "Status: Downloaded newer image"})
			var lines []string
			if err := ensureImage(context.Background(), "kindest/node:v1.36.3", func(s string) { lines = append(lines, s) }); err != nil {
				t.Fatalf("ensureImage: %v", err)
			}
			b, _ := os.ReadFile(calls)
			if pulled := strings.Contains(string(b), "pull kindest/node:v1.36.3"); pulled != tc.wantPull {
				t.Errorf("docker calls:\n%s\npulled %v, want %v", b, pulled, tc.wantPull)
			}
			if len(lines) == 0 {
				t.Error("no progress line says what happened to the image")
			}
		})
	}
}

// Ports asked for together are distinct: asked for one after the other,
// the kernel handed Karpenter's health and metrics servers the same port
// once (the smoke suite of a clean-clone CI run), and Karpenter panicked.
func TestFreePortsAreDistinct(t *testing.T) {
	for range 20 {
		ports, err := freePorts(2)
		if err != nil {
			t.Fatal(err)
		}
		if ports[0] == ports[1] {
			t.Fatalf("freePorts(2) = %v: the same port twice", ports)
		}
	}
}
