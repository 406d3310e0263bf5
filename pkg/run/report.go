package run

import (
	"errors"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// ReportScenario starts a scenario's report entry: its name, file, and for
// a fault scenario the fault and the expected attribution. The status is
// Error until a result says otherwise. The CLI and the suites share it.
func ReportScenario(s *scenario.Scenario) report.Scenario {
	sc := report.Scenario{Name: s.Metadata.Name, File: s.Path, Status: report.Error}
	if f := s.Spec.Fault; f != nil {
		sc.Fault = f.Name
		if e := f.Expect; e != nil {
			sc.Expected = &report.Expectation{Layer: e.Layer, Rule: e.Rule}
		}
	}
	return sc
}

// ReportError is the report entry of a scenario whose run failed with
// err. An environment failure carries the verdict inconclusive
// (environment): the scenario is an error (exit 3), never a layer's fault.
func ReportError(s *scenario.Scenario, err error) report.Scenario {
	sc := ReportScenario(s)
	sc.Error = err.Error()
	var ee *EnvironmentError
	if errors.As(err, &ee) {
		what := supervise.Incidents(ee.Incidents)
		if what == "" {
			what = strings.Join(ee.Down, ", ") + " down"
		}
		sc.Verdict = attribute.EnvironmentVerdict(s.Metadata.Name, what)
	}
	return sc
}

// Report is the fault scenario's report entry: passed when the verdict is
// the expected one.
func (f *FaultResult) Report() report.Scenario {
	sc := ReportScenario(f.Scenario)
	sc.Verdict, sc.Baseline, sc.Observed, sc.Diff = f.Verdict, f.CleanFingerprint, f.Faulted.Fingerprint, f.Diff
	sc.Runs = []string{f.Clean.ID, f.Faulted.ID}
	sc.Timeline = report.TimelineOf(f.Faulted.Observation, f.Faulted.Injected)
	sc.Runbook = report.RunbookPage(f.Verdict.Rule)
	sc.Status = report.Failed
	if f.Correct() {
		sc.Status = report.Passed
	}
	return sc
}

// VerifyReport is a plain run's report entry against its baseline: passed
// when the diff has no regression.
func VerifyReport(s *scenario.Scenario, res *Result, b *fingerprint.Baseline, d *diff.Diff) report.Scenario {
	sc := ReportScenario(s)
	sc.Baseline, sc.Observed, sc.Diff, sc.Runs = b, res.Fingerprint, d, []string{res.ID}
	sc.Inputs = report.InputsOf(b, res.Inputs)
	sc.Timeline = report.TimelineOf(res.Observation, time.Time{})
	sc.Status = report.Passed
	if d.Regressed() {
		sc.Status = report.Failed
	}
	return sc
}
