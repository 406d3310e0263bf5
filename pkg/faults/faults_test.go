package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func target(t *testing.T) *Target {
	t.Helper()
	replicas := int32(8)
	d := &appsv1.Deployment{}
	d.Name = "api"
	d.Spec.Replicas = &replicas
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "api", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}}}
	d.Spec.Template.Annotations = map[string]string{"kwok.x-k8s.io/usage-memory": "424Mi"}
	np := &karpv1.NodePool{}
	np.Name = "run1"
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Name: "run1"}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: kwokv1alpha1.InstanceCPULabelKey, Operator: corev1.NodeSelectorOpGt, Values: []string{"0"}}}
	return &Target{
		Client: fake.NewClientBuilder().WithScheme(kube.Scheme).Build(), Run: "run1",
		NodePool: np, NodeClass: &kwokv1alpha1.KWOKNodeClass{}, Deployments: []*appsv1.Deployment{d},
		Largest: Shape{CPU: resource.MustParse("256"), Memory: resource.MustParse("1Ti")},
	}
}

func validate(f *scenario.Fault) []string {
	var out []string
	Validate(f, func(field, msg string, args ...any) { out = append(out, field) })
	return out
}

func TestCatalogIsComplete(t *testing.T) {
	want := []string{"apiserver-degraded", "capacity-shortage", "consolidation-churn", "cpu-spike", "crash-loop", "do-not-disrupt", "image-pull-failure",
		"memory-leak", "missing-nodeclass", "node-finalizer", "node-not-ready", "nodepool-limits", "nodepool-mismatch", "oversized-requests", "pdb-blocks-eviction", "registration-blocked", "slow-boot", "termination-refused"}
	var got []string
	for _, d := range Catalog() {
		got = append(got, d.Name)
		if d.Summary == "" || (d.Layer != L1 && d.Layer != L2 && d.Layer != L3) {
			t.Errorf("%s: needs a summary and a layer", d.Name)
		}
		// Every default must itself be valid.
		if errs := validate(&scenario.Fault{Name: d.Name}); len(errs) > 0 {
			t.Errorf("%s: defaults invalid at %v", d.Name, errs)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("catalog: got %v, want %v", got, want)
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	cases := map[string]struct {
		f    scenario.Fault
		want string
	}{
		"unknown fault":   {scenario.Fault{Name: "disk-full"}, "spec.fault.name"},
		"unknown param":   {scenario.Fault{Name: "memory-leak", Params: scenario.Params{"speed": "1"}}, "spec.fault.params.speed"},
		"bad quantity":    {scenario.Fault{Name: "memory-leak", Params: scenario.Params{"rate": "fast"}}, "spec.fault.params.rate"},
		"negative number": {scenario.Fault{Name: "cpu-spike", Params: scenario.Params{"factor": "-2"}}, "spec.fault.params.factor"},
		"bad duration":    {scenario.Fault{Name: "slow-boot", Params: scenario.Params{"delay": "soon"}}, "spec.fault.params.delay"},
		"share of all":    {scenario.Fault{Name: "apiserver-degraded", Params: scenario.Params{"refuse": "1"}}, "spec.fault.params.refuse"},
		"negative share":  {scenario.Fault{Name: "apiserver-degraded", Params: scenario.Params{"refuse": "-0.1"}}, "spec.fault.params.refuse"},
		"wrong layer":     {scenario.Fault{Name: "slow-boot", Expect: &scenario.Expectation{Layer: "L3"}}, "spec.fault.expect.layer"},
	}
	for name, tc := range cases {
		if got := validate(&tc.f); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: got errors at %v, want one at %s", name, got, tc.want)
		}
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	tg := target(t)
	delete(tg.Deployments[0].Spec.Template.Spec.Containers[0].Resources.Limits, corev1.ResourceMemory)
	if _, err := New(&scenario.Fault{Name: "memory-leak"}, tg); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("a leak without a memory limit: got %v", err)
	}
	if _, err := New(&scenario.Fault{Name: "crash-loop", Params: scenario.Params{"workload": "nope"}}, target(t)); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown workload: got %v", err)
	}
	if _, err := New(&scenario.Fault{Name: "apiserver-degraded", Params: scenario.Params{"refuse": "1"}}, target(t)); err == nil || !strings.Contains(err.Error(), "params.refuse") {
		t.Errorf("refusing every connection must be rejected: got %v", err)
	}
	// The documented range starts at 0: latency and cuts without refusals.
	for _, share := range []string{"0", "0.0", "0.99"} {
		if errs := validate(&scenario.Fault{Name: "apiserver-degraded", Params: scenario.Params{"refuse": share}}); len(errs) > 0 {
			t.Errorf("refuse: %s is in the documented range, got errors at %v", share, errs)
		}
	}
	inj, err := New(&scenario.Fault{Name: "apiserver-degraded"}, target(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := inj.Inject(context.Background()); err == nil || !strings.Contains(err.Error(), "local provider") {
		t.Errorf("without a cluster that runs Karpenter: got %v", err)
	}
}

func inject(t *testing.T, tg *Target, f scenario.Fault) Injector {
	t.Helper()
	inj, err := New(&f, tg)
	if err != nil {
		t.Fatal(err)
	}
	if err := inj.Inject(context.Background()); err != nil {
		t.Fatal(err)
	}
	return inj
}

func listStages(t *testing.T, c client.Client) []unstructured.Unstructured {
	t.Helper()
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("kwok.x-k8s.io/v1alpha1")
	l.SetKind("StageList")
	if err := c.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestMemoryLeakRampsToTheLimitAndRestores(t *testing.T) {
	tg := target(t)
	inj := inject(t, tg, scenario.Fault{Name: "memory-leak", Params: scenario.Params{"rate": "20Mi"}})
	a := tg.Deployments[0].Spec.Template.Annotations
	// (1Gi - 424Mi) / 20Mi per second = 30 s from start to the limit.
	if a["nodeprint.dev/leak-memory-per-second"] != "20Mi" || a["nodeprint.dev/leak-period-seconds"] != "30" {
		t.Errorf("annotations: %v", a)
	}
	if tg.Deployments[0].Spec.Template.Labels[Label] != "memory-leak" {
		t.Error("pods must carry the fault label the stage selects")
	}
	if inj.MinObserve() != 70*time.Second {
		t.Errorf("MinObserve = %s, want two periods and 10 s", inj.MinObserve())
	}
	st := listStages(t, tg.Client)
	if len(st) != 1 || st[0].GetLabels()[Label] != "memory-leak" {
		t.Fatalf("want one labelled stage, got %d", len(st))
	}
	if d, _, _ := unstructured.NestedInt64(st[0].Object, "spec", "delay", "durationMilliseconds"); d != 30000 {
		t.Errorf("OOM stage delay %d ms, want the 30 s the leak takes", d)
	}
	left, err := Leftovers(context.Background(), tg.Client)
	if err != nil || len(left) != 1 {
		t.Fatalf("before restore: %v %v", left, err)
	}
	if err := inj.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := inj.Restore(context.Background()); err != nil {
		t.Fatalf("a second restore must be a no-op: %v", err)
	}
	if left, _ := Leftovers(context.Background(), tg.Client); len(left) != 0 {
		t.Errorf("after restore: %v", left)
	}
}

// pdb-blocks-eviction asks the run for a budget that allows no eviction
// over its workload's pods, in place of the scenario's, and refuses a
// scenario that removes no node, where it could not show.
func TestBlockingPDBReplacesTheWorkloadsBudget(t *testing.T) {
	tg := target(t)
	tg.Scenario = &scenario.Scenario{}
	got := map[string]policyv1.PodDisruptionBudgetSpec{}
	tg.SetPDB = func(d *appsv1.Deployment, spec policyv1.PodDisruptionBudgetSpec) { got[d.Name] = spec }
	if _, err := New(&scenario.Fault{Name: "pdb-blocks-eviction"}, tg); err == nil || !strings.Contains(err.Error(), "scaleIn") {
		t.Errorf("a scenario without scaleIn: got %v", err)
	}
	tg.Scenario.Spec.ScaleIn = &scenario.ScaleIn{}
	inj := inject(t, tg, scenario.Fault{Name: "pdb-blocks-eviction"})
	zero := intstr.FromInt32(0)
	if d := cmp.Diff(map[string]policyv1.PodDisruptionBudgetSpec{"api": {MaxUnavailable: &zero}}, got); d != "" {
		t.Errorf("budgets set (-want +got):\n%s", d)
	}
	if l := tg.Deployments[0].Spec.Template.Labels[Label]; l != "pdb-blocks-eviction" {
		t.Errorf("pod template labels %v", tg.Deployments[0].Spec.Template.Labels)
	}
	if err := inj.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// do-not-disrupt is the pod-level opt-out Karpenter reads, on the
// workload's pod template only, and it refuses a scenario that removes no
// node, where it could not show.
func TestDoNotDisruptAnnotatesTheWorkloadOfAScaleIn(t *testing.T) {
	tg := target(t)
	tg.Scenario = &scenario.Scenario{}
	if _, err := New(&scenario.Fault{Name: "do-not-disrupt"}, tg); err == nil || !strings.Contains(err.Error(), "scaleIn") {
		t.Errorf("a scenario without scaleIn: got %v", err)
	}
	tg.Scenario.Spec.ScaleIn = &scenario.ScaleIn{}
	inj := inject(t, tg, scenario.Fault{Name: "do-not-disrupt"})
	tpl := tg.Deployments[0].Spec.Template
	if tpl.Annotations["karpenter.sh/do-not-disrupt"] != "true" || tpl.Labels[Label] != "do-not-disrupt" {
		t.Errorf("pod template: annotations %v, labels %v", tpl.Annotations, tpl.Labels)
	}
	if err := inj.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left, _ := Leftovers(context.Background(), tg.Client); len(left) != 0 {
		t.Errorf("after restore: %v", left)
	}
}

func TestPolicyFaultsEditTheNodePool(t *testing.T) {
	tg := target(t)
	inject(t, tg, scenario.Fault{Name: "nodepool-mismatch"})
	reqs := tg.NodePool.Spec.Template.Spec.Requirements
	if len(reqs) != 1 || reqs[0].Operator != corev1.NodeSelectorOpLt || reqs[0].Values[0] != "2" {
		t.Errorf("mismatch: want instance-cpu Lt 2 (the pod's 1500m rounded up) replacing the old requirement, got %+v", reqs)
	}
	tg = target(t)
	inject(t, tg, scenario.Fault{Name: "nodepool-limits"})
	if q := tg.NodePool.Spec.Limits[corev1.ResourceCPU]; q.String() != "3" {
		t.Errorf("limits: want a quarter of 8 × 1500m = 3, got %s", q.String())
	}
	tg = target(t)
	inject(t, tg, scenario.Fault{Name: "missing-nodeclass"})
	if n := tg.NodePool.Spec.Template.Spec.NodeClassRef.Name; n != "run1-missing" {
		t.Errorf("missing-nodeclass: got %q", n)
	}
	tg = target(t)
	inject(t, tg, scenario.Fault{Name: "slow-boot", Params: scenario.Params{"delay": "45s"}})
	if d := tg.NodeClass.Spec.NodeRegistrationDelay.Duration; d != 45*time.Second {
		t.Errorf("slow-boot: got %s", d)
	}
	tg = target(t)
	inject(t, tg, scenario.Fault{Name: "oversized-requests"})
	if q := tg.Deployments[0].Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Value() != 512 {
		t.Errorf("oversized: want 2 × 256 CPUs, got %s", q.String())
	}
}

func TestCapacityShortageOwnsItsConfigMap(t *testing.T) {
	tg := target(t)
	inj := inject(t, tg, scenario.Fault{Name: "capacity-shortage", Params: scenario.Params{"zone": "test-zone-a"}})
	cm := &corev1.ConfigMap{}
	if err := tg.Client.Get(context.Background(), client.ObjectKey{Namespace: KarpenterNS, Name: CapacityConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["refuse"], "capacityType: spot") || !strings.Contains(cm.Data["refuse"], "zone: test-zone-a") {
		t.Errorf("refuse rules: %q", cm.Data["refuse"])
	}
	// A second shortage on the same cluster would silently merge: refuse it.
	second, _ := New(&scenario.Fault{Name: "capacity-shortage"}, &Target{Client: tg.Client, Run: "run2", Deployments: tg.Deployments})
	if err := second.Inject(context.Background()); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second shortage: got %v", err)
	}
	if err := inj.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left, _ := Leftovers(context.Background(), tg.Client); len(left) != 0 {
		t.Errorf("after restore: %v", left)
	}
}

// node-finalizer binds its stage to the run and refuses a scenario that
// removes no node; its restore takes its finalizer, and only its, off the
// run's Nodes, and a Node of the run left with it is a leftover.
func TestNodeFinalizerReleasesTheRunsNodes(t *testing.T) {
	ctx := context.Background()
	tg := target(t)
	tg.Scenario = &scenario.Scenario{}
	if _, err := New(&scenario.Fault{Name: "node-finalizer"}, tg); err == nil || !strings.Contains(err.Error(), "scaleIn") {
		t.Errorf("a scenario without scaleIn: got %v", err)
	}
	tg.Scenario.Spec.ScaleIn = &scenario.ScaleIn{}
	inj := inject(t, tg, scenario.Fault{Name: "node-finalizer"})
	st := listStages(t, tg.Client)
	if len(st) != 1 || st[0].GetName() != "nodeprint-node-finalizer-run1" {
		t.Fatalf("stages: %v", st)
	}
	// The stage adds the finalizer restore and Leftovers look for.
	add, _, _ := unstructured.NestedSlice(st[0].Object, "spec", "next", "finalizers", "add")
	if diff := cmp.Diff([]any{map[string]any{"value": NodeFinalizer}}, add); diff != "" {
		t.Errorf("the stage's finalizers (-want +got):\n%s", diff)
	}
	node := func(name, pool string, finalizers ...string) *corev1.Node {
		n := &corev1.Node{}
		n.Name, n.Labels, n.Finalizers = name, map[string]string{karpv1.NodePoolLabelKey: pool}, finalizers
		if err := tg.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	node("held", "run1", "karpenter.sh/termination", NodeFinalizer)
	node("free", "run1", "karpenter.sh/termination")
	if left, _ := Leftovers(ctx, tg.Client); !slices.Contains(left, "Node/held (finalizer "+NodeFinalizer+")") {
		t.Errorf("a held Node is not a leftover: %v", left)
	}
	if err := inj.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{"held": {"karpenter.sh/termination"}, "free": {"karpenter.sh/termination"}} {
		got := &corev1.Node{}
		if err := tg.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Finalizers); diff != "" {
			t.Errorf("Node %s's finalizers after restore (-want +got):\n%s", name, diff)
		}
	}
	if left, _ := Leftovers(ctx, tg.Client); len(left) != 0 {
		t.Errorf("after restore: %v", left)
	}
}

// Only a fault on the pods' own clock counts its observation from the
// pods' start: the CPU spike does, a crash loop does not.
func TestPodClocked(t *testing.T) {
	for _, c := range []struct {
		f    scenario.Fault
		want bool
	}{
		{scenario.Fault{Name: "cpu-spike", Params: scenario.Params{"factor": "4"}}, true},
		{scenario.Fault{Name: "crash-loop"}, false},
	} {
		inj, err := New(&c.f, target(t))
		if err != nil {
			t.Fatalf("%s: %v", c.f.Name, err)
		}
		if _, ok := inj.(PodClocked); ok != c.want {
			t.Errorf("%s: PodClocked %v, want %v", c.f.Name, ok, c.want)
		}
	}
}
