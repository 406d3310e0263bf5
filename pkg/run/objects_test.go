package run

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json"}
	s, err := l.Load("../../fixtures/scenarios/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildIsolatesTheRun(t *testing.T) {
	s := load(t, "zone-spread")
	o, err := Build(s, "zone-spread-abcde")
	if err != nil {
		t.Fatal(err)
	}
	if o.Namespace.Name != "zone-spread-abcde" || o.NodeClass.Name != "zone-spread-abcde" || o.NodePool.Name != "zone-spread-abcde" {
		t.Fatalf("objects must be named after the run: %s %s %s", o.Namespace.Name, o.NodeClass.Name, o.NodePool.Name)
	}
	if got := o.NodePool.Spec.Template.Labels[observe.RunLabel]; got != "zone-spread-abcde" {
		t.Fatalf("the run's nodes must carry the run label, got %q", got)
	}
	if ref := o.NodePool.Spec.Template.Spec.NodeClassRef; ref == nil || ref.Name != "zone-spread-abcde" || ref.Kind != "KWOKNodeClass" {
		t.Fatalf("the NodePool must use the run's node class, got %+v", ref)
	}
	// The scenario's policy is kept: its zone requirement is there.
	if d := cmp.Diff(s.NodePool.Spec.Template.Spec.Requirements, o.NodePool.Spec.Template.Spec.Requirements); d != "" {
		t.Fatalf("requirements changed (-scenario +built):\n%s", d)
	}
	if len(o.Deployments) != 1 {
		t.Fatalf("want one deployment, got %d", len(o.Deployments))
	}
	pod := o.Deployments[0].Spec.Template
	if pod.Spec.NodeSelector[observe.RunLabel] != "zone-spread-abcde" {
		t.Fatalf("pods must select the run's nodes: %v", pod.Spec.NodeSelector)
	}
	c := pod.Spec.TopologySpreadConstraints[0]
	if c.LabelSelector == nil || c.LabelSelector.MatchLabels[observe.WorkloadLabel] != "payments" || c.LabelSelector.MatchLabels[observe.RunLabel] != "zone-spread-abcde" {
		t.Fatalf("a spread without selector selects the workload's pods of this run: %+v", c.LabelSelector)
	}
	if s.Spec.Workloads[0].TopologySpreadConstraints[0].LabelSelector != nil {
		t.Fatal("Build must not modify the scenario")
	}
	req := pod.Spec.Containers[0].Resources.Requests
	if req.Cpu().String() != "1" || req.Memory().String() != "2Gi" {
		t.Fatalf("requests %v", req)
	}
}

func TestBuildKeepsWorkloadNodeSelectorAndHPA(t *testing.T) {
	s := load(t, "mixed-arch")
	s.Spec.Workloads[0].HPA = &scenario.HPA{MinReplicas: 2, MaxReplicas: 9, MemoryUtilization: new(int32(60))}
	s.Spec.Workloads[0].Usage = scenario.Quantities{"memory": "900Mi"}
	o, err := Build(s, "mixed-arch-xyz12")
	if err != nil {
		t.Fatal(err)
	}
	sel := o.Deployments[0].Spec.Template.Spec.NodeSelector
	if sel[corev1.LabelArchStable] != "amd64" || sel[observe.RunLabel] != "mixed-arch-xyz12" {
		t.Fatalf("node selector %v", sel)
	}
	if *o.Deployments[0].Spec.Replicas != 2 {
		t.Fatalf("an HPA workload starts at minReplicas, got %d", *o.Deployments[0].Spec.Replicas)
	}
	if len(o.HPAs) != 1 || o.HPAs[0].Spec.MaxReplicas != 9 || *o.HPAs[0].Spec.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Fatalf("HPA %+v", o.HPAs)
	}
	if a := o.Deployments[0].Spec.Template.Annotations["kwok.x-k8s.io/usage-memory"]; a != "900Mi" {
		t.Fatalf("usage annotation %q", a)
	}
	if got := len(o.All()); got != 3+2+1 {
		t.Fatalf("All lists %d objects", got)
	}
}

func TestBuildRejectsBadQuantities(t *testing.T) {
	s := load(t, "web-service")
	s.Spec.Workloads[0].Requests = scenario.Quantities{"cpu": "lots"}
	if _, err := Build(s, "x"); err == nil {
		t.Fatal("want an error, not a panic")
	}
}

