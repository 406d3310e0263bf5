package verify

import (
	"errors"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// ReportScenario starts a scenario's report entry: its name, file, and for
// a fault scenario the fault and the expected attribution. The status is
// Error until a result says otherwise. The CLI and the suites share it.
func ReportScenario(s *scenario.Scenario) report.Scenario {
	sc := report.Scenario{Name: s.Metadata.Name, File: s.Path, Status: report.Error, Notes: s.Notes}
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
	var ee *run.EnvironmentError
	if errors.As(err, &ee) {
		what := supervise.Incidents(ee.Incidents)
		if what == "" {
			what = strings.Join(ee.Down, ", ") + " down"
		}
		sc.Verdict = attribute.EnvironmentVerdict(s.Metadata.Name, what)
	}
	return sc
}

// Passes is the one pass rule: a fault scenario passes when the verdict
// names its expected layer (and rule, where it names one), a plain
// scenario when the verdict is none: no rule fired and the fingerprint
// did not regress from its baseline.
func Passes(s *scenario.Scenario, v *attribute.Verdict) bool {
	if v == nil {
		return false
	}
	f := s.Spec.Fault
	if f == nil {
		return v.Verdict == attribute.None
	}
	e := f.Expect
	return e != nil && v.Layer == e.Layer && (e.Rule == "" || v.Rule == e.Rule)
}

func statusOf(passed bool) string {
	if passed {
		return report.Passed
	}
	return report.Failed
}

// Report is the fault scenario's report entry (Passes decides its status).
func (f *FaultResult) Report() report.Scenario {
	sc := ReportScenario(f.Scenario)
	sc.Verdict, sc.Baseline, sc.Observed, sc.Diff = f.Verdict, f.CleanFingerprint, f.Faulted.Fingerprint, f.Diff
	sc.Runs = []string{f.Clean.ID, f.Faulted.ID}
	sc.Timeline = report.TimelineOf(f.Faulted.Observation, f.Faulted.Injected)
	sc.Runbook = report.RunbookPage(f.Verdict.Rule)
	sc.Status = statusOf(Passes(f.Scenario, f.Verdict))
	return sc
}
