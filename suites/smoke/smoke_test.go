package smoke

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

var _ = Describe("Karpenter on the local cluster", Label("suite:smoke"), func() {
	It("launches Ready nodes that satisfy the NodePool for a 10-replica Deployment", func(ctx SpecContext) {
		run := "smoke-" + rand.String(5)
		runLabel := map[string]string{"nodeprint.dev/run": run}

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: run}}
		nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: run}}
		nodePool := &karpv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: run},
			Spec: karpv1.NodePoolSpec{
				Template: karpv1.NodeClaimTemplate{
					ObjectMeta: karpv1.ObjectMeta{Labels: runLabel},
					Spec: karpv1.NodeClaimTemplateSpec{
						NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: nodeClass.Name},
						Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
							{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
							{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
							{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
						},
					},
				},
			},
		}
		replicas := int32(10)
		podLabels := map[string]string{"app": "smoke"}
		deployment := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns.Name},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: podLabels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
					Spec: corev1.PodSpec{
						NodeSelector: runLabel,
						Containers: []corev1.Container{{
							Name: "app", Image: "registry.k8s.io/pause:3.10",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi"),
							}},
						}},
					},
				},
			},
		}

		// Cleanups run in reverse: the Deployment goes first, then the
		// NodePool (whose nodes Karpenter must remove), then the node class.
		env.ExpectCreated(ctx, ns, nodeClass)
		DeferCleanup(func(ctx SpecContext) { env.EventuallyExpectNodePoolEmpty(ctx, nodePool.Name) }, NodeTimeout(3*time.Minute))
		env.ExpectCreated(ctx, nodePool, deployment)

		claims := env.EventuallyExpectNodeClaimsLaunched(ctx, nodePool.Name)
		env.EventuallyExpectPodsRunning(ctx, ns.Name, podLabels, 10)
		nodes := env.EventuallyExpectNodesReady(ctx, nodePool.Name)
		env.ExpectNodesSatisfy(ctx, nodePool)
		AddReportEntry("selection", fmt.Sprintf("%d NodeClaims, %d nodes: %v", len(claims), len(nodes), instanceTypes(nodes)))
	}, SpecTimeout(5*time.Minute))
})

func instanceTypes(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Labels[corev1.LabelInstanceTypeStable])
	}
	return out
}
