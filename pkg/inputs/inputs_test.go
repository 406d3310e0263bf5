package inputs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func pool(t *testing.T, run string, zones ...string) map[string]any {
	t.Helper()
	np := karpv1.NodePoolSpec{}
	np.Template.Labels = map[string]string{"nodeprint.dev/run": run, "team": "web"}
	np.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: run}
	np.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
	}
	o, err := Object(np, run, "nodeprint.dev/run")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func template(t *testing.T, run, cpu string) map[string]any {
	t.Helper()
	tpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"nodeprint.dev/run": run},
		Containers: []corev1.Container{{Name: "api", Image: "pause", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
	}}
	o, err := Object(tpl, run, "nodeprint.dev/run")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func of(t *testing.T, run string, zones []string, cpu, version string) *Inputs {
	return &Inputs{
		NodePool:  pool(t, run, zones...),
		NodeClass: map[string]any{},
		Workloads: map[string]Workload{"api": {Replicas: 3, Template: template(t, run, cpu)}},
		Catalog:   Catalog{Name: "kwok-generic", Digest: "abc"},
		Karpenter: Karpenter{Version: version, Binary: "b1"},
	}
}

// Two runs of one scenario differ only in their run id: no change.
func TestTheRunIDIsNoChange(t *testing.T) {
	a := of(t, "web-abcde", []string{"a", "b", "c"}, "500m", "v1.14.1")
	b := of(t, "web-fghij", []string{"a", "b", "c"}, "500m", "v1.14.1")
	if d := Diff(a, b); len(d) != 0 {
		t.Fatalf("two runs of one scenario differ: %v", d)
	}
}

// Each change is named by a path an engineer can read, with both values.
func TestDiffNamesEachChange(t *testing.T) {
	was := of(t, "web-abcde", []string{"a", "b", "c"}, "500m", "v1.14.1")
	now := of(t, "web-fghij", []string{"a"}, "2", "v1.15.0")
	want := []Change{
		{Path: "karpenter.version", Was: "v1.14.1", Now: "v1.15.0"},
		{Path: "nodePool.requirements[topology.kubernetes.io/zone]", Was: "In [a b c]", Now: "In [a]"},
		{Path: "workloads.api.containers[api].resources.requests.cpu", Was: "500m", Now: "2"},
	}
	if d := cmp.Diff(want, Diff(was, now)); d != "" {
		t.Fatalf("Diff (-want +got):\n%s", d)
	}
	kinds := map[Kind]int{}
	for _, c := range Diff(was, now) {
		kinds[c.Kind()]++
	}
	if d := cmp.Diff(map[Kind]int{KindKarpenter: 1, KindPolicy: 1, KindWorkload: 1}, kinds); d != "" {
		t.Errorf("kinds (-want +got):\n%s", d)
	}
	if s := Summary(Diff(was, now), 2); !strings.Contains(s, "karpenter.version: v1.14.1 → v1.15.0") || !strings.Contains(s, "and 1 more") {
		t.Errorf("Summary = %q", s)
	}
}

// A requirement, a workload or a setting that appears or goes is a change
// from or to nothing.
func TestAddedAndRemovedInputs(t *testing.T) {
	was := of(t, "r1", []string{"a"}, "1", "v1.14.1")
	now := of(t, "r2", []string{"a"}, "1", "v1.14.1")
	now.Workloads["worker"] = Workload{Replicas: 1, Template: template(t, "r2", "1")}
	now.Karpenter.Settings = map[string]string{"BATCH_MAX_DURATION": "20s"}
	d := Diff(was, now)
	paths := map[string]Change{}
	for _, c := range d {
		paths[c.Path] = c
	}
	if c, ok := paths["karpenter.settings.BATCH_MAX_DURATION"]; !ok || c.Was != "" || c.Now != "20s" {
		t.Errorf("the new setting: %+v (all: %v)", c, d)
	}
	if c, ok := paths["workloads.worker.replicas"]; !ok || c.Was != "" || c.Now != "1" {
		t.Errorf("the new workload: %+v (all: %v)", c, d)
	}
	if Diff(nil, now) != nil {
		t.Error("a baseline without inputs compares with nothing")
	}
}

// A scale-in step that changed is the workloads' change (L3), named by its path.
func TestScaleInStepsAreWorkloadInputs(t *testing.T) {
	was := &Inputs{ScaleIn: []map[string]any{{"scale": map[string]any{"workload": "web", "replicas": 1.0}}}}
	now := &Inputs{ScaleIn: []map[string]any{{"scale": map[string]any{"workload": "web", "replicas": 2.0}}}}
	d := Diff(was, now)
	if len(d) != 1 || d[0].Path != "scaleIn.steps[0].scale.replicas" || d[0].Kind() != KindWorkload {
		t.Fatalf("want one workload change of scaleIn.steps[0].scale.replicas, got %+v", d)
	}
}
