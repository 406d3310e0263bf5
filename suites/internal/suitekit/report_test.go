package suitekit

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/nodeprint/nodeprint/pkg/report"
)

func entry(t *testing.T, sc report.Scenario) types.ReportEntry {
	t.Helper()
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	return types.ReportEntry{Name: scenarioEntry, Value: types.WrapEntryValue(string(b))}
}

// A spec that fails before it records its scenario (a baseline that does
// not load), and a suite node that fails (the cluster does not start),
// get rows of their own: without them the report reads clean.
func TestSpecsThatFailWithoutARowGetOne(t *testing.T) {
	r := types.Report{SpecReports: types.SpecReports{
		{LeafNodeType: types.NodeTypeSynchronizedBeforeSuite, State: types.SpecStateFailed, Failure: types.Failure{Message: "the cluster did not start"}},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "web-service", LeafNodeLabels: []string{"scenario:web-service"},
			State: types.SpecStatePassed, ReportEntries: types.ReportEntries{entry(t, report.Scenario{Name: "web-service", Status: report.Passed})}},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "zone-spread", LeafNodeLabels: []string{"scenario:zone-spread", "catalog:generic"},
			State: types.SpecStateFailed, Failure: types.Failure{Message: "fingerprints/zone-spread.yaml: no such file"}},
		{LeafNodeType: types.NodeTypeIt, ContainerHierarchyTexts: []string{"cluster"}, LeafNodeText: "restarts karpenter",
			State: types.SpecStateTimedout, Failure: types.Failure{Message: "timed out"}},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "skipped", State: types.SpecStateSkipped},
		{LeafNodeType: types.NodeTypeIt, LeafNodeText: "left objects", LeafNodeLabels: []string{"scenario:oom"}, State: types.SpecStateFailed,
			Failure: types.Failure{Message: "objects left"}, ReportEntries: types.ReportEntries{entry(t, report.Scenario{Name: "oom", Status: report.Passed})}},
	}}
	want := []report.Scenario{
		{Name: "SynchronizedBeforeSuite", Status: report.Failed, Failure: "the cluster did not start"},
		{Name: "web-service", Status: report.Passed},
		{Name: "zone-spread", Status: report.Failed, Failure: "fingerprints/zone-spread.yaml: no such file"},
		{Name: "cluster restarts karpenter", Status: report.Error, Error: "timed out"},
		{Name: "oom", Status: report.Failed, Failure: "objects left"},
	}
	if d := cmp.Diff(want, suiteRows(r)); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
}
