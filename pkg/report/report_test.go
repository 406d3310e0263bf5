package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	stdhtml "html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nodeprint/nodeprint/internal/chromium"
	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sec(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

// observation: 3 pods created at 0; one NodeClaim created 1, launched 2,
// registered 4, initialised 5; the node Ready at 5; pods scheduled at 5,
// ready at 7; the fault injected 2 s before the start.
func observation() *observe.Observation {
	ob := &observe.Observation{Run: "web-abcde", Start: t0, End: sec(9),
		Pods: map[string]*observe.PodRecord{}, NodeClaims: map[string]*observe.NodeClaimRecord{}, Nodes: map[string]*observe.NodeRecord{}}
	for _, n := range []string{"a", "b", "c"} {
		ob.Pods[n] = &observe.PodRecord{Name: n, Created: sec(0), Scheduled: sec(5), Ready: sec(7)}
	}
	ob.NodeClaims["nc"] = &observe.NodeClaimRecord{Name: "nc", Created: sec(1), Launched: sec(2), Registered: sec(4), Initialized: sec(5)}
	ob.Nodes["n"] = &observe.NodeRecord{Name: "n", Created: sec(4), Ready: sec(5)}
	return ob
}

func TestTimelineCountsEachPhase(t *testing.T) {
	tl := report.TimelineOf(observation(), t0.Add(-2*time.Second))
	if tl.FaultInjectedAt == nil || *tl.FaultInjectedAt != 0 {
		t.Fatalf("fault injected at %v, want 0 (the timeline starts at the injection)", tl.FaultInjectedAt)
	}
	// Second 2 is the observation's start; 2+n is n seconds after it.
	want := map[float64]report.Sample{
		2: {Second: 2, PodsPending: 3},
		3: {Second: 3, PodsPending: 3, NodeClaimsCreated: 1},
		4: {Second: 4, PodsPending: 3, NodeClaimsLaunched: 1},
		6: {Second: 6, PodsPending: 3, NodeClaimsRegistered: 1},
		7: {Second: 7, PodsStarting: 3, NodeClaimsInitialized: 1, NodesReady: 1},
		9: {Second: 9, PodsRunning: 3, NodeClaimsInitialized: 1, NodesReady: 1},
	}
	for _, s := range tl.Samples {
		if w, ok := want[s.Second]; ok {
			if diff := cmp.Diff(w, s); diff != "" {
				t.Errorf("second %v (-want +got):\n%s", s.Second, diff)
			}
			delete(want, s.Second)
		}
	}
	if len(want) > 0 {
		t.Errorf("no samples at %v", want)
	}
}

func sampleReport() *report.Report {
	r := report.New("run", t0)
	r.Stack = report.Stack{Karpenter: "v1.14.1", Kubernetes: "v1.36.3", Provider: "kind",
		Nodes: "nodes without --privileged: every capability but SYS_RESOURCE (the engine lacks it), through nodeprint's docker wrapper"}
	r.Add(report.Scenario{Name: "web-service", File: "fixtures/scenarios/web-service.yaml", Status: report.Passed, Seconds: 31,
		Runs: []string{"web-service-abcde"}, Verdict: &attribute.Verdict{Verdict: attribute.None, Reason: "no rule fired and the fingerprint matches the baseline", Fired: []attribute.Fired{}},
		Diff: &diff.Diff{Scenario: "web-service", Deviations: []diff.Deviation{}}, Timeline: report.TimelineOf(observation(), time.Time{}),
		Observed: &fingerprint.Fingerprint{Disruption: &fingerprint.Disruption{Outcome: "settled", SteadyAfter: 74.4,
			Before:    fingerprint.Selection{Nodes: 4, HourlyCost: 0.2172},
			After:     fingerprint.Selection{Nodes: 1, HourlyCost: 0.0543},
			Disrupted: map[string]int{"Empty": 3}, KarpenterRemoved: map[string]int{"empty": 3}, MaxDisrupting: 1,
			Decisions: []fingerprint.Decision{{At: 19, Reason: "Empty", Kind: "delete", Nodes: []string{"c-2x-amd64-linux/on-demand"}, Disrupting: 1, Allowed: 1}}}}})
	r.Add(report.Scenario{Name: "memory-leak", File: "fixtures/scenarios/faults/memory-leak.yaml", Status: report.Failed, Seconds: 95.4,
		Fault: "memory-leak", Expected: &report.Expectation{Layer: "L3", Rule: "L3-oom-killed"},
		Verdict: &attribute.Verdict{Verdict: "L2-orchestration", Layer: "L2", Rule: "L2-no-provisioning", Title: attribute.Text{En: "Karpenter does not provision for pods that fit"},
			Owner: attribute.Text{En: "platform team"}, Fired: []attribute.Fired{{Rule: "L2-no-provisioning", Layer: "L2", Evidence: []attribute.Value{{ID: "pods.pendingLong", Value: 2, Available: true}}}}},
		Diff:    &diff.Diff{Scenario: "memory-leak", Deviations: []diff.Deviation{{Path: "outcomes.oomKilled", Baseline: "0", Observed: "4", Rule: "pod outcomes must match the baseline", Severity: diff.Regression}}},
		Runbook: report.RunbookPage("L2-no-provisioning"), Timeline: report.TimelineOf(observation(), t0.Add(-2*time.Second))})
	r.Add(report.Scenario{Name: "crash-loop", Status: report.Error, Seconds: 12, Fault: "crash-loop", Expected: &report.Expectation{Layer: "L3"},
		Error: "the environment failed: Karpenter exited"})
	r.Finish(sec(140), 1)
	return r
}

func TestSummaryCountsAndSorts(t *testing.T) {
	r := sampleReport()
	if want := (report.Summary{Total: 3, Passed: 1, Failed: 1, Errors: 1, ExitCode: 1}); r.Summary != want {
		t.Errorf("summary %+v, want %+v", r.Summary, want)
	}
	var names []string
	for _, s := range r.Scenarios {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "crash-loop,memory-leak,web-service" {
		t.Errorf("scenarios not sorted by name: %v", names)
	}
}

// The JSON report validates against the documented schema.
// validate checks a report's JSON against docs/report.schema.json and
// returns the compiled schema.
func validate(t *testing.T, r *report.Report) (*jsonschema.Schema, []byte) {
	t.Helper()
	schema, err := jsonschema.NewCompiler().Compile("../../docs/report.schema.json")
	if err != nil {
		t.Fatalf("compiling docs/report.schema.json: %v", err)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("report.json does not validate: %v\n%s", err, b)
	}
	return schema, b
}

func TestJSONValidatesAgainstTheSchema(t *testing.T) {
	schema, b := validate(t, sampleReport())
	// The schema is strict where the report is ours: an unknown field fails.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["surprise"] = true
	if err := schema.Validate(m); err == nil {
		t.Error("the schema accepted an unknown top-level field")
	}
}

func TestJUnit(t *testing.T) {
	b, err := sampleReport().JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Body    string `xml:",chardata"`
				} `xml:"failure"`
				Error *struct {
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &got); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if got.Tests != 3 || got.Failures != 1 || got.Errors != 1 || len(got.Suites) != 1 || len(got.Suites[0].Cases) != 3 {
		t.Fatalf("counts: %+v", got)
	}
	leak := got.Suites[0].Cases[1]
	if leak.Name != "memory-leak" || leak.Failure == nil || !strings.Contains(leak.Failure.Message, "expected L3 (L3-oom-killed)") ||
		!strings.Contains(leak.Failure.Body, "outcomes.oomKilled") || !strings.Contains(leak.Failure.Body, "runbooks/en/rules/L2-no-provisioning.md") {
		t.Errorf("memory-leak case: %+v", leak)
	}
	if c := got.Suites[0].Cases[0]; c.Error == nil || !strings.Contains(c.Error.Message, "Karpenter exited") {
		t.Errorf("crash-loop case: %+v", c)
	}
}

func TestMarkdownGolden(t *testing.T) {
	b, err := sampleReport().Markdown()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden.md")
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./pkg/report -update)", err)
	}
	if d := cmp.Diff(string(want), string(b)); d != "" {
		t.Errorf("summary.md (-want +got), regenerate with -update if intended:\n%s", d)
	}
}

