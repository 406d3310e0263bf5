package scenario

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

// workloadKinds are the objects a workload manifest may name: what makes
// pods from a template. A run makes every one a Deployment of the same
// pods: Karpenter provisions for pods, and an ordinal (StatefulSet) or a
// completion count (Job) does not change what it launches for them.
var workloadKinds = map[string]string{
	"Deployment":  "apps/v1",
	"StatefulSet": "apps/v1",
	"ReplicaSet":  "apps/v1",
	"Job":         "batch/v1",
}

// fromManifest fills the workload from the object its manifest names and
// the HPA in the same file that targets it: requests and limits as
// Karpenter sizes a node for the pod (containers summed, init containers'
// peak, pod-level resources), labels, node selector, affinity, spread,
// tolerations and replicas. What does not carry over is in the notes.
func fromManifest(path string, w *Workload) (notes []string, err error) {
	docs, err := readManifest(path)
	if err != nil {
		return nil, err
	}
	d, err := pick(path, docs, workloadKinds, w.Object, "Deployment, StatefulSet, ReplicaSet or Job", "workloads[].object")
	if err != nil {
		return nil, err
	}
	tpl, replicas, err := podTemplate(path, d)
	if err != nil {
		return nil, err
	}
	if w.Name == "" {
		w.Name = d.Name
	}
	if w.Replicas == 0 {
		w.Replicas = replicas
	}
	notes = append(notes, fmt.Sprintf("workload %s: from %s", w.Name, d))
	if d.Kind != "Deployment" {
		notes = append(notes, fmt.Sprintf("workload %s: the %s's pods run as a Deployment's (Karpenter provisions for the pods; ordinals and completions are not simulated)", w.Name, d.Kind))
	}
	notes = append(notes, w.fromPodSpec(tpl)...)
	hpaNotes, err := w.hpaFrom(path, docs, d)
	if err != nil {
		return nil, err
	}
	pdbNotes, err := w.pdbFrom(path, docs, tpl)
	return append(append(notes, hpaNotes...), pdbNotes...), err
}

// podTemplate is the object's pod template and how many pods it keeps.
func podTemplate(path string, d *document) (*corev1.PodTemplateSpec, int32, error) {
	one := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch d.Kind {
	case "Deployment":
		o := &appsv1.Deployment{}
		err := d.decode(path, o)
		return &o.Spec.Template, one(o.Spec.Replicas), err
	case "StatefulSet":
		o := &appsv1.StatefulSet{}
		err := d.decode(path, o)
		return &o.Spec.Template, one(o.Spec.Replicas), err
	case "ReplicaSet":
		o := &appsv1.ReplicaSet{}
		err := d.decode(path, o)
		return &o.Spec.Template, one(o.Spec.Replicas), err
	default:
		o := &batchv1.Job{}
		err := d.decode(path, o)
		return &o.Spec.Template, one(o.Spec.Parallelism), err
	}
}

