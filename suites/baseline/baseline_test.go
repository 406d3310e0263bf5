package baseline

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

// verifyOrRecord verifies the scenario against its committed baseline, or
// records it afresh with -update-fingerprints.
func verifyOrRecord(ctx SpecContext, s *scenario.Scenario, loadErr error) {
	Expect(loadErr).NotTo(HaveOccurred())
	if *updateFingerprints {
		env.RecordBaseline(ctx, s)
		return
	}
	env.ExpectMatchesBaseline(ctx, s)
}

var _ = DescribeTable("the committed baseline",
	verifyOrRecord,
	suitekit.ScenarioEntries(repo.Layout.Scenarios, SpecTimeout(45*time.Minute)),
)

// Scale-in: what Karpenter removes after the scale-out, decision by
// decision, against the committed baseline (docs/scale-in.md). make test
// runs empty-nodes-one-at-a-time, the smoke (budgets and decisions); make
// e2e and make scale-in every one.
var _ = DescribeTable("the committed scale-in baseline",
	verifyOrRecord,
	suitekit.ScaleInEntries(repo.Layout.ScaleInScenarios, "empty-nodes-one-at-a-time", Label("phase:scale-in"), SpecTimeout(20*time.Minute)),
)

// The smoke of make sensitivity: a Karpenter build made slower by a known
// amount (its lever) is caught by the paired verification verify runs for
// another Karpenter build (the pinned build and the candidate interleaved
// on this cluster, pkg/paired deciding), on the latency it slows. make
// sensitivity measures how often, for smaller ones.
var _ = Describe("a Karpenter build", Serial, Label("sensitivity:smoke"), func() {
	It("whose every scheduling decision waits pod-ready's median (decide:2) fails web-service's paired verification on pod-ready", func(ctx SpecContext) {
		s, err := suitekit.LoadScenario("web-service")
		Expect(err).NotTo(HaveOccurred())
		env.ExpectLeverCaught(ctx, s, "decide:2")
	}, SpecTimeout(25*time.Minute))
})
