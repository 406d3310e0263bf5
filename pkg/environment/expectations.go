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

// polling is how often a wait asks the API server again: often enough
// that a wait ends within a fraction of a second of what it waits for.
const polling = 250 * time.Millisecond

// ExpectCreated creates each object and registers its deletion (waiting
// until it is gone) as a cleanup, so objects are removed in reverse order
// of creation, also when the spec fails.
func (e *Environment) ExpectCreated(ctx context.Context, objs ...client.Object) {
	GinkgoHelper()
	for _, o := range objs {
		By(fmt.Sprintf("creating %T %s", o, client.ObjectKeyFromObject(o)))
		Expect(e.Client.Create(ctx, o)).To(Succeed(), "creating %T %s", o, client.ObjectKeyFromObject(o))
		DeferCleanup(func(ctx SpecContext) { e.ExpectDeleted(ctx, o) }, NodeTimeout(e.cleanupTimeout()))
	}
}

// ExpectDeleted deletes the object (its dependents in the background) and
// waits until the API server no longer has it.
func (e *Environment) ExpectDeleted(ctx context.Context, o client.Object) {
	GinkgoHelper()
	key := client.ObjectKeyFromObject(o)
	By(fmt.Sprintf("deleting %T %s", o, key))
	Expect(client.IgnoreNotFound(e.Client.Delete(ctx, o, client.PropagationPolicy("Background")))).To(Succeed(), "deleting %T %s", o, key)
	Eventually(func(g Gomega) {
		err := e.Client.Get(ctx, key, o.DeepCopyObject().(client.Object))
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists (err=%v)", o, key, err)
	}).WithContext(ctx).WithTimeout(e.timeout).WithPolling(polling).
		Should(Succeed(), "waited %s for %T %s to be gone", e.timeout, o, key)
}

func (e *Environment) nodeClaimsOf(ctx context.Context, nodePool string) ([]karpv1.NodeClaim, error) {
	list := &karpv1.NodeClaimList{}
	if err := e.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool}); err != nil {
		return nil, fmt.Errorf("failed to list the NodeClaims of NodePool %s: %w", nodePool, err)
	}
	return list.Items, nil
}

func (e *Environment) nodesOf(ctx context.Context, nodePool string) ([]corev1.Node, error) {
	list := &corev1.NodeList{}
	if err := e.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool}); err != nil {
		return nil, fmt.Errorf("failed to list the Nodes of NodePool %s: %w", nodePool, err)
	}
	return list.Items, nil
}

// NodeClaimsOf lists the NodeClaims of a NodePool now.
func (e *Environment) NodeClaimsOf(ctx context.Context, nodePool string) []karpv1.NodeClaim {
	GinkgoHelper()
	By("listing the NodeClaims of NodePool " + nodePool)
	out, err := e.nodeClaimsOf(ctx, nodePool)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// NodesOf lists the Nodes of a NodePool now.
func (e *Environment) NodesOf(ctx context.Context, nodePool string) []corev1.Node {
	GinkgoHelper()
	By("listing the Nodes of NodePool " + nodePool)
	out, err := e.nodesOf(ctx, nodePool)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// EventuallyExpectNodeClaimsLaunched waits until the NodePool has at least
// one NodeClaim and every one of them is Launched, and returns them.
func (e *Environment) EventuallyExpectNodeClaimsLaunched(ctx context.Context, nodePool string) []karpv1.NodeClaim {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for Karpenter to launch NodeClaims for NodePool %s", nodePool))
	var out []karpv1.NodeClaim
	Eventually(func(g Gomega) {
		var err error
		out, err = e.nodeClaimsOf(ctx, nodePool)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).NotTo(BeEmpty(), "no NodeClaim for NodePool %s yet", nodePool)
		for _, nc := range out {
			g.Expect(nc.StatusConditions().Get(karpv1.ConditionTypeLaunched).IsTrue()).To(BeTrue(), "NodeClaim %s not launched", nc.Name)
		}
	}).WithContext(ctx).WithTimeout(e.timeout).WithPolling(polling).
		Should(Succeed(), "waited %s for Karpenter to launch NodeClaims for NodePool %s", e.timeout, nodePool)
	return out
}

// EventuallyExpectNodesReady waits until every NodeClaim of the NodePool
// has a registered Node and every such Node is Ready, and returns them.
func (e *Environment) EventuallyExpectNodesReady(ctx context.Context, nodePool string) []corev1.Node {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for the nodes of NodePool %s to be Ready", nodePool))
	var nodes []corev1.Node
	Eventually(func(g Gomega) {
		claims, err := e.nodeClaimsOf(ctx, nodePool)
		g.Expect(err).NotTo(HaveOccurred())
		nodes, err = e.nodesOf(ctx, nodePool)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nodes).NotTo(BeEmpty(), "no Node of NodePool %s yet", nodePool)
		g.Expect(nodes).To(HaveLen(len(claims)), "%d NodeClaims but %d Nodes", len(claims), len(nodes))
		for _, n := range nodes {
			g.Expect(nodeReady(n)).To(BeTrue(), "node %s is not Ready", n.Name)
		}
	}).WithContext(ctx).WithTimeout(e.timeout).WithPolling(polling).
		Should(Succeed(), "waited %s for the nodes of NodePool %s to be Ready", e.timeout, nodePool)
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
// selector in the namespace and all are Running on a node, and returns
// them.
func (e *Environment) EventuallyExpectPodsRunning(ctx context.Context, namespace string, selector map[string]string, want int) []corev1.Pod {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for %d pods matching %v to be Running in %s", want, selector, namespace))
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		list := &corev1.PodList{}
		g.Expect(e.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels(selector))).To(Succeed())
		pods = list.Items
		g.Expect(pods).To(HaveLen(want))
		for _, p := range pods {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s is %s", p.Name, p.Status.Phase)
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s has no node", p.Name)
		}
	}).WithContext(ctx).WithTimeout(e.timeout).WithPolling(polling).
		Should(Succeed(), "waited %s for %d pods matching %v to be Running in %s", e.timeout, want, selector, namespace)
	return pods
}