// fromPodSpec takes what Karpenter and the scheduler decide by from the
// template.
func (w *Workload) fromPodSpec(tpl *corev1.PodTemplateSpec) (notes []string) {
	pod := &corev1.Pod{Spec: tpl.Spec}
	w.Requests = quantitiesOf(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	w.Limits = quantitiesOf(limitedEverywhere(pod))
	w.Labels = tpl.Labels
	w.NodeSelector = tpl.Spec.NodeSelector
	w.Affinity = tpl.Spec.Affinity
	w.TopologySpreadConstraints = tpl.Spec.TopologySpreadConstraints
	w.Tolerations = tpl.Spec.Tolerations
	if n := len(tpl.Spec.Containers) + len(tpl.Spec.InitContainers); n > 1 {
		notes = append(notes, fmt.Sprintf("workload %s: %d containers become one with the pod's requests and limits (what Karpenter sizes a node by)", w.Name, n))
	}
	notes = append(notes, fmt.Sprintf("workload %s: images are not pulled on KWOK (no container runs); the pod's image is irrelevant", w.Name))
	var ignored []string
	if tpl.Spec.PriorityClassName != "" {
		ignored = append(ignored, "priorityClassName "+tpl.Spec.PriorityClassName)
	}
	if len(tpl.Spec.Volumes) > 0 {
		ignored = append(ignored, fmt.Sprintf("%d volume(s)", len(tpl.Spec.Volumes)))
	}
	if len(ignored) > 0 {
		notes = append(notes, fmt.Sprintf("workload %s: ignored: %s", w.Name, strings.Join(ignored, ", ")))
	}
	return notes
}

// limitedEverywhere is the pod's limit of each resource every container
// limits: a container without a limit leaves the pod unlimited in it.
func limitedEverywhere(pod *corev1.Pod) corev1.ResourceList {
	lim := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	for name := range lim {
		for _, c := range pod.Spec.Containers {
			if _, ok := c.Resources.Limits[name]; !ok {
				delete(lim, name)
				break
			}
		}
	}
	return lim
}

func quantitiesOf(l corev1.ResourceList) Quantities {
	if len(l) == 0 {
		return nil
	}
	out := Quantities{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// hpaFrom takes the autoscaling/v2 HPA of the file that targets the
// object, if there is one: its bounds and resource utilisation targets.
func (w *Workload) hpaFrom(path string, docs []*document, target *document) ([]string, error) {
	for _, d := range docs {
		if d.Kind != "HorizontalPodAutoscaler" {
			continue
		}
		h := &autoscalingv2.HorizontalPodAutoscaler{}
		if d.APIVersion != "autoscaling/v2" {
			return nil, fmt.Errorf("%s: %s: only autoscaling/v2 HPAs are read, got %s", path, d, d.APIVersion)
		}
		if err := d.decode(path, h); err != nil {
			return nil, err
		}
		if ref := h.Spec.ScaleTargetRef; ref.Kind != target.Kind || ref.Name != target.Name {
			continue
		}
		if w.HPA != nil {
			return nil, fmt.Errorf("%s: %s targets workload %s, which sets hpa too: keep one", path, d, w.Name)
		}
		return w.setHPA(d, h), nil
	}
	return nil, nil
}

// pdbFrom takes the policy/v1 PodDisruptionBudget of the file whose
// selector matches the workload's pod labels, if there is one. Two that
// match are refused: the API server evicts no pod that more than one
// budget covers, which the scenario's one pdb cannot say.
func (w *Workload) pdbFrom(path string, docs []*document, tpl *corev1.PodTemplateSpec) ([]string, error) {
	var found *policyv1.PodDisruptionBudget
	var from *document
	for _, d := range docs {
		if d.Kind != "PodDisruptionBudget" {
			continue
		}
		if d.APIVersion != "policy/v1" {
			return nil, fmt.Errorf("%s: %s: only policy/v1 PodDisruptionBudgets are read, got %s", path, d, d.APIVersion)
		}
		b := &policyv1.PodDisruptionBudget{}
		if err := d.decode(path, b); err != nil {
			return nil, err
		}
		selects, err := kube.PDBSelects(b, tpl.Labels)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, d, err)
		}
		switch {
		case !selects:
			continue
		case w.PDB != nil:
			return nil, fmt.Errorf("%s: %s selects the pods of workload %s, which sets pdb too: keep one", path, d, w.Name)
		case found != nil:
			return nil, fmt.Errorf("%s: %s and %s both select the pods of workload %s: the API server evicts no pod that more than one PodDisruptionBudget covers, so no drain of its nodes would finish; keep one", path, from, d, w.Name)
		}
		found, from = b, d
	}
	if found == nil {
		return nil, nil
	}
	if found.Spec.MinAvailable == nil && found.Spec.MaxUnavailable == nil {
		return []string{fmt.Sprintf("workload %s: %s ignored: it sets neither minAvailable nor maxUnavailable", w.Name, from)}, nil
	}
	w.PDB = &PDB{MinAvailable: found.Spec.MinAvailable, MaxUnavailable: found.Spec.MaxUnavailable}
	notes := []string{fmt.Sprintf("workload %s: PodDisruptionBudget from %s (the run's selects the workload's pods)", w.Name, from)}
	if found.Spec.UnhealthyPodEvictionPolicy != nil {
		notes = append(notes, fmt.Sprintf("workload %s: ignored: unhealthyPodEvictionPolicy %s (the API server's default applies)", w.Name, *found.Spec.UnhealthyPodEvictionPolicy))
	}
	return notes, nil
}

func (w *Workload) setHPA(d *document, h *autoscalingv2.HorizontalPodAutoscaler) []string {
	out := &HPA{MinReplicas: 1, MaxReplicas: h.Spec.MaxReplicas}
	if h.Spec.MinReplicas != nil {
		out.MinReplicas = *h.Spec.MinReplicas
	}
	var ignored []string
	for _, m := range h.Spec.Metrics {
		r := m.Resource
		if m.Type != autoscalingv2.ResourceMetricSourceType || r == nil || r.Target.Type != autoscalingv2.UtilizationMetricType || r.Target.AverageUtilization == nil {
			ignored = append(ignored, string(m.Type))
			continue
		}
		switch r.Name {
		case corev1.ResourceCPU:
			out.CPUUtilization = r.Target.AverageUtilization
		case corev1.ResourceMemory:
			out.MemoryUtilization = r.Target.AverageUtilization
		default:
			ignored = append(ignored, "Resource "+string(r.Name))
		}
	}
	sort.Strings(ignored)
	if out.CPUUtilization == nil && out.MemoryUtilization == nil {
		return []string{fmt.Sprintf("workload %s: %s ignored: no cpu or memory utilisation target (only those are simulated; it has %s)", w.Name, d, strings.Join(ignored, ", "))}
	}
	w.HPA = out
	notes := []string{fmt.Sprintf("workload %s: HPA from %s", w.Name, d)}
	if len(ignored) > 0 {
		notes = append(notes, fmt.Sprintf("workload %s: HPA metrics ignored (only cpu and memory utilisation are simulated): %s", w.Name, strings.Join(ignored, ", ")))
	}
	return notes
}