// The HTML report renders in headless Chromium: no console problems, and
// each scenario with a timeline shows a chart with its lines drawn.
func TestHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	if err := r.WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range report.Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("WriteAll did not write %s: %v", f, err)
		}
	}
	p := chromium.Open(t, "file://"+filepath.Join(dir, "report.html"), "h1")
	charts := chromium.Eval[[]map[string]float64](p, `Array.from(document.querySelectorAll(".chart svg")).map(s => {
		const r = s.getBoundingClientRect();
		return {width: r.width, height: r.height, paths: s.querySelectorAll("path").length};
	})`)
	if len(charts) != 2 {
		t.Fatalf("%d timeline charts, want 2 (the errored scenario has none)", len(charts))
	}
	for i, c := range charts {
		if c["width"] < 300 || c["height"] < 100 || c["paths"] < 7 {
			t.Errorf("chart %d is not visible or has no lines: %v", i, c)
		}
	}
	if problems := p.Problems(); len(problems) > 0 {
		t.Errorf("console errors or exceptions:\n%s", strings.Join(problems, "\n"))
	}
}

// An upgrade check names every scenario that moved: a regression, a
// tolerated deviation, a fault attributed otherwise, a run that failed;
// not a plain scenario that matched, nor a fault scenario's expected diff.
func TestUpgradeNamesEveryScenarioThatDiffers(t *testing.T) {
	r := report.New("verify", t0)
	r.Stack = report.Stack{Karpenter: "v1.15.0", Kubernetes: "v1.36.3"}
	r.Upgrade = &report.Upgrade{To: "v1.15.0"}
	base := &fingerprint.Baseline{Scenario: "x", Provenance: fingerprint.Provenance{Karpenter: "v1.14.1"}}
	dev := func(sev diff.Severity) *diff.Diff {
		return &diff.Diff{Deviations: []diff.Deviation{{Path: "selection.zones", Baseline: "2", Observed: "3", Rule: "r", Severity: sev}}}
	}
	r.Add(report.Scenario{Name: "same", Status: report.Passed, Baseline: base, Diff: &diff.Diff{Deviations: []diff.Deviation{}}})
	r.Add(report.Scenario{Name: "tolerated", Status: report.Passed, Baseline: base, Diff: dev(diff.Tolerated)})
	r.Add(report.Scenario{Name: "regressed", Status: report.Failed, Baseline: base, Diff: dev(diff.Regression)})
	r.Add(report.Scenario{Name: "fault-as-expected", Status: report.Passed, Fault: "memory-leak", Diff: dev(diff.Regression)})
	r.Add(report.Scenario{Name: "fault-otherwise", Status: report.Failed, Fault: "memory-leak", Diff: dev(diff.Regression)})
	r.Add(report.Scenario{Name: "broken", Status: report.Error, Error: "karpenter exited"})
	r.Finish(sec(60), 1)
	want := &report.Upgrade{From: "v1.14.1", To: "v1.15.0", Differing: []string{"broken", "fault-otherwise", "regressed", "tolerated"}}
	if d := cmp.Diff(want, r.Upgrade); d != "" {
		t.Errorf("upgrade (-want +got):\n%s", d)
	}
	line := "Karpenter upgrade check v1.14.1 → v1.15.0: 4 of 6 scenario(s) differ from their baselines: broken, fault-otherwise, regressed, tolerated (tolerated)"
	if r.UpgradeLine() != line {
		t.Errorf("UpgradeLine() = %q, want %q", r.UpgradeLine(), line)
	}
	md, err := r.Markdown()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "**"+line+"**") {
		t.Errorf("summary.md lacks the upgrade line:\n%s", md)
	}
	validate(t, r)
	clean := report.New("verify", t0)
	clean.Upgrade = &report.Upgrade{From: "v1.14.1", To: "v1.15.0"}
	clean.Add(report.Scenario{Name: "same", Status: report.Passed, Baseline: base, Diff: &diff.Diff{}})
	clean.Finish(sec(10), 0)
	if got := clean.UpgradeLine(); got != "Karpenter upgrade check v1.14.1 → v1.15.0: none of the 1 scenario(s) differs from its baseline" {
		t.Errorf("UpgradeLine() of a clean check = %q", got)
	}
}

