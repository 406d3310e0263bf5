package environment

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	"github.com/onsi/ginkgo/v2/types"

	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// scenarioEntry is the report entry a spec leaves for the suite report.
const scenarioEntry = "nodeprint-scenario"

// recordScenario attaches a scenario's result to the running spec, as JSON
// (report entries cross ginkgo -p processes as text).
func recordScenario(sc report.Scenario) {
	b, err := json.Marshal(sc)
	if err != nil {
		return
	}
	AddReportEntry(scenarioEntry, string(b), ReportEntryVisibilityNever)
}

// WriteSuiteReport turns the suite's specs into a nodeprint report (one
// scenario per spec that recorded one; a spec's own failure makes its
// scenario fail even when the verdict was right, e.g. leftovers) and writes
// it to out/suites/<suite>/. Call it from ReportAfterSuite.
func WriteSuiteReport(r Report, suite string) {
	rep := report.New("suite:"+suite, r.StartTime)
	for _, spec := range r.SpecReports {
		for _, e := range spec.ReportEntries {
			if e.Name != scenarioEntry {
				continue
			}
			var sc report.Scenario
			if err := json.Unmarshal([]byte(e.Value.String()), &sc); err != nil {
				continue
			}
			switch {
			case spec.State.Is(types.SpecStatePassed):
			case spec.State.Is(types.SpecStateFailed):
				sc.Status = report.Failed
				sc.Failure = spec.Failure.Message
			default: // panicked, interrupted, aborted, timed out
				sc.Status = report.Error
				sc.Error = spec.Failure.Message
			}
			rep.Add(sc)
		}
	}
	code := 0
	if !r.SuiteSucceeded {
		code = 1
	}
	tc, err := toolchain.Find()
	if err != nil {
		fmt.Fprintf(os.Stderr, "suite report not written: %v\n", err)
		return
	}
	rep.Stack = report.Stack{Karpenter: tc.Versions.Karpenter, Kubernetes: tc.Versions.Kubernetes}
	rep.Finish(r.EndTime, code)
	dir := filepath.Join(tc.Root, report.SuiteDir, suite)
	if err := rep.WriteAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "suite report not written: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stdout, "suite report: %s\n", dir)
}
