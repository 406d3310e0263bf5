package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// The rollout is done only when the controller saw the newest template,
// every replica runs it, no old pod is left and the new one is available.
func TestRolloutState(t *testing.T) {
	one := int32(1)
	d := func(gen, observed int64, replicas, updated, available int32) *appsv1.Deployment {
		x := &appsv1.Deployment{}
		x.Generation, x.Spec.Replicas = gen, &one
		x.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, AvailableReplicas: available}
		return x
	}
	for _, c := range []struct {
		name string
		d    *appsv1.Deployment
		done bool
	}{
		{"not observed", d(2, 1, 1, 1, 1), false},
		{"old pod only", d(2, 2, 1, 0, 1), false},
		{"old pod terminating", d(2, 2, 2, 1, 1), false},
		{"new pod not available", d(2, 2, 1, 1, 0), false},
		{"done", d(2, 2, 1, 1, 1), true},
	} {
		if got := rolloutState(c.d) == ""; got != c.done {
			t.Errorf("%s: done %t, want %t (%q)", c.name, got, c.done, rolloutState(c.d))
		}
	}
}

// The values replace the chart's own settings by Karpenter's defaults and
// pass the scenario's settings last, with the catalog's path; every
// install rolls the pod.
func TestChartValues(t *testing.T) {
	b, err := chartValues("nodeprint/karpenter-kwok:v1.14.1-abc", map[string]string{"BATCH_IDLE_DURATION": "4s"}, time.Unix(7, 0))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		HostNetwork     bool              `json:"hostNetwork"`
		ImagePullPolicy string            `json:"imagePullPolicy"`
		PodAnnotations  map[string]string `json:"podAnnotations"`
		Settings        map[string]any    `json:"settings"`
		Controller      struct {
			Image map[string]string   `json:"image"`
			Env   []map[string]string `json:"env"`
		} `json:"controller"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"name": "INSTANCE_TYPES_FILE_PATH", "value": "/etc/nodeprint/catalog/instance_types.json"},
		{"name": "BATCH_IDLE_DURATION", "value": "4s"},
	}
	if d := cmp.Diff(want, v.Controller.Env); d != "" {
		t.Errorf("env (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"repository": "nodeprint/karpenter-kwok", "tag": "v1.14.1-abc"}, v.Controller.Image); d != "" {
		t.Errorf("image (-want +got):\n%s", d)
	}
	if !v.HostNetwork || v.ImagePullPolicy != "Never" || v.PodAnnotations[chartRestartAnnotation] != "7000000000" {
		t.Errorf("hostNetwork %t, imagePullPolicy %q, annotations %v", v.HostNetwork, v.ImagePullPolicy, v.PodAnnotations)
	}
	for _, k := range []string{"batchMaxDuration", "batchIdleDuration", "preferencePolicy", "minValuesPolicy"} {
		if v.Settings[k] != "" {
			t.Errorf("settings.%s = %v: the chart's own setting must be emptied (Karpenter's default applies)", k, v.Settings[k])
		}
	}
	if _, err := chartValues("nodeprint/karpenter-kwok", nil, time.Now()); err == nil {
		t.Error("an image without a tag was accepted")
	}
}

// The metrics port is mapped on loopback, to the control plane only.
func TestWithPortMapping(t *testing.T) {
	base := []byte("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: control-plane\n- role: worker\n")
	out, err := withPortMapping(base, 8080, 40001)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(out, cfg); err != nil {
		t.Fatal(err)
	}
	want := []kindv1alpha4.PortMapping{{ContainerPort: 8080, HostPort: 40001, ListenAddress: "127.0.0.1", Protocol: kindv1alpha4.PortMappingProtocolTCP}}
	if d := cmp.Diff(want, cfg.Nodes[0].ExtraPortMappings); d != "" {
		t.Errorf("control plane's port mappings (-want +got):\n%s", d)
	}
	if len(cfg.Nodes[1].ExtraPortMappings) != 0 {
		t.Errorf("a worker got a port mapping: %v", cfg.Nodes[1].ExtraPortMappings)
	}
}

// A running kind cluster is reopened as it was started, from its state:
// with Karpenter in the cluster (the in-cluster provider type) or not.
func TestRunsKarpenterInClusterFromState(t *testing.T) {
	tc := testToolchain(t)
	tc.Work = t.TempDir()
	for name, inCluster := range map[string]bool{"ic": true, "proc": false} {
		dir := filepath.Join(tc.Work, "kind", name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		st := fmt.Sprintf(`{"name": %q, "karpenterInCluster": %t}`, name, inCluster)
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(st), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := RunsKarpenterInCluster(tc, name); got != inCluster {
			t.Errorf("%s: RunsKarpenterInCluster = %t, want %t", name, got, inCluster)
		}
		p, err := New(KindKind, WithToolchain(tc), WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(*KindInCluster); ok != inCluster {
			t.Errorf("%s: New gave %T", name, p)
		}
	}
	if RunsKarpenterInCluster(tc, "none") {
		t.Error("a cluster with no state runs Karpenter in the cluster")
	}
}
