package environment

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

// ExpectCreated creates each object and registers its deletion (waiting
// until it is gone) as a cleanup, so objects are removed in reverse order.
func (e *Environment) ExpectCreated(ctx context.Context, objs ...client.Object) {
	GinkgoHelper()
	for _, o := range objs {
		By(fmt.Sprintf("creating %T %s", o, client.ObjectKeyFromObject(o)))
		Expect(e.Client.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { e.ExpectDeleted(ctx, o) }, NodeTimeout(3*time.Minute))
	}
}

// ExpectDeleted deletes the object and waits until the API server no longer has it.
func (e *Environment) ExpectDeleted(ctx context.Context, o client.Object) {
	GinkgoHelper()
	By(fmt.Sprintf("deleting %T %s", o, client.ObjectKeyFromObject(o)))
	Expect(client.IgnoreNotFound(e.Client.Delete(ctx, o, client.PropagationPolicy("Background")))).To(Succeed())
	Eventually(func(g Gomega) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists (err=%v)", o, client.ObjectKeyFromObject(o), err)
	}).WithContext(ctx).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// NodeClaimsOf lists the NodeClaims of a NodePool.
func (e *Environment) NodeClaimsOf(ctx context.Context, nodePool string) []karpv1.NodeClaim {
	GinkgoHelper()
	list := &karpv1.NodeClaimList{}
	Expect(e.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool})).To(Succeed())
	return list.Items
}

// NodesOf lists the Nodes of a NodePool.
func (e *Environment) NodesOf(ctx context.Context, nodePool string) []corev1.Node {
	GinkgoHelper()
	list := &corev1.NodeList{}
	Expect(e.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool})).To(Succeed())
	return list.Items
}

// EventuallyExpectNodeClaimsLaunched waits until the NodePool has at least
// one NodeClaim and every one of them is Launched.
func (e *Environment) EventuallyExpectNodeClaimsLaunched(ctx context.Context, nodePool string) []karpv1.NodeClaim {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for Karpenter to launch NodeClaims for NodePool %s", nodePool))
	var out []karpv1.NodeClaim
	Eventually(func(g Gomega) {
		out = e.NodeClaimsOf(ctx, nodePool)
		g.Expect(out).NotTo(BeEmpty(), "no NodeClaim for NodePool %s yet", nodePool)
		for _, nc := range out {
			g.Expect(nc.StatusConditions().Get(karpv1.ConditionTypeLaunched).IsTrue()).To(BeTrue(), "NodeClaim %s not launched", nc.Name)
		}
	}).WithContext(ctx).WithPolling(250 * time.Millisecond).Should(Succeed())
	return out
}

// EventuallyExpectNodesReady waits until every NodeClaim of the NodePool
// has a registered Node and every such Node is Ready.
func (e *Environment) EventuallyExpectNodesReady(ctx context.Context, nodePool string) []corev1.Node {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for the nodes of NodePool %s to be Ready", nodePool))
	var nodes []corev1.Node
	Eventually(func(g Gomega) {
		claims := e.NodeClaimsOf(ctx, nodePool)
		nodes = e.NodesOf(ctx, nodePool)
		g.Expect(nodes).NotTo(BeEmpty())
		g.Expect(nodes).To(HaveLen(len(claims)), "%d NodeClaims but %d Nodes", len(claims), len(nodes))
		for _, n := range nodes {
			g.Expect(nodeReady(n)).To(BeTrue(), "node %s is not Ready", n.Name)
		}
	}).WithContext(ctx).WithPolling(250 * time.Millisecond).Should(Succeed())
	return nodes
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// EventuallyExpectPodsRunning waits until exactly want pods match the
// selector in the namespace and all are Running and Ready.
func (e *Environment) EventuallyExpectPodsRunning(ctx context.Context, namespace string, selector map[string]string, want int) []corev1.Pod {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for %d pods to be Running in %s", want, namespace))
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		list := &corev1.PodList{}
		g.Expect(e.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels(selector))).To(Succeed())
		pods = list.Items
		g.Expect(pods).To(HaveLen(want))
		for _, p := range pods {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s is %s", p.Name, p.Status.Phase)
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty())
		}
	}).WithContext(ctx).WithPolling(250 * time.Millisecond).Should(Succeed())
	return pods
}

// ExpectNodesSatisfy checks every node of the NodePool against its requirements.
func (e *Environment) ExpectNodesSatisfy(ctx context.Context, np *karpv1.NodePool) {
	GinkgoHelper()
	By(fmt.Sprintf("checking each node's instance type against NodePool %s's requirements", np.Name))
	nodes := e.NodesOf(ctx, np.Name)
	Expect(nodes).NotTo(BeEmpty())
	for _, n := range nodes {
		Expect(n.Labels).To(HaveKey(corev1.LabelInstanceTypeStable), "node %s has no instance type", n.Name)
		Expect(kube.NodeSatisfies(n.Labels, np.Spec.Template.Spec.Requirements)).To(Succeed(),
			"node %s (%s) violates NodePool %s", n.Name, n.Labels[corev1.LabelInstanceTypeStable], np.Name)
	}
}

// EventuallyExpectNodePoolEmpty waits until Karpenter has removed every
// NodeClaim and Node of the NodePool.
func (e *Environment) EventuallyExpectNodePoolEmpty(ctx context.Context, nodePool string) {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for Karpenter to remove the nodes of NodePool %s", nodePool))
	Eventually(func(g Gomega) {
		g.Expect(e.NodeClaimsOf(ctx, nodePool)).To(BeEmpty(), "NodeClaims of %s remain", nodePool)
		g.Expect(e.NodesOf(ctx, nodePool)).To(BeEmpty(), "Nodes of %s remain", nodePool)
	}).WithContext(ctx).WithPolling(250 * time.Millisecond).Should(Succeed())
}
