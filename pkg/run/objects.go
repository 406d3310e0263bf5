// Package run executes a scenario on a cluster: it creates the run's
// namespace, KWOKNodeClass, NodePool and workloads, all named after the run
// and labelled with it, observes until the run settles, and removes
// everything again, waiting until Karpenter has removed the run's nodes.
package run

import (
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Objects are what one run creates, in creation order.
type Objects struct {
	Namespace *corev1.Namespace
	NodeClass *kwokv1alpha1.KWOKNodeClass
	NodePool  *karpv1.NodePool
	// OtherNodePools are the scenario's other NodePools (policy.allNodePools),
	// named <run>-<name>, beside the run's own.
	OtherNodePools []*karpv1.NodePool
	Deployments    []*appsv1.Deployment
	HPAs           []*autoscalingv2.HorizontalPodAutoscaler
	// PDBs are the workloads' PodDisruptionBudgets, each named after its
	// workload and selecting its pods.
	PDBs []*policyv1.PodDisruptionBudget
	// ScaleIn are the steps the run takes after its scale-out (none
	// without a scale-in): the scenario's, or the recorded ones of a replay.
	ScaleIn []scenario.Step
}

// All lists the objects in creation order.
func (o *Objects) All() []client.Object {
	out := []client.Object{o.Namespace, o.NodeClass, o.NodePool}
	for _, np := range o.OtherNodePools {
		out = append(out, np)
	}
	for _, d := range o.Deployments {
		out = append(out, d)
	}
	for _, h := range o.HPAs {
		out = append(out, h)
	}
	for _, b := range o.PDBs {
		out = append(out, b)
	}
	return out
}

// OtherNodePoolNames are the names of OtherNodePools.
func (o *Objects) OtherNodePoolNames() []string {
	var out []string
	for _, np := range o.OtherNodePools {
		out = append(out, np.Name)
	}
	return out
}

// Build materialises a scenario for the run id: the NodePool is the
// scenario's policy with the run's node class and the run label on its
// nodes; every pod selects the run's nodes.
func Build(s *scenario.Scenario, id string) (*Objects, error) {
	runLabels := map[string]string{observe.RunLabel: id}
	o := &Objects{
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: runLabels}},
		NodeClass: &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: runLabels}},
	}
	if d := s.Spec.Policy.NodeClass.NodeRegistrationDelay; d != "" {
		v, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: nodeRegistrationDelay: %w", s.Metadata.Name, err)
		}
		o.NodeClass.Spec.NodeRegistrationDelay = metav1.Duration{Duration: v}
	}
	o.NodePool = runNodePool(s.NodePool, id, id)
	runNames := map[string]string{}
	if s.NodePool.Name != "" {
		runNames[s.NodePool.Name] = id
	}
	for _, other := range s.OtherNodePools {
		np := runNodePool(other, id+"-"+other.Name, id)
		o.OtherNodePools = append(o.OtherNodePools, np)
		runNames[other.Name] = np.Name
	}
	for i := range s.Spec.Workloads {
		w := &s.Spec.Workloads[i]
		d, err := buildDeployment(s.Metadata.Name, id, w, runNames)
		if err != nil {
			return nil, err
		}
		o.Deployments = append(o.Deployments, d)
		if h := w.HPA; h != nil {
			o.HPAs = append(o.HPAs, buildHPA(id, w.Name, h))
		}
		if b := w.PDB; b != nil {
			o.SetPDB(d, policyv1.PodDisruptionBudgetSpec{MinAvailable: b.MinAvailable, MaxUnavailable: b.MaxUnavailable})
		}
	}
	if si := s.Spec.ScaleIn; si != nil {
		o.ScaleIn = si.Steps
	}
	return o, nil
}