// Every file a report is written to is redacted, and the report itself is
// left as it was.
func TestWriteAllRedactsSecrets(t *testing.T) {
	r := sampleReport()
	r.Scenarios[0].Error = "failed to create Deployment: token=s3cr3tvalue rejected"
	for i := range r.Scenarios {
		if v := r.Scenarios[i].Verdict; v != nil {
			v.Reason = "event: Authorization: Bearer abcdefghijklmnopqrstuvwxyz"
		}
	}
	dir := t.TempDir()
	if err := r.WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range report.Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"s3cr3tvalue", "abcdefghijklmnopqrstuvwxyz"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q", name, secret)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, report.Files["json"]))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("token=[REDACTED] rejected")) {
		t.Errorf("report.json does not show where the mask is:\n%s", b)
	}
	if !strings.Contains(r.Scenarios[0].Error, "s3cr3tvalue") {
		t.Error("WriteAll must not change the report it writes")
	}
}

// A scenario the environment failed under carries the verdict
// inconclusive with its cause; the schema knows the field.
func TestEnvironmentVerdictValidates(t *testing.T) {
	r := sampleReport()
	r.Add(report.Scenario{Name: "broken", Status: report.Error, Error: "run broken-x: the environment failed: karpenter exited (pid 9)",
		Verdict: attribute.EnvironmentVerdict("broken", "karpenter exited (pid 9)")})
	r.Finish(time.Now(), 3)
	_, b := validate(t, r)
	if !bytes.Contains(b, []byte(`"cause": "environment"`)) {
		t.Fatalf("report.json lacks the cause:\n%s", b)
	}
}

