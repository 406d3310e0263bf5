package suitekit

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// FaultScenarioEntries makes one entry per fault scenario, labelled
// scenario:<name>, fault:<fault> and layer:<expected layer>.
func FaultScenarioEntries(dir func(repo.Layout) string, decorators ...any) []TableEntry {
	return scenarioEntries(dir, faultLabels, decorators)
}

// faultLabels are a fault scenario's labels beside scenario:<name>: its
// fault and expected layer, and for one with a scale-in ScaleInCatalog and
// phase:scale-in, since it runs two scale-ins, minutes each (make e2e and
// make scale-in run it, make test keeps the scale-in smoke).
func faultLabels(s *scenario.Scenario) []string {
	var labels []string
	if f := s.Spec.Fault; f != nil {
		labels = append(labels, "fault:"+f.Name)
		if f.Expect != nil {
			labels = append(labels, "layer:"+string(f.Expect.Layer))
		}
	}
	if s.Spec.ScaleIn != nil {
		labels = append(labels, ScaleInCatalog, "phase:scale-in")
	}
	return labels
}

// ExpectAttributed runs the fault scenario (clean, then faulted; the
// injector's Restore is registered with DeferCleanup as soon as it exists)
// and expects the verdict to name the expected layer and rule.
func (e *Environment) ExpectAttributed(ctx context.Context, s *scenario.Scenario, opts ...run.FaultOption) *verify.FaultResult {
	GinkgoHelper()
	Expect(s.Spec.Fault).NotTo(BeNil(), "%s has no fault block", s.Path)
	Expect(s.Spec.Fault.Expect).NotTo(BeNil(), "%s: spec.fault.expect is needed in the fault suite", s.Path)
	By(fmt.Sprintf("running %s clean, then with fault %s", s.Metadata.Name, s.Spec.Fault.Name))
	out, err := e.judge(ctx).Entry(ctx, s, nil, append([]run.FaultOption{run.OnInject(func(inj faults.Injector) {
		DeferCleanup(inj.Restore)
	})}, opts...)...)
	recordScenario(out.Entry)
	Expect(err).NotTo(HaveOccurred())
	res := out.Fault
	v := res.Verdict
	AddReportEntry("verdict", v.Summary())
	want := s.Spec.Fault.Expect
	Expect(v.Layer).To(Equal(want.Layer), "verdict %s", v.Summary())
	if want.Rule != "" {
		Expect(v.Rule).To(Equal(want.Rule), "verdict %s", v.Summary())
	}
	return res
}

// RecordAnomaly writes the fault run's anomaly fingerprint.
func (e *Environment) RecordAnomaly(res *verify.FaultResult) {
	GinkgoHelper()
	By("recording the anomaly fingerprint of " + res.Scenario.Metadata.Name)
	f := res.Scenario.Spec.Fault
	a := attribute.NewAnomaly(res.Scenario.Metadata.Name, f.Name, f.Params, res.Clean.Fingerprint, res.Faulted.Fingerprint, res.Diff, res.Verdict)
	Expect(a.Save(repo.AnomalyPath(e.fingerprintsDir(), res.Scenario.Metadata.Name))).To(Succeed())
}

// ExpectAnomalyRecorded expects the committed anomaly fingerprint to exist
// and to name the layer and rule this run reached, so that the runbooks
// generated from it describe what the classifier does.
func (e *Environment) ExpectAnomalyRecorded(res *verify.FaultResult) {
	GinkgoHelper()
	By("checking the recorded anomaly fingerprint of " + res.Scenario.Metadata.Name)
	path := repo.AnomalyPath(e.fingerprintsDir(), res.Scenario.Metadata.Name)
	a, err := attribute.LoadAnomaly(path)
	Expect(err).NotTo(HaveOccurred(), "record it with: go test ./suites/faults/... -args -update-fingerprints")
	Expect(a.Fault).To(Equal(res.Scenario.Spec.Fault.Name), "%s is stale", path)
	Expect([]string{string(a.Layer), a.Rule}).To(Equal([]string{string(res.Verdict.Layer), res.Verdict.Rule}), "%s is stale", path)
}

// ExpectNoFaultLeftovers expects the cluster back in its pre-fault state:
// no fault objects (stages, admission policies, the capacity ConfigMap) and
// no objects or nodes of any run.
func (e *Environment) ExpectNoFaultLeftovers(ctx context.Context) {
	GinkgoHelper()
	By("checking that nothing of the fault or the runs is left")
	left, err := faults.Leftovers(ctx, e.Client)
	Expect(err).NotTo(HaveOccurred())
	Expect(left).To(BeEmpty(), "fault objects left: %s", strings.Join(left, ", "))
	Expect(e.runObjects(ctx)).To(BeEmpty())
}

func (e *Environment) runObjects(ctx context.Context) []string {
	GinkgoHelper()
	out, err := run.Leftovers(ctx, e.Client)
	Expect(err).NotTo(HaveOccurred())
	return out
}
