package suitekit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	"github.com/onsi/ginkgo/v2/types"

	"github.com/nodeprint/nodeprint/pkg/repo"
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

// WriteSuiteReport turns the suite's specs into a nodeprint report and
// writes it to out/suites/<suite>/. Call it from ReportAfterSuite.
func WriteSuiteReport(r Report, suite string) {
	rep := report.New("suite:"+suite, r.StartTime)
	for _, sc := range suiteRows(r) {
		rep.Add(sc)
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
	dir := filepath.Join(tc.Root, repo.SuiteReports, suite)
	if err := rep.WriteAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "suite report not written: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stdout, "suite report: %s\n", dir)
}

// suiteRows are the report's rows: one scenario per spec that recorded
// one, and a spec's own failure makes its scenario fail even when the
// verdict was right (objects left behind, say). A spec, or a suite node
// (the cluster's start), that did not pass and recorded none gets a row
// of its own: a baseline that does not load or a cluster that does not
// start fails before any scenario is recorded, and a report without its
// row would read clean (make soak compares these rows).
func suiteRows(r Report) []report.Scenario {
	var out []report.Scenario
	for _, spec := range r.SpecReports {
		recorded := false
		for _, e := range spec.ReportEntries {
			if e.Name != scenarioEntry {
				continue
			}
			var sc report.Scenario
			if err := json.Unmarshal([]byte(e.Value.String()), &sc); err != nil {
				continue
			}
			recorded = true
			out = append(out, withSpecState(sc, spec))
		}
		if !recorded && spec.State.Is(types.SpecStateFailureStates) {
			out = append(out, withSpecState(report.Scenario{Name: rowName(spec), Status: report.Passed}, spec))
		}
	}
	return out
}

// withSpecState makes the row say how its spec ended.
func withSpecState(sc report.Scenario, spec types.SpecReport) report.Scenario {
	switch {
	case spec.State.Is(types.SpecStatePassed):
	case spec.State.Is(types.SpecStateFailed):
		sc.Status = report.Failed
		sc.Failure = spec.Failure.Message
	default: // panicked, interrupted, aborted, timed out
		sc.Status = report.Error
		sc.Error = spec.Failure.Message
	}
	return sc
}

// rowName names a spec's own row: its scenario (the scenario:<name>
// label the entries carry), so that repetitions compare it with the row
// the scenario records when it gets that far; else the suite node or the
// spec's text.
func rowName(spec types.SpecReport) string {
	for _, l := range spec.Labels() {
		if name, ok := strings.CutPrefix(l, "scenario:"); ok {
			return name
		}
	}
	if spec.LeafNodeType != types.NodeTypeIt {
		return spec.LeafNodeType.String()
	}
	return spec.FullText()
}
