package baseline

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/suites/internal/environment"
)

var _ = DescribeTable("the committed baseline",
	func(ctx SpecContext, s *scenario.Scenario, loadErr error) {
		Expect(loadErr).NotTo(HaveOccurred())
		if *updateFingerprints {
			env.RecordBaseline(ctx, s)
			return
		}
		env.ExpectMatchesBaseline(ctx, s)
	},
	environment.ScenarioEntries(repo.Layout.Scenarios, SpecTimeout(45*time.Minute)),
)
