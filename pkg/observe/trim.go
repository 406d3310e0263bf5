package observe

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// The informers' transforms: each keeps the identity an informer needs
// (name, namespace, resource version) and the fields the observer's
// handlers read, and drops the rest (managed fields, specs, annotations)
// before the object enters the cache. Objects of another type pass
// through unchanged.

func meta(m metav1.ObjectMeta, labels bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
	if labels {
		out.Labels = m.Labels
	}
	return out
}

func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{ObjectMeta: meta(p.ObjectMeta, true), Spec: corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase}}
	out.OwnerReferences = p.OwnerReferences
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodReady {
			out.Status.Conditions = append(out.Status.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		t := corev1.ContainerStatus{RestartCount: cs.RestartCount}
		if w := cs.State.Waiting; w != nil {
			t.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
		}
		if term := cs.LastTerminationState.Terminated; term != nil {
			t.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: term.Reason}
		}
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, t)
	}
	return out, nil
}

func trimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{ObjectMeta: meta(n.ObjectMeta, true)}
	// What holds a deleted Node back (NodeRecord.Finalizers).
	out.Finalizers = n.Finalizers
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	return out, nil
}

// trimNodeClaim also converts the dynamic informer's unstructured
// NodeClaim to the typed one once, in the cache, not in every handler call.
func trimNodeClaim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	nc := &karpv1.NodeClaim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		// Kept as it came: the handler skips what it cannot read.
		return obj, nil //nolint:nilerr // a NodeClaim of another shape is not the observer's to fail on
	}
	out := &karpv1.NodeClaim{ObjectMeta: meta(nc.ObjectMeta, true)}
	out.Status.NodeName = nc.Status.NodeName
	out.Status.Conditions = nc.Status.Conditions
	return out, nil
}

func trimEvent(obj any) (any, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	return &corev1.Event{ObjectMeta: meta(e.ObjectMeta, false),
		InvolvedObject: corev1.ObjectReference{Kind: e.InvolvedObject.Kind, Name: e.InvolvedObject.Name},
		Reason:         e.Reason, Message: e.Message, Type: e.Type, Count: e.Count,
		LastTimestamp: e.LastTimestamp, EventTime: e.EventTime}, nil
}

func trimNamespace(obj any) (any, error) {
	n, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: meta(n.ObjectMeta, false)}, nil
}

func trimDeployment(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	return &appsv1.Deployment{ObjectMeta: meta(d.ObjectMeta, false), Spec: appsv1.DeploymentSpec{Replicas: d.Spec.Replicas}}, nil
}
