package suitekit

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/observe"
)

// ProbeTarget is what an observer of ProbeWorkloadObjects(ns) watches:
// the namespace, its NodePool named the same, and the probe's two pods.
func ProbeTarget(ns string) observe.Target {
	return observe.Target{Run: ns, Namespace: ns, NodePool: ns, Workloads: map[string]int32{"probe": 2}}
}

// ProbeWorkloadObjects are a namespace and a Deployment of two pods that
// no node can take: they stay Pending, which is all an observer needs to
// see them.
func ProbeWorkloadObjects(ns string) []client.Object {
	labels := map[string]string{"app": "probe"}
	return []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{"nodeprint.dev/none": "true"},
						Containers:   []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10"}},
					},
				},
			},
		}}
}
