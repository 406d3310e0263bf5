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
	// refusesPrivileged: `run --privileged` fails as this project's
	// engine does (exit 125, unable to apply caps) instead of reaching the
	// probe's missing entrypoint (exit 127).
	refusesPrivileged bool
	// refusesWrapper: `run --cap-add ALL ...` (the unprivileged route's
	// flags) fails the same way.
	refusesWrapper bool
	// present: `image inspect` finds the node image.
	present bool
}

// fakeDocker puts a docker command first in PATH that answers as e says
// and returns the file its calls are logged to, one per line.
func fakeDocker(t *testing.T, e fakeEngine) string {
	t.Helper()
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	granted := `echo 'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/nodeprint-probe": stat /nodeprint-probe: no such file or directory: unknown.'; exit 127`
	refused := `echo 'docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown.'; echo "Run 'docker run --help' for more information"; exit 125`
	answer := map[bool]string{false: granted, true: refused}
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
case "$*" in
*CgroupVersion*) echo 1; exit 0 ;;
esac
case "$1" in
info) %s ;;
image) %s ;;
import) cat >/dev/null; echo sha256:0098d9a5 ;;
run) case "$*" in *--privileged*) %s ;; *) %s ;; esac ;;
rmi) echo "Untagged: $2" ;;
esac
`, calls, map[bool]string{true: "echo 20.10.24", false: "echo 'Cannot connect to the Docker daemon' >&2; exit 1"}[e.engine],
		map[bool]string{true: "echo sha256:abc", false: "echo 'Error: No such image' >&2; exit 1"}[e.present],
		answer[e.refusesPrivileged], answer[e.refusesWrapper])
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
	fakeDocker(t, fakeEngine{})
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

// A node image in kind-config/cluster.yaml that the engine lacks and
// nodeprint does not build: Up fails before anything is built or created,
// naming the image and what to do, as an environment failure.
func TestKindUpWithAForeignNodeImageTheEngineLacks(t *testing.T) {
	fakeDocker(t, fakeEngine{engine: true})
	tc := kindToolchain(t, "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n  image: kindest/node:v1.36.3\n")
	_, err := failedKindUp(t, tc, "without the node image")
	var pe *PhaseError
	var ie *NodeImageError
	if !errors.As(err, &pe) || pe.Phase != "docker" || !errors.As(err, &ie) {
		t.Fatalf("Up: %v, want a *PhaseError of phase docker holding a *NodeImageError", err)
	}
	for _, want := range []string{"kindest/node:v1.36.3", KindNodeImage(tc), "make kind-node", "docker load", "nodes[].image"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
}

// An engine that refuses privileged containers and also the unprivileged
// route's flags: Up fails before anything is built or created, quoting the
// engine on both, and removes the probe's image.
func TestKindUpOnAnEngineThatRefusesBothRoutes(t *testing.T) {
	calls := fakeDocker(t, fakeEngine{engine: true, refusesPrivileged: true, refusesWrapper: true})
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
	if re.Route != want || !strings.Contains(re.Flags, "--cap-add ALL") {
		t.Errorf("the route's answer %q with flags %q: want %q with --cap-add ALL", re.Route, re.Flags, want)
	}
	for _, w := range []string{"refuses privileged containers", "unable to apply caps", "nodeprint's way round it", "--cap-drop", "CapBnd", "local provider"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error %q does not say %q", err, w)
		}
	}
	b, _ := os.ReadFile(calls)
	image := fmt.Sprintf("nodeprint-probe:privileged-%d", os.Getpid())
	for _, w := range []string{"import --message", "run --rm --network none --privileged --entrypoint /nodeprint-probe " + image,
		"run --rm --network none --cap-add ALL --cap-drop ", "rmi " + image} {
		if !strings.Contains(string(b), w) {
			t.Errorf("docker calls:\n%s\nwant %q", b, w)
		}
	}
	if strings.Contains(string(b), "image inspect") {
		t.Errorf("docker calls:\n%s\nno node image is looked for on an engine that cannot run it", b)
	}
}

// The route comes from docker's exit codes alone: 127 (the entrypoint is
// missing) means the capabilities were granted. Privileged when the
// engine grants it; else the wrapper's flags, each capability the engine
// lacks dropped; cgroup v1 read from the engine.
func TestDecideKindRoute(t *testing.T) {
	for _, tc := range []struct {
		name           string
		engine         fakeEngine
		wantPrivileged bool
	}{
		{name: "privileged granted", engine: fakeEngine{engine: true}, wantPrivileged: true},
		{name: "privileged refused, the wrapper's flags granted", engine: fakeEngine{engine: true, refusesPrivileged: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := fakeDocker(t, tc.engine)
			r, err := decideKindRoute(context.Background())
			if err != nil {
				t.Fatalf("decideKindRoute: %v", err)
			}
			if r.Privileged != tc.wantPrivileged || !r.CgroupV1 {
				t.Errorf("route %+v: want privileged %v on cgroup v1", r, tc.wantPrivileged)
			}
			b, _ := os.ReadFile(calls)
			if !strings.Contains(string(b), "rmi nodeprint-probe:privileged-") {
				t.Errorf("docker calls:\n%s\nthe probe's image is not removed", b)
			}
			if tc.wantPrivileged {
				if len(r.Dropped) > 0 || strings.Contains(string(b), "--cap-add") {
					t.Errorf("route %+v, calls:\n%s\nthe wrapper's flags are tried only where privileged is refused", r, b)
				}
				return
			}
			if len(r.Dropped) == 0 {
				t.Fatalf("route %+v drops no capability", r)
			}
			for _, c := range r.Dropped {
				if !strings.Contains(string(b), "--cap-drop "+c) {
					t.Errorf("docker calls:\n%s\nthe probe did not drop %s", b, c)
				}
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
