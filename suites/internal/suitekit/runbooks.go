package suitekit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sop"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

var checkPlan = sync.OnceValues(func() (map[string][]string, error) {
	tc, err := toolchain.Find()
	if err != nil {
		return nil, err
	}
	rs, err := attribute.Rules()
	if err != nil {
		return nil, err
	}
	ss, err := repo.Loader(tc).LoadDir(repo.At(tc.Root).FaultScenarios())
	if err != nil {
		return nil, err
	}
	plan, unplaced := sop.CheckPlan(rs, ss)
	if len(unplaced) > 0 {
		return nil, fmt.Errorf("rules %s have no fault scenario of their layer to run their runbook commands in", strings.Join(unplaced, ", "))
	}
	return plan, nil
})

// RunbookChecks runs, once the faulted run has settled and while the fault
// is in place, every runbook command of the rules sop.CheckPlan gives this
// scenario (its expected rule; also, for commands only, the rules of its
// layer that no fault reproduces); and once the clean run has settled, the
// evidence commands of its expected rule, whose patterns must not show
// there. It collects the results in out.
func (e *Environment) RunbookChecks(s *scenario.Scenario, out *[]sop.CheckResult) []run.FaultOption {
	GinkgoHelper()
	plan, err := checkPlan()
	Expect(err).NotTo(HaveOccurred())
	rs, err := attribute.Rules()
	Expect(err).NotTo(HaveOccurred())
	ids := plan[s.Metadata.Name]
	clean := run.WhileClean(func(ctx context.Context, res *run.Result) {
		r, ok := rs.Rule(s.Spec.Fault.Expect.Rule)
		if !ok {
			return
		}
		vars := runVars(res)
		*out = append(*out, sop.RunChecks(ctx, r, vars,
			sop.WithKubeconfig(e.Kubeconfig), sop.WithBinDir(e.Toolchain.Bin), sop.OnClean())...)
	})
	return []run.FaultOption{clean, run.WhileFaulted(func(ctx context.Context, res *run.Result) {
		vars := runVars(res)
		for _, id := range ids {
			r, ok := rs.Rule(id)
			opts := []sop.CheckOption{sop.WithKubeconfig(e.Kubeconfig), sop.WithBinDir(e.Toolchain.Bin)}
			switch {
			case id == sop.CompareRule.ID:
				r = sop.CompareRule
			case !ok:
				continue
			case s.Spec.Fault.Expect.Rule != id:
				opts = append(opts, sop.WithoutSymptom())
			}
			*out = append(*out, sop.RunChecks(ctx, r, vars, opts...)...)
		}
	})}
}

// ExpectRunbookChecksShowSymptoms expects every runbook command that ran
// during the fault to have succeeded and, for the scenario's own rule, to
// show what the runbook says it shows; and its evidence commands, run on
// the clean run, to have succeeded without showing it.
func (e *Environment) ExpectRunbookChecksShowSymptoms(s *scenario.Scenario, results []sop.CheckResult) {
	GinkgoHelper()
	By("checking that the runbook's commands work and show the symptom of " + s.Spec.Fault.Expect.Rule + ", and that its evidence does not show on the clean run")
	Expect(results).NotTo(BeEmpty(), "no runbook command ran during the fault (did the faulted run settle?)")
	rs, err := attribute.Rules()
	Expect(err).NotTo(HaveOccurred())
	if r, ok := rs.Rule(s.Spec.Fault.Expect.Rule); ok && slices.ContainsFunc(r.Checks, attribute.Check.Evidence) {
		Expect(slices.ContainsFunc(results, func(c sop.CheckResult) bool { return c.Clean })).To(BeTrue(),
			"%s has evidence checks and none ran on the clean run (did it settle?)", r.ID)
	}
	var problems []string
	unsettled := false
	for _, r := range results {
		unsettled = unsettled || r.Unsettled()
		on := "fault"
		if r.Clean {
			on = "clean"
		}
		fmt.Fprintf(GinkgoWriter, "[%s] $ %s\n%s\n", on, r.Ran, strings.TrimRight(r.Stdout+r.Stderr, "\n"))
		if p := r.Problem(); p != "" {
			problems = append(problems, p)
		}
	}
	if unsettled {
		problems = append(problems, e.metricsDiagnosis())
	}
	Expect(problems).To(BeEmpty(), "runbook commands that fail or do not show the symptom:\n%s", strings.Join(problems, "\n\n"))
}

// runVars are a run's runbook placeholders: its names, node and
// Karpenter's metrics URL.
func runVars(res *run.Result) sop.Vars {
	vars := sop.VarsFor(res.ID, res.Observation)
	vars.KarpenterMetrics = res.KarpenterMetrics
	return vars
}
