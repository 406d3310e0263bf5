package nodepools

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// allowedInstanceTypes is the team's choice for its general NodePool:
// instance types of the KWOK provider's generic catalog.
var allowedInstanceTypes = []string{"c-4x-amd64-linux", "m-4x-amd64-linux"}

var _ = Describe("The general NodePool", Label("team:platform", "nodepool:general"), func() {
	It("gets nodes of its own instance types for a Deployment", Label("workload:web"), func(ctx SpecContext) {
		name := "general-" + rand.String(5)
		team := map[string]string{"team": name}

		// Each helper that creates registers the deletion (and the wait
		// for it) with DeferCleanup at once; cleanups run last first.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		env.ExpectCreated(ctx, ns)
		env.ApplyNodeClass(ctx, name)
		// Registered before the NodePool, so it runs after the NodePool
		// and the Deployment are gone: Karpenter must remove its nodes.
		DeferCleanup(func(ctx SpecContext) { env.EventuallyExpectNodePoolEmpty(ctx, name) }, NodeTimeout(3*time.Minute))
		nodePool := env.ApplyNodePool(ctx, name, name, team, karpv1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: allowedInstanceTypes,
		})
		env.ApplyDeployment(ctx, ns.Name, "web", 6, "1500m", "2Gi", team)

		env.EventuallyExpectNodeClaimsLaunched(ctx, name)
		env.EventuallyExpectPodsRunning(ctx, ns.Name, map[string]string{"app": "web"}, 6)
		nodes := env.EventuallyExpectNodesReady(ctx, name)
		env.ExpectNodesSatisfy(ctx, nodePool)
		var chosen []string
		for _, n := range nodes {
			chosen = append(chosen, n.Labels[corev1.LabelInstanceTypeStable])
		}
		AddReportEntry("instance types Karpenter chose", chosen)
	}, SpecTimeout(6*time.Minute))
})