// A plain scenario whose inputs changed shows the changes beside the
// fingerprint diff, and what they did to provisioning, in every format;
// the JSON validates.
func TestInputChangesInEveryFormat(t *testing.T) {
	bl := &fingerprint.Baseline{Scenario: "web-service", Inputs: &inputs.Inputs{}, Selections: []fingerprint.SeenSelection{
		{InstanceTypes: map[string]int{"c-4x/on-demand": 1}, Nodes: 1, HourlyCost: 0.17, Runs: 5}}}
	obs := &fingerprint.Fingerprint{Selection: fingerprint.Selection{InstanceTypes: map[string]int{"c-4x/on-demand": 2}, Nodes: 2, HourlyCost: 0.36}}
	changes := []inputs.Change{{Path: "nodePool.requirements[topology.kubernetes.io/zone]", Was: "In [a b c]", Now: "In [a]"},
		{Path: "workloads.api.containers[api].resources.requests.cpu", Was: "500m", Now: "2"}}
	r := report.New("verify", t0)
	r.Add(report.Scenario{Name: "web-service", Status: report.Failed, Seconds: 30, Baseline: bl, Observed: obs,
		Diff:   &diff.Diff{Scenario: "web-service", Deviations: []diff.Deviation{{Path: "selection.nodes", Baseline: "1", Observed: "2", Severity: diff.Regression}}},
		Inputs: &report.InputChanges{Changes: changes, Accept: "nodeprint record web-service"}})
	r.Finish(sec(30), 1)
	for format, out := range formats(t, r) {
		for _, want := range []string{"nodePool.requirements[topology.kubernetes.io/zone]", "In [a b c]", "500m", "nodeprint record web-service",
			"cost $0.17/h → $0.36/h (+112%), nodes 1 → 2"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not show %q", format, want)
			}
		}
	}
	if got := report.InputsOf(&fingerprint.Baseline{Scenario: "old", SchemaVersion: 1}, &inputs.Inputs{}); got.Unknown == "" || len(got.Changes) != 0 {
		t.Errorf("a schema 1 baseline: %+v, want the inputs unknown", got)
	}
}

// How the machine-dependent metrics were judged is in every format, for a
// passed scenario too: a paired verification's ratios with their
// intervals, and a fallback to the recorded runs with its reason.
func TestTimingInEveryFormat(t *testing.T) {
	pairedT := &diff.Timing{Method: diff.Paired, Reason: "interleaved", Reference: "v1.14.1 (sha256 5c331774cafe)", Candidate: "v1.14.1 (sha256 0123456789ab)",
		Pairs: 12, MinPairs: 12, MaxPairs: 16, Alpha: 0.01, Margin: 1.1, Confidence: 0.95,
		Metrics: []diff.PairedMetric{
			{Path: "timing.podReady.p50", Unit: "s", Ratio: 1.31, Lo: 1.18, Hi: 1.46, Reference: 4, Candidate: 5.24, P: 0.0002, AdjustedP: 0.0024, Decision: "regressed", Margin: 1.1},
			{Path: "karpenter.cpuSeconds", Unit: "cpu-s", Ratio: 1.02, Lo: 0.97, Hi: 1.07, Reference: 3, Candidate: 3.06, P: 0.3, AdjustedP: 1, Decision: "no-regression", Margin: 1.5},
		}}
	fallback := &diff.Timing{Method: diff.Recorded, Reason: "the baseline's build is not here to run as the reference arm"}
	r := report.New("verify", t0)
	r.Add(report.Scenario{Name: "web-service", Status: report.Failed, Seconds: 30,
		Diff: &diff.Diff{Scenario: "web-service", Timing: pairedT, Deviations: []diff.Deviation{{Path: "timing.podReady.p50", Baseline: "reference 4.000s", Observed: "candidate 5.240s (1.31× [1.18, 1.46])", Severity: diff.Regression}}}})
	r.Add(report.Scenario{Name: "mixed-arch", Status: report.Passed, Seconds: 30, Diff: &diff.Diff{Scenario: "mixed-arch", Timing: fallback}})
	r.Finish(sec(30), 1)
	for format, out := range formats(t, r) {
		for _, want := range []string{"timing.podReady.p50 1.31× [1.18, 1.46] regressed", "paired with the reference over 12 pair(s)",
			"compared with the baseline's recorded runs (not paired): the baseline's build is not here"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s does not show %q", format, want)
			}
		}
		if strings.Contains(out, "karpenter.cpuSeconds 1.02×") {
			t.Errorf("%s lists a metric decided no-regression in the one-line summary", format)
		}
	}
}

