package explain

import (
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/forecast"
)

// The drift forecast on a live cluster, checked against what Karpenter
// then does with the same edit (docs/scale-in.md, "Drift forecast").
var _ = Describe("forecast drift", Label("catalog:applied", "phase:scale-in"), func() {
	It("names the nodes Karpenter then marks drifted, and none for an edit of budgets alone", func(ctx SpecContext) {
		a := env.NewApplied(ctx, "team-drift")
		nc := "team-" + a.Suffix
		env.ApplyNodeClass(ctx, nc)
		pool := "drift-" + a.Suffix
		sel := map[string]string{"team": pool}
		env.ApplyNodePool(ctx, pool, nc, sel)
		env.ApplyDeployment(ctx, a.Namespace, "web", 3, "1500m", "1Gi", sel)
		env.EventuallyExpectPodsRunning(ctx, a.Namespace, map[string]string{"app": "web"}, 3)
		claims := env.EventuallyExpectNodeClaimsLaunched(ctx, pool)
		_, c := env.Admin()

		live := &karpv1.NodePool{}
		Expect(c.Get(ctx, client.ObjectKey{Name: pool}, live)).To(Succeed())
		// The NodePool as a team's file has it: none of the fields the API
		// server defaults (expireAfter, the disruption block) written out.
		asWritten := func() *karpv1.NodePool {
			np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
			np.Spec.Template.Labels = map[string]string{"team": pool}
			np.Spec.Template.Spec.NodeClassRef = live.Spec.Template.Spec.NodeClassRef
			np.Spec.Template.Spec.Requirements = live.Spec.Template.Spec.Requirements
			return np
		}

		By("an edit of the budgets alone: no node drifts, and no node may go for drift now")
		frozen := asWritten()
		frozen.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		f, err := forecast.DriftOf(ctx, c, frozen)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Defaulted).To(ContainSubstring("dry run"))
		Expect([]int{f.Drifting, f.Unknown, f.Budget.AllowedNow}).To(Equal([]int{0, 0, 0}), "%+v", f)

		By("a NodePool the API server would refuse: the dry run says so, nothing is forecast")
		invalid := asWritten()
		invalid.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "lots"}}
		_, err = forecast.DriftOf(ctx, c, invalid)
		var refused *forecast.InvalidError
		Expect(errors.As(err, &refused)).To(BeTrue(), "want the API server's refusal, got %v", err)
		Expect(err.Error()).To(ContainSubstring("nodes"))

		By("a new template label under a budget of none: every node drifts, its pods would be evicted, none may go now")
		edited := asWritten()
		edited.Spec.Template.Labels["generation"] = "2"
		edited.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		f, err = forecast.DriftOf(ctx, c, edited)
		Expect(err).NotTo(HaveOccurred())
		Expect([]int{f.Drifting, f.Evicted, f.Budget.AllowedNow, f.Budget.Waves}).To(Equal([]int{len(claims), 3, 0, 0}), "%+v", f)
		var want []string
		for _, n := range f.Nodes {
			if n.Drift != "" {
				want = append(want, n.NodeClaim)
			}
		}

		By("applying that edit: Karpenter marks exactly those NodeClaims drifted (the budget keeps them)")
		live.Spec.Template.Labels["generation"] = "2"
		live.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		Expect(c.Update(ctx, live)).To(Succeed())
		Eventually(func(g Gomega) {
			var drifted []string
			for _, x := range env.NodeClaimsOf(ctx, pool) {
				if x.StatusConditions().Get(karpv1.ConditionTypeDrifted).IsTrue() {
					drifted = append(drifted, x.Name)
				}
			}
			g.Expect(drifted).To(ConsistOf(want))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(2*time.Second).
			Should(Succeed(), "waited 2m for Karpenter to mark the forecast NodeClaims drifted")
	}, SpecTimeout(6*time.Minute))
})
