package forecast

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

var now = time.Date(2026, 12, 4, 10, 30, 0, 0, time.UTC)

func live() *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Labels = map[string]string{"team": "web"}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1"}}
	return np
}

// claim is a launched, initialised NodeClaim of the live NodePool on node
// name, stamped with hash (version v3 unless given).
func claim(name, hash, arch string, version ...string) *karpv1.NodeClaim {
	v := karpv1.NodePoolHashVersion
	if len(version) > 0 {
		v = version[0]
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{karpv1.NodePoolLabelKey: "general", corev1.LabelArchStable: arch, corev1.LabelInstanceTypeStable: "c-2x"},
		Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: hash, karpv1.NodePoolHashVersionAnnotationKey: v}}}
	nc.Status.NodeName = "node-" + name
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeInitialized)
	return nc
}

func podOn(node, name string, mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": name}}, Spec: corev1.PodSpec{NodeName: node}}
	p.Status.Phase = corev1.PodRunning
	if mod != nil {
		mod(p)
	}
	return p
}

func cluster(t *testing.T) client.Client {
	t.Helper()
	np := live()
	h := np.Hash()
	ds := func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent"}} }
	return fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(np,
		claim("a", h, "amd64"), claim("b", h, "amd64"), claim("old", h, "amd64", "v2"), claim("arm", "other", "arm64", "v2"),
		podOn("node-a", "web-0", nil), podOn("node-a", "agent-a", ds),
		podOn("node-b", "web-1", func(p *corev1.Pod) { p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"} }),
		podOn("node-b", "db-0", nil), podOn("node-b", "done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		podOn("node-old", "cache-0", nil),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntStr(1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db-0"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}},
	).Build()
}

func ptrIntStr(i int) *intstr.IntOrString { v := intstr.FromInt(i); return &v }

// A template label drifts every node stamped with the live hash; one
// stamped by another release's hash version is unknown unless its labels
// break the requirements; pods are counted as a drain evicts them, with
// what holds them; the budget of one node paces the movable ones.
func TestDriftOfATemplateEdit(t *testing.T) {
	edited := live()
	edited.Spec.Template.Labels["generation"] = "2"
	edited.Spec.Template.Spec.Requirements[0].Values = []string{"amd64"}
	sched := "0 9 * * *"
	edited.Spec.Disruption.Budgets = append(edited.Spec.Disruption.Budgets,
		karpv1.Budget{Nodes: "0", Schedule: &sched, Duration: &metav1.Duration{Duration: time.Hour}, Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}})
	f, err := DriftOf(context.Background(), cluster(t), edited, WithClock(clocktesting.NewFakeClock(now)), WithoutDryRun())
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{NodeClaim: "a", Node: "node-a", InstanceType: "c-2x", Drift: "NodePoolDrifted", Pods: 1},
		{NodeClaim: "arm", Node: "node-arm", InstanceType: "c-2x", Drift: "RequirementsDrifted"},
		{NodeClaim: "b", Node: "node-b", InstanceType: "c-2x", Drift: "NodePoolDrifted", Pods: 2,
			HeldBy: []string{"shop/db-0 (PodDisruptionBudget shop/db allows no disruption now)", "shop/web-1 (karpenter.sh/do-not-disrupt)"}},
		{NodeClaim: "old", Node: "node-old", InstanceType: "c-2x", Unknown: "its NodePool hash is version v2, this forecast computes v3 (another Karpenter release)", Pods: 1},
	}
	if diff := cmp.Diff(want, f.Nodes); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
	got := []int{f.Drifting, f.Unknown, f.Evicted, f.Held, f.Budget.Nodes, f.Budget.AllowedNow, f.Budget.Waves}
	if diff := cmp.Diff([]int{3, 1, 3, 1, 4, 1, 2}, got); diff != "" {
		t.Fatalf("drifting, unknown, evicted, held, nodes, allowed now, waves (-want +got):\n%s", diff)
	}
	wantWindow := []Window{{Nodes: "0", Schedule: sched, Duration: time.Hour, NextOpen: time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)}}
	if diff := cmp.Diff(wantWindow, f.Budget.Windows); diff != "" {
		t.Fatalf("windows (-want +got):\n%s", diff)
	}

	By := func(at time.Time) *Drift {
		f, err := DriftOf(context.Background(), cluster(t), edited, WithClock(clocktesting.NewFakeClock(at)), WithoutDryRun())
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// Inside the window nothing may go for drift: no wave can start.
	in := By(time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC))
	if in.Budget.AllowedNow != 0 || in.Budget.Waves != 0 || !in.Budget.Windows[0].InForce {
		t.Fatalf("inside the window: allowed %d, waves %d, in force %v; want 0, 0, true", in.Budget.AllowedNow, in.Budget.Waves, in.Budget.Windows[0].InForce)
	}
}

// Budgets are not in Karpenter's hash: an edit of them alone drifts no node.
func TestDriftOfABudgetEdit(t *testing.T) {
	edited := live()
	edited.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "50%"}}
	f, err := DriftOf(context.Background(), cluster(t), edited, WithClock(clocktesting.NewFakeClock(now)), WithoutDryRun())
	if err != nil {
		t.Fatal(err)
	}
	// arm's labels break the requirements whatever the edit.
	if f.Drifting != 1 || f.Nodes[1].NodeClaim != "arm" || f.Evicted != 0 {
		t.Fatalf("drifting %d (want only arm), evicted %d: %+v", f.Drifting, f.Evicted, f.Nodes)
	}
}

// A NodePool the cluster does not have has nothing to drift.
func TestDriftOfANewNodePool(t *testing.T) {
	np := live()
	np.Name = "new"
	f, err := DriftOf(context.Background(), cluster(t), np, WithoutDryRun())
	if err != nil {
		t.Fatal(err)
	}
	if f.Exists || len(f.Nodes) != 0 || f.Drifting != 0 {
		t.Fatalf("a new NodePool: %+v", f)
	}
}

// The forecast changes nothing: the dry run leaves the live NodePool as
// it was.
func TestDriftOfChangesNothing(t *testing.T) {
	c := cluster(t)
	edited := live()
	edited.Spec.Template.Labels["generation"] = "2"
	f, err := DriftOf(context.Background(), c, edited)
	if err != nil {
		t.Fatal(err)
	}
	if f.Defaulted != "the API server's dry run (its defaults filled in)" || f.Drifting != 3 {
		t.Fatalf("defaulted %q, drifting %d", f.Defaulted, f.Drifting)
	}
	got := &karpv1.NodePool{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "general"}, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(live().Spec.Template.Labels, got.Spec.Template.Labels); diff != "" {
		t.Fatalf("the live NodePool changed (-want +got):\n%s", diff)
	}
}

// A budget with an empty selector covers every pod of its namespace
// (policy/v1), so one that allows no disruption holds each of them; a
// null selector covers none, and another namespace's budget none.
func TestBlockingPDBReadsSelectorsAsPolicyV1(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", Labels: map[string]string{"app": "web"}}}
	budget := func(ns, name string, sel *metav1.LabelSelector) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	for _, c := range []struct {
		pdb  policyv1.PodDisruptionBudget
		want string
	}{
		{budget("shop", "all", &metav1.LabelSelector{}), "shop/all"},
		{budget("shop", "none", nil), ""},
		{budget("other", "all", &metav1.LabelSelector{}), ""},
	} {
		if got := blockingPDB(pod, []policyv1.PodDisruptionBudget{c.pdb}); got != c.want {
			t.Errorf("%s/%s: got %q, want %q", c.pdb.Namespace, c.pdb.Name, got, c.want)
		}
	}
}