// formats validates r's JSON and renders its other formats as text a
// person reads (entities unescaped), by format name.
func formats(t *testing.T, r *report.Report) map[string]string {
	t.Helper()
	validate(t, r)
	md, err := r.Markdown()
	if err != nil {
		t.Fatal(err)
	}
	junit, err := r.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	html, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"markdown": string(md), "junit": stdhtml.UnescapeString(string(junit)), "html": stdhtml.UnescapeString(string(html))}
}

// A scale-in of several steps says after which step each decision came;
// one of a single step does not.
func TestScaleInLinesPlaceDecisionsAmongSteps(t *testing.T) {
	x := fingerprint.Decision{At: 95, Reason: "Underutilized", Kind: "delete", Nodes: []string{"c-2x/on-demand"}, Disrupting: 1, Allowed: 1, Step: 4}
	sc := report.Scenario{Observed: &fingerprint.Fingerprint{Disruption: &fingerprint.Disruption{Outcome: observe.Settled,
		Disrupted: map[string]int{"Underutilized": 1}, Decisions: []fingerprint.Decision{x}, Steps: []float64{0, 20, 40, 60, 80, 100}}}}
	want := "  at 95 s (after step 4 of 6): delete Underutilized of 1 node(s) [c-2x/on-demand]; 1 disrupting, budget 1; 0 pod(s) evicted"
	if got := sc.ScaleInLines(); len(got) != 2 || got[1] != want {
		t.Fatalf("lines %q, want the decision as %q", got, want)
	}
	sc.Observed.Disruption.Steps = []float64{0}
	if got := sc.ScaleInLines(); strings.Contains(got[1], "step") {
		t.Fatalf("a scale-in of one step names no step: %q", got[1])
	}
}

// A NodeClaim a pod held is its own line, with Karpenter's words.
func TestScaleInLinesNameWhatHeldANode(t *testing.T) {
	msg := `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=run-1/web-0)`
	sc := report.Scenario{Observed: &fingerprint.Fingerprint{Disruption: &fingerprint.Disruption{Outcome: observe.Settled,
		Held: []fingerprint.Hold{{NodeClaim: "run-1-abc", By: fingerprint.HeldByPod, Message: msg}}}}}
	want := "  held by a do-not-disrupt pod: " + msg + " (NodeClaim run-1-abc)"
	if got := sc.ScaleInLines(); len(got) != 2 || got[1] != want {
		t.Fatalf("lines %q, want the hold as %q", got, want)
	}
}

// A NodeClaim Karpenter's consolidation kept is its own line, with its
// words and when it said them.
func TestScaleInLinesSayWhyKarpenterKeptANode(t *testing.T) {
	sc := report.Scenario{Observed: &fingerprint.Fingerprint{Disruption: &fingerprint.Disruption{Outcome: observe.Settled,
		Kept: []fingerprint.Kept{{NodeClaim: "run-1-abc", Message: "Can't replace with a cheaper node", At: -12}}}}}
	want := "  kept by Karpenter's consolidation: Can't replace with a cheaper node (NodeClaim run-1-abc, said at -12 s)"
	if got := sc.ScaleInLines(); len(got) != 2 || got[1] != want {
		t.Fatalf("lines %q, want the kept node as %q", got, want)
	}
}