// A workload from a team's manifest keeps its own pod labels beside the
// run's, so that its spread constraint (which selects on them) spreads the
// run's pods; the HPA that targets it in the file becomes the run's.
func TestBuildKeepsAManifestsLabels(t *testing.T) {
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json"}
	s, err := l.Load("../scenario/testdata/team/scenarios/checkout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Build(s, "checkout-abcde")
	if err != nil {
		t.Fatal(err)
	}
	d := o.Deployments[0]
	labels := d.Spec.Template.Labels
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Template.Spec.TopologySpreadConstraints[0].LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(k8slabels.Set(labels)) || labels[observe.RunLabel] != "checkout-abcde" || labels[observe.WorkloadLabel] != "checkout" {
		t.Errorf("pod labels %v: the manifest's spread (%s) must select them, and the run's must be there", labels, sel)
	}
	if len(o.HPAs) != 1 || *o.HPAs[0].Spec.MinReplicas != 4 || *d.Spec.Replicas != 4 {
		t.Errorf("the HPA's minimum is the starting replicas: HPAs %d, replicas %d", len(o.HPAs), *d.Spec.Replicas)
	}
	if ref := o.NodePool.Spec.Template.Spec.NodeClassRef; ref.Kind != "KWOKNodeClass" || ref.Name != "checkout-abcde" {
		t.Errorf("nodeClassRef %+v, want the run's KWOKNodeClass", ref)
	}
}

// A scenario with policy.allNodePools: every NodePool of the file is the
// run's, named after it, and a pod's selector of a NodePool by name points
// at the run's copy.
func TestBuildAppliesEveryNodePool(t *testing.T) {
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json"}
	s, err := l.Load("../../fixtures/scenarios/nodepools/runners-twenty-pools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := Build(s, "runners-abcde")
	if err != nil {
		t.Fatal(err)
	}
	if o.NodePool.Name != "runners-abcde" || len(o.NodePool.Spec.Template.Spec.Taints) != 1 {
		t.Fatalf("the run's own NodePool must be runners, named after the run: %s %+v", o.NodePool.Name, o.NodePool.Spec.Template.Spec.Taints)
	}
	if len(o.OtherNodePools) != 19 || o.OtherNodePools[0].Name != "runners-abcde-general-01" || o.OtherNodePools[18].Name != "runners-abcde-general-19" {
		t.Fatalf("want the 19 others named <run>-<name>, got %v", o.OtherNodePoolNames())
	}
	for _, np := range o.OtherNodePools {
		if np.Spec.Template.Labels[observe.RunLabel] != "runners-abcde" || np.Spec.Template.Spec.NodeClassRef.Name != "runners-abcde" || np.Labels[observe.RunLabel] != "runners-abcde" {
			t.Errorf("%s: every NodePool of the run uses its node class and labels its nodes with the run", np.Name)
		}
	}
	if n := len(o.All()); n != 3+19+1 {
		t.Errorf("All: want the namespace, node class, 20 NodePools and the Deployment, got %d objects", n)
	}
	if got := o.Deployments[0].Spec.Template.Spec.NodeSelector[karpv1.NodePoolLabelKey]; got != "runners-abcde" {
		t.Errorf("the pods must select the run's runners NodePool, got %q", got)
	}
	if s.NodePool.Name != "runners" {
		t.Errorf("Build must not rename the scenario's NodePool, got %q", s.NodePool.Name)
	}
}

func TestRenameAffinityNodePools(t *testing.T) {
	a := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"runners", "general-01"}},
			{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"runners"}},
		}}}},
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"general-01"}},
		}}}},
	}}
	got := renameAffinityNodePools(a, map[string]string{"runners": "r-abcde", "general-01": "r-abcde-general-01"})
	req := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions
	if d := cmp.Diff([]string{"r-abcde", "r-abcde-general-01"}, req[0].Values); d != "" {
		t.Errorf("required (-want +got):\n%s", d)
	}
	if req[1].Values[0] != "runners" {
		t.Errorf("only karpenter.sh/nodepool names NodePools; team=%s was renamed", req[1].Values[0])
	}
	if v := got.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Values[0]; v != "r-abcde-general-01" {
		t.Errorf("preferred: got %s", v)
	}
}

// A workload's PodDisruptionBudget is one of the run's objects: in the
// run's namespace, named after the workload, selecting exactly its pods.
// A fault that sets one replaces the scenario's, and the run records and
// replays the one it applied.
func TestAWorkloadsPDBIsTheRunsAndAFaultReplacesIt(t *testing.T) {
	s := loadAnyCatalog(t, "faults/pdb-blocks-eviction")
	id := "pdb-blocks-eviction-abcde"
	o, err := Build(s, id)
	if err != nil {
		t.Fatal(err)
	}
	d := o.Deployments[0]
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	want := []*policyv1.PodDisruptionBudget{{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: id, Labels: map[string]string{observe.RunLabel: id}},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: d.Spec.Selector},
	}}
	if diff := cmp.Diff(want, o.PDBs); diff != "" {
		t.Fatalf("the scenario's budget (-want +got):\n%s", diff)
	}
	if all := o.All(); all[len(all)-1] != o.PDBs[0] {
		t.Error("All must create the budget")
	}
	clean := recordOf(t, "faults/pdb-blocks-eviction", o, id)
	cat, err := fit.Load(context.Background(), s.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	inj, err := BindFault(s, o, cat, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := inj.Inject(context.Background()); err != nil {
		t.Fatal(err)
	}
	want[0].Spec.MaxUnavailable = &zero
	if diff := cmp.Diff(want, o.PDBs); diff != "" {
		t.Fatalf("the fault's budget (-want +got):\n%s", diff)
	}
	in := recordOf(t, "faults/pdb-blocks-eviction", o, id)
	changed := map[string]inputs.Change{}
	for _, c := range inputs.Diff(clean, in) {
		changed[c.Path] = c
	}
	if c := changed["workloads.web.pdb.maxUnavailable"]; c.Was != "1" || c.Now != "0" || c.Kind() != inputs.KindWorkload {
		t.Errorf("the fault's input change: got %+v in %v", c, changed)
	}
	replayed, err := BuildFrom(in, s, id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o.PDBs, replayed.PDBs); diff != "" {
		t.Errorf("replayed budget (-applied +replayed):\n%s", diff)
	}
}
