package environment

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// StartObserver starts the harness's observer on namespace ns (its
// NodePool named the same) and stops it at the end of the spec.
func (e *Environment) StartObserver(ctx context.Context, ns string) *observe.Observer {
	GinkgoHelper()
	By("starting an observer on namespace " + ns)
	cfg, err := kube.Config(e.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	ob, err := observe.Start(ctx, cfg, observe.Target{Run: ns, Namespace: ns, NodePool: ns, Workloads: map[string]int32{"probe": 2}})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ob.Stop)
	return ob
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

// EventuallyExpectObserved expects the observer to record n pods within
// timeout, through its informers.
func EventuallyExpectObserved(ctx context.Context, ob *observe.Observer, n int, timeout time.Duration) {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for the observer to record %d pods", n))
	Eventually(func() int { return len(ob.Snapshot().Pods) }).WithContext(ctx).WithTimeout(timeout).WithPolling(250*time.Millisecond).
		Should(Equal(n), "pods the observer recorded")
}
