package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// The wrapper kind runs as docker: the first --privileged of `run` becomes
// the route's flags, that of `exec` goes, everything else reaches the real
// docker unchanged, arguments with spaces and a --privileged after the
// image (the container's own command line) included.
func TestDockerWrapperRewritesOnlyPrivileged(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real-docker")
	// The real docker prints each argument on a line of its own.
	if err := os.WriteFile(real, []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := KindRoute{Dropped: []string{"SYS_RESOURCE"}}
	wdir, err := r.writeWrapper(dir, real)
	if err != nil {
		t.Fatal(err)
	}
	flags := r.wrapperRunFlags()
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"run", []string{"run", "--name", "n", "--privileged", "--label", "a b", "img", "--privileged"},
			append(append([]string{"run", "--name", "n"}, flags...), "--label", "a b", "img", "--privileged")},
		{"exec", []string{"exec", "--privileged", "-i", "n", "sh", "-c", "echo 'x y'"}, []string{"exec", "-i", "n", "sh", "-c", "echo 'x y'"}},
		{"exec without it", []string{"exec", "n", "true"}, []string{"exec", "n", "true"}},
		{"other commands", []string{"ps", "-a", "--privileged"}, []string{"ps", "-a", "--privileged"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(filepath.Join(wdir, "docker"), c.args...).Output()
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("the real docker got (-want +got):\n%s", d)
			}
		})
	}
	if !strings.Contains(strings.Join(flags, " "), "--cap-add ALL --cap-drop SYS_RESOURCE") {
		t.Errorf("flags %q: want every capability but SYS_RESOURCE", flags)
	}
}

// What each route adds to the rendered configuration: nothing for a
// privileged node on cgroup v2; failCgroupV1 on cgroup v1; kubelet's and
// containerd's oom_score_adj settings where SYS_RESOURCE is dropped.
func TestRouteConfig(t *testing.T) {
	base := []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nname: a\nnodes:\n- role: control-plane\n  image: nodeprint/kind-node:v1.36.3\n")
	for _, c := range []struct {
		name              string
		route             KindRoute
		kubeadm, containd []string
	}{
		{name: "privileged, cgroup v2", route: KindRoute{Privileged: true}},
		{name: "privileged, cgroup v1", route: KindRoute{Privileged: true, CgroupV1: true},
			kubeadm: []string{"kind: KubeletConfiguration\nfailCgroupV1: false\n"}},
		{name: "wrapper without SYS_RESOURCE, cgroup v1", route: KindRoute{Dropped: []string{"SYS_RESOURCE"}, CgroupV1: true},
			kubeadm:  []string{"kind: KubeletConfiguration\nfailCgroupV1: false\noomScoreAdj: 0\n"},
			containd: []string{"[plugins.\"io.containerd.grpc.v1.cri\"]\n  restrict_oom_score_adj = true\n"}},
		{name: "wrapper without SYS_TIME, cgroup v2", route: KindRoute{Dropped: []string{"SYS_TIME"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := routeConfig(base, c.route)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &kindv1alpha4.Cluster{}
			if err := yaml.UnmarshalStrict(b, cfg); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if d := cmp.Diff(c.kubeadm, cfg.KubeadmConfigPatches); d != "" {
				t.Errorf("kubeadmConfigPatches (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.containd, cfg.ContainerdConfigPatches); d != "" {
				t.Errorf("containerdConfigPatches (-want +got):\n%s", d)
			}
			if cfg.Name != "a" || len(cfg.Nodes) != 1 || cfg.Nodes[0].Image != "nodeprint/kind-node:v1.36.3" {
				t.Errorf("the rest of the configuration changed:\n%s", b)
			}
		})
	}
}

// The capabilities missing from a bounding set, as this project's VM
// shows dockerd's (every capability but SYS_RESOURCE, bit 24).
func TestMissingCaps(t *testing.T) {
	got, err := missingCaps("000001fffeffffff")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"SYS_RESOURCE"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got, _ := missingCaps("000001ffffffffff"); len(got) != 0 {
		t.Errorf("a full set: %v missing", got)
	}
	if _, err := missingCaps("zz"); err == nil {
		t.Error("a bad mask is no error")
	}
}

// The node containers' peak memory is the sum of each container's cgroup
// high-water mark; a cluster without a running node is an error.
func TestNodeContainersPeakMemory(t *testing.T) {
	for _, c := range []struct {
		name, ps string
		want     int64
		wantErr  bool
	}{
		{name: "two nodes", ps: "aaa bbb", want: 2 * 1048576},
		{name: "no node", ps: "", wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			script := "#!/bin/sh\ncase \"$1\" in\nps) echo " + c.ps + " ;;\nexec) echo 1048576 ;;\nesac\n"
			if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			k := &KindCluster{Local: &Local{opts: Options{name: "a"}}}
			got, err := k.NodeContainersPeakMemory(t.Context())
			if (err != nil) != c.wantErr || got != c.want {
				t.Errorf("got %d, %v; want %d (error %v)", got, err, c.want, c.wantErr)
			}
		})
	}
}

// The kind scheduler gets the local provider's configuration (backoff
// capped, rate limits off) with kubeadm's kubeconfig, mounted into every
// control-plane node and passed with --config.
func TestKindScheduler(t *testing.T) {
	b, err := kindScheduler()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"podMaxBackoffSeconds: 1", "qps: 5000", "leaderElect: false", "kubeconfig: /etc/kubernetes/scheduler.conf"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scheduler configuration lacks %q:\n%s", want, b)
		}
	}
	base := []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n- role: worker\n")
	out, err := withScheduler(base, "/w/a/kube-scheduler.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(out, cfg); err != nil {
		t.Fatal(err)
	}
	want := []kindv1alpha4.Mount{{HostPath: "/w/a/kube-scheduler.yaml", ContainerPath: kindSchedulerPath, Readonly: true}}
	if d := cmp.Diff(want, cfg.Nodes[0].ExtraMounts); d != "" {
		t.Errorf("control plane's mounts (-want +got):\n%s", d)
	}
	if len(cfg.Nodes[1].ExtraMounts) != 0 {
		t.Errorf("a worker got the scheduler's configuration: %v", cfg.Nodes[1].ExtraMounts)
	}
	if len(cfg.KubeadmConfigPatches) != 1 || !strings.Contains(cfg.KubeadmConfigPatches[0], "value: "+kindSchedulerPath) {
		t.Errorf("kubeadm patches %q: want --config %s for the scheduler", cfg.KubeadmConfigPatches, kindSchedulerPath)
	}
}