// EventuallyExpectPending waits until exactly want pods labelled app=app
// exist in the namespace and none is scheduled: pods no node can take
// stay so, which is what a spec about an unsatisfiable workload checks.
func (e *Environment) EventuallyExpectPending(ctx context.Context, namespace, app string, want int) {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for %d pending pod(s) of %s/%s", want, namespace, app))
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(e.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"app": app})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(want))
		for _, p := range pods.Items {
			g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s was scheduled", p.Name)
		}
	}).WithContext(ctx).WithTimeout(e.timeout).WithPolling(polling).
		Should(Succeed(), "waited %s for %d pending pod(s) of %s/%s", e.timeout, want, namespace, app)
}

// ExpectNodesSatisfy checks every node of the NodePool against the
// NodePool's requirements: the instance type Karpenter chose, and each
// label it put on the node, must be one the NodePool allows.
func (e *Environment) ExpectNodesSatisfy(ctx context.Context, np *karpv1.NodePool) {
	GinkgoHelper()
	By(fmt.Sprintf("checking each node's instance type against NodePool %s's requirements", np.Name))
	nodes, err := e.nodesOf(ctx, np.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(nodes).NotTo(BeEmpty(), "NodePool %s has no node to check", np.Name)
	for _, n := range nodes {
		Expect(n.Labels).To(HaveKey(corev1.LabelInstanceTypeStable), "node %s has no instance type", n.Name)
		Expect(kube.NodeSatisfies(n.Labels, np.Spec.Template.Spec.Requirements)).To(Succeed(),
			"node %s (%s) violates NodePool %s", n.Name, n.Labels[corev1.LabelInstanceTypeStable], np.Name)
	}
}

// EventuallyExpectNodePoolEmpty waits until Karpenter has removed every
// NodeClaim and Node of the NodePool. Register it with DeferCleanup before
// creating the NodePool's workload: cleanups run last first, so it then
// runs after the workload and the NodePool are deleted.
func (e *Environment) EventuallyExpectNodePoolEmpty(ctx context.Context, nodePool string) {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for Karpenter to remove the nodes of NodePool %s", nodePool))
	Eventually(func(g Gomega) {
		claims, err := e.nodeClaimsOf(ctx, nodePool)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claims).To(BeEmpty(), "NodeClaims of %s remain", nodePool)
		nodes, err := e.nodesOf(ctx, nodePool)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nodes).To(BeEmpty(), "Nodes of %s remain", nodePool)
	}).WithContext(ctx).WithTimeout(e.timeout).WithPolling(polling).
		Should(Succeed(), "waited %s for Karpenter to remove the nodes of NodePool %s", e.timeout, nodePool)
}
