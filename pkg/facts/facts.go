// Package facts reads from a cluster what the classifier needs beside the
// observation (attribute.Facts): the NodePool as the API server has it now
// and whether its node class exists, a workload's replicas, the instance
// types' allocatable as the nodes report it, and the pods' usage. A run
// (pkg/run, at its end) and explain (pkg/explain, on a live cluster) read
// them through these calls, so a fact means the same in both.
package facts

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// New is empty facts, ready to be filled. Unadmitted stays nil: only
// explain knows it, and nil says "not known" to its signal.
func New() attribute.Facts {
	return attribute.Facts{Workloads: map[string]*corev1.PodTemplateSpec{}, Replicas: map[string]attribute.Replicas{}, Fit: map[string]fit.Result{}}
}

// ReadNodePool sets f.NodePool to the NodePool called name as the API
// server has it now, and whether its node class exists (or why that could
// not be read). When the NodePool cannot be read, f.NodePool is fallback
// (what a run applied; nil on a live cluster) and the node class is not
// looked up: nothing is known of it.
func ReadNodePool(ctx context.Context, c client.Client, f *attribute.Facts, name string, fallback *karpv1.NodePool) {
	np := &karpv1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		f.NodePool = fallback
		return
	}
	f.NodePool = np
	var err error
	if f.NodeClassExists, err = ReadNodeClass(ctx, c, np); err != nil {
		f.NodeClassUnreadable = err.Error()
	}
}

// ReadReplicas is a Deployment's replicas: applied is what the run applied
// (nil when it is not known, on a live cluster: then the current count, and
// no growth), desired what its spec asks for now (an HPA changes it). found
// is false when there is no such Deployment (a StatefulSet, a Job, a bare
// pod), with the template then unknown too.
func ReadReplicas(ctx context.Context, c client.Client, namespace, name string, applied *int32) (r attribute.Replicas, tpl *corev1.PodTemplateSpec, found bool) {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		if applied != nil {
			return attribute.Replicas{Applied: *applied, Desired: *applied}, nil, false
		}
		return attribute.Replicas{}, nil, false
	}
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	if applied == nil {
		applied = &desired
	}
	return attribute.Replicas{Applied: *applied, Desired: desired}, d.Spec.Template.DeepCopy(), true
}

// NodeAllocatable is what the observed nodes report: each instance type's
// status.allocatable, for a cluster whose catalog nodeprint does not have
// (EKS), so that the over-request and OOM rules work there as on a run's
// catalog.
func NodeAllocatable(ctx context.Context, c client.Client, snap *observe.Observation) (map[string]corev1.ResourceList, error) {
	out := map[string]corev1.ResourceList{}
	for name, rec := range snap.Nodes {
		if rec.InstanceType == "" || out[rec.InstanceType] != nil {
			continue
		}
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				continue // gone since it was observed
			}
			return nil, fmt.Errorf("failed to read node %s: %w", name, err)
		}
		if len(n.Status.Allocatable) > 0 {
			out[rec.InstanceType] = n.Status.Allocatable.DeepCopy()
		}
	}
	return out, nil
}

// PodUsage is the usage of each pod of a namespace, summed over its
// containers, from metrics.k8s.io; nil when the metrics API does not
// answer (no metrics-server) or has nothing yet.
func PodUsage(ctx context.Context, c client.Client, namespace string) map[string]corev1.ResourceList {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("metrics.k8s.io/v1beta1")
	list.SetKind("PodMetricsList")
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	out := map[string]corev1.ResourceList{}
	for _, it := range list.Items {
		out[it.GetName()] = containerUsage(it.Object)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// containerUsage sums a PodMetrics object's containers' usage; a quantity
// that does not parse is left out.
func containerUsage(podMetrics map[string]any) corev1.ResourceList {
	containers, _, _ := unstructured.NestedSlice(podMetrics, "containers")
	sum := corev1.ResourceList{}
	for _, c := range containers {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		usage, _, _ := unstructured.NestedStringMap(m, "usage")
		for k, v := range usage {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				continue
			}
			cur := sum[corev1.ResourceName(k)]
			cur.Add(q)
			sum[corev1.ResourceName(k)] = cur
		}
	}
	return sum
}
