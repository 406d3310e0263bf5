package explain

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/explain"
	"github.com/nodeprint/nodeprint/pkg/layer"
)

// What a platform team applied itself (kubectl, GitOps), not through a
// nodeprint run: explain must be right on objects it did not create.
var _ = Describe("explain on objects applied by the team", Label("catalog:applied"), func() {
	// The seeds' headline case: resources are plentiful, yet the pods stay
	// Pending because no NodePool's nodes would carry what they select.
	It("names the policy when no NodePool admits pods the catalog could serve, and says what is missing without the catalog", Label("layer:L2"), func(ctx SpecContext) {
		a := env.NewApplied(ctx, "team-orders")
		nc := "team-" + a.Suffix
		env.ApplyNodeClass(ctx, nc)
		env.ApplyNodePool(ctx, "team-a-"+a.Suffix, nc, map[string]string{"team": "a"})
		env.ApplyNodePool(ctx, "team-b-"+a.Suffix, nc, map[string]string{"team": "b"})
		env.ApplyDeployment(ctx, a.Namespace, "orders", 2, "500m", "512Mi", map[string]string{"team": "c"})
		env.EventuallyExpectPending(ctx, a.Namespace, "orders", 2)
		cfg, c := env.Admin()

		By("with the catalog: the catalog has instances that would serve them, so the policy excludes them (L2)")
		w := env.ExpectExplained(ctx, cfg, c, a.Namespace, "orders", explain.WithCatalog(env.Catalog()))
		Expect([]string{string(w.Verdict.Layer), w.Verdict.Rule}).To(Equal([]string{"L2", "L2-nodepool-excludes-fitting-instances"}), "verdict %s", w.Verdict.Summary())
		Expect(w.NodePool).To(BeEmpty())
		Expect(w.Unadmitted).To(ContainSubstring("team-a-" + a.Suffix))

		By("without the catalog: inconclusive, naming the pods no NodePool admits and what would decide")
		w = env.ExpectExplained(ctx, cfg, c, a.Namespace, "orders")
		Expect(w.Verdict.Verdict).To(Equal(attribute.Inconclusive), "verdict %s", w.Verdict.Summary())
		Expect(w.Verdict.Reason).To(And(ContainSubstring("no NodePool admits"), ContainSubstring("--catalog")))
		Expect(w.Verdict.Reason).NotTo(ContainSubstring("baseline"))
	}, SpecTimeout(3*time.Minute))

	It("names the application when no NodePool admits pods that nothing in the catalog could serve", Label("layer:L3"), func(ctx SpecContext) {
		a := env.NewApplied(ctx, "team-mainframe")
		nc := "team-" + a.Suffix
		env.ApplyNodeClass(ctx, nc)
		env.ApplyNodePool(ctx, "team-a-"+a.Suffix, nc, map[string]string{"team": "a"})
		env.ApplyDeployment(ctx, a.Namespace, "batch", 1, "500m", "512Mi", map[string]string{"team": "c", "kubernetes.io/arch": "s390x"})
		env.EventuallyExpectPending(ctx, a.Namespace, "batch", 1)
		cfg, c := env.Admin()
		w := env.ExpectExplained(ctx, cfg, c, a.Namespace, "batch", explain.WithCatalog(env.Catalog()))
		Expect(w.Verdict.Layer).To(Equal(layer.L3), "verdict %s", w.Verdict.Summary())
		Expect(w.Unadmitted).NotTo(BeEmpty())
	}, SpecTimeout(3*time.Minute))

	// A node class explain may not read is unknown, never "missing": on a
	// cluster whose RBAC withholds node classes the verdict was a
	// confident L2-nodeclass-missing.
	It("treats a node class it is refused (403) as unknown, and one that is absent as missing", Label("layer:L2"), func(ctx SpecContext) {
		a := env.NewApplied(ctx, "team-ghost")
		pool := "ghost-" + a.Suffix
		env.ApplyNodePool(ctx, pool, "absent-"+a.Suffix, map[string]string{"team": "ghost"})
		env.ApplyDeployment(ctx, a.Namespace, "web", 1, "500m", "512Mi", map[string]string{"team": "ghost"})
		env.EventuallyExpectPending(ctx, a.Namespace, "web", 1)

		By("with access to node classes: the absent one is missing (L2)")
		cfg, c := env.Admin()
		w := env.ExpectExplained(ctx, cfg, c, a.Namespace, "web", explain.WithCatalog(env.Catalog()))
		Expect(w.NodePool).To(Equal(pool))
		Expect(w.Verdict.Rule).To(Equal("L2-nodeclass-missing"), "verdict %s", w.Verdict.Summary())

		By("refused node classes (403): the node class is unknown, not missing")
		cfg, c = env.ForbiddenNodeClasses(ctx, a)
		w = env.ExpectExplained(ctx, cfg, c, a.Namespace, "web", explain.WithCatalog(env.Catalog()))
		Expect(w.Verdict.Verdict).To(Equal(attribute.Inconclusive), "verdict %s", w.Verdict.Summary())
		Expect(w.Verdict.Reason).To(And(ContainSubstring("L2-nodeclass-missing might apply"), ContainSubstring("forbidden")))
		env.ExpectSignalUnavailable(w, "policy.nodeClassMissing", "forbidden")
	}, SpecTimeout(3*time.Minute))
})
