package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Every component of the local control plane that would elect a leader
// runs without: one instance has nobody to hand over to, and a lease it
// cannot renew while the API server stalls would make it exit.
func TestKwokctlConfigRunsEveryComponentWithoutLeaderElection(t *testing.T) {
	dir := t.TempDir()
	tc := &toolchain.Toolchain{Bin: "/bin-np", Versions: toolchain.Versions{Kubernetes: "v1.36.3"}}
	path := filepath.Join(dir, "kwok.yaml")
	if err := writeKwokctlConfig(path, tc, filepath.Join(dir, "cache")); err != nil {
		t.Fatal(err)
	}
	var cfg kwokctlConfig
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatal(err)
	}
	var kcm []extraArg
	for _, p := range cfg.ComponentsPatches {
		if p.Name == "kube-controller-manager" {
			kcm = append(kcm, p.ExtraArgs...)
		}
	}
	if diff := cmp.Diff([]extraArg{{Key: "leader-elect", Value: "false"}}, kcm); diff != "" {
		t.Errorf("kube-controller-manager's extra flags (-want +got):\n%s", diff)
	}
	var sched struct {
		LeaderElection struct {
			LeaderElect *bool `json:"leaderElect"`
		} `json:"leaderElection"`
	}
	sb, err := os.ReadFile(cfg.Options.KubeSchedulerConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(sb, &sched); err != nil {
		t.Fatal(err)
	}
	if le := sched.LeaderElection.LeaderElect; le == nil || *le {
		t.Errorf("the scheduler's configuration does not turn leader election off:\n%s", sb)
	}
}
