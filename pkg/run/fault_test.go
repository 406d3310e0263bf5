package run

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func TestInputsIgnoreTheRunButNotTheInputs(t *testing.T) {
	s := load(t, "web-service")
	a, err := Build(s, "web-service-aaaaa")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, "web-service-bbbbb")
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{karpenter: inputs.Karpenter{Version: "v1.14.1", Binary: "abc"}}
	cat := &catalog.Catalog{Digest: "d1"}
	of := func(o *Objects) *inputs.Inputs {
		t.Helper()
		in, err := r.inputsOf(s, o, cat)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	if d := inputs.Diff(of(a), of(b)); len(d) != 0 {
		t.Fatalf("two runs of one scenario must have the same inputs: %v", d)
	}
	b.NodePool.Spec.Limits = map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("4")}
	b.Deployments[0].Spec.Template.Spec.Containers[0].Image = "example.com/other:v2"
	got := map[string]string{}
	for _, c := range inputs.Diff(of(a), of(b)) {
		got[c.Path] = c.Was + " → " + c.Now
	}
	want := map[string]string{"nodePool.limits.cpu": " → 4", "workloads.web.containers[web].image": "registry.k8s.io/pause:3.10 → example.com/other:v2"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("changed inputs (-want +got):\n%s", d)
	}
}

// A scenario's Karpenter settings are part of its inputs: a baseline
// recorded with the defaults reads them as a change of Karpenter.
func TestInputsRecordKarpenterSettings(t *testing.T) {
	s := load(t, "web-service")
	o, err := Build(s, "web-service-aaaaa")
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{karpenter: inputs.Karpenter{Version: "v1.14.1", Binary: "abc"}}
	before, err := r.inputsOf(s, o, &catalog.Catalog{Digest: "d1"})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Karpenter = &scenario.Karpenter{Settings: scenario.KarpenterSettings{BatchMaxDuration: &scenario.Duration{Duration: 30 * time.Second}}}
	after, err := r.inputsOf(s, o, &catalog.Catalog{Digest: "d1"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range inputs.Diff(before, after) {
		paths = append(paths, c.Path+": "+c.Was+" → "+c.Now)
	}
	if d := cmp.Diff([]string{"karpenter.settings.BATCH_MAX_DURATION:  → 30s"}, paths); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if r.karpenter.Settings != nil {
		t.Error("the runner's Karpenter was changed")
	}
}
