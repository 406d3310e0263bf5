package faults

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sop"
	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

var _ = DescribeTable("fault attribution",
	func(ctx SpecContext, s *scenario.Scenario, loadErr error) {
		Expect(loadErr).NotTo(HaveOccurred())
		var checks []sop.CheckResult
		res := env.ExpectAttributed(ctx, s, env.RunbookChecks(s, &checks)...)
		env.ExpectRunbookChecksShowSymptoms(s, checks)
		if *updateFingerprints {
			env.RecordAnomaly(res)
		} else {
			env.ExpectAnomalyRecorded(res)
		}
		env.ExpectNoFaultLeftovers(ctx)
	},
	suitekit.FaultScenarioEntries(repo.Layout.FaultScenarios, SpecTimeout(12*time.Minute)),
)