// buildDeployment is a workload as the run id applies it: its pods carry
// the run's and the workload's labels and select the run's nodes (the
// scenario's NodePool names renamed to the run's, runNames).
func buildDeployment(scenarioName, id string, w *scenario.Workload, runNames map[string]string) (*appsv1.Deployment, error) {
	runLabels := map[string]string{observe.RunLabel: id}
	// The workload's own labels (a manifest's spread and affinity
	// select on them) over a default app label, and the run's, which
	// win.
	podLabels := merge(merge(map[string]string{"app": w.Name}, w.Labels), map[string]string{observe.WorkloadLabel: w.Name, observe.RunLabel: id})
	annotations := map[string]string{}
	for k, v := range w.Usage {
		annotations["kwok.x-k8s.io/usage-"+k] = v
	}
	spread := make([]corev1.TopologySpreadConstraint, len(w.TopologySpreadConstraints))
	for i, c := range w.TopologySpreadConstraints {
		c = *c.DeepCopy()
		if c.LabelSelector == nil {
			c.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{observe.WorkloadLabel: w.Name, observe.RunLabel: id}}
		}
		spread[i] = c
	}
	requests, err := quantities(w.Requests)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: workload %s: requests: %w", scenarioName, w.Name, err)
	}
	limits, err := quantities(w.Limits)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: workload %s: limits: %w", scenarioName, w.Name, err)
	}
	replicas := w.Replicas
	if w.HPA != nil {
		replicas = w.HPA.MinReplicas
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: id, Labels: runLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{observe.WorkloadLabel: w.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec: corev1.PodSpec{
					NodeSelector:              renameNodePools(merge(w.NodeSelector, runLabels), runNames),
					Affinity:                  renameAffinityNodePools(w.Affinity.DeepCopy(), runNames),
					Tolerations:               w.Tolerations,
					TopologySpreadConstraints: spread,
					// KWOK runs no container; the image is never pulled.
					Containers: []corev1.Container{{
						Name: w.Name, Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
					}},
					TerminationGracePeriodSeconds: new(int64),
				},
			},
		},
	}
	return d, nil
}

// runNodePool is a scenario's NodePool as a run applies it: named name,
// with the run's node class and the run label on its nodes.
func runNodePool(from *karpv1.NodePool, name, id string) *karpv1.NodePool {
	runLabels := map[string]string{observe.RunLabel: id}
	np := from.DeepCopy()
	np.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: runLabels}
	np.Spec.Template.Labels = merge(np.Spec.Template.Labels, runLabels)
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: id}
	return np
}

// renameNodePools points a node selector on karpenter.sh/nodepool at the
// run's name of the NodePool (the scenario loader refuses a name it does
// not apply).
func renameNodePools(sel map[string]string, runNames map[string]string) map[string]string {
	if v, ok := runNames[sel[karpv1.NodePoolLabelKey]]; ok {
		sel[karpv1.NodePoolLabelKey] = v
	}
	return sel
}

// renameAffinityNodePools does the same for node affinity's expressions.
func renameAffinityNodePools(a *corev1.Affinity, runNames map[string]string) *corev1.Affinity {
	if a == nil || a.NodeAffinity == nil {
		return a
	}
	rename := func(exprs []corev1.NodeSelectorRequirement) {
		for i := range exprs {
			if exprs[i].Key != karpv1.NodePoolLabelKey {
				continue
			}
			for j, v := range exprs[i].Values {
				if n, ok := runNames[v]; ok {
					exprs[i].Values[j] = n
				}
			}
		}
	}
	if r := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		for i := range r.NodeSelectorTerms {
			rename(r.NodeSelectorTerms[i].MatchExpressions)
		}
	}
	for i := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		rename(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference.MatchExpressions)
	}
	return a
}

func buildHPA(ns, name string, h *scenario.HPA) *autoscalingv2.HorizontalPodAutoscaler {
	var metrics []autoscalingv2.MetricSpec
	add := func(res corev1.ResourceName, target *int32) {
		if target == nil {
			return
		}
		metrics = append(metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: target},
		}})
	}
	add(corev1.ResourceCPU, h.CPUUtilization)
	add(corev1.ResourceMemory, h.MemoryUtilization)
	minR := h.MinReplicas
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    &minR, MaxReplicas: h.MaxReplicas, Metrics: metrics,
		},
	}
}

// SetPDB gives workload d a PodDisruptionBudget with spec's bounds, in
// place of the one it has: named after the workload, selecting its pods
// by the Deployment's own selector (spec's selector is ignored).
func (o *Objects) SetPDB(d *appsv1.Deployment, spec policyv1.PodDisruptionBudgetSpec) {
	spec.Selector = d.Spec.Selector.DeepCopy()
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, Labels: maps.Clone(d.Labels)},
		Spec:       spec,
	}
	for i, old := range o.PDBs {
		if old.Name == d.Name {
			o.PDBs[i] = b
			return
		}
	}
	o.PDBs = append(o.PDBs, b)
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

func quantities(m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a quantity", k, v)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}
