package fingerprint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.json")
	data := `[{"name":"c-16x","offerings":[
	  {"Price":0.4,"Requirements":[{"key":"karpenter.sh/capacity-type","values":["on-demand"]},{"key":"topology.kubernetes.io/zone","values":["a"]}]},
	  {"Price":0.4,"Requirements":[{"key":"karpenter.sh/capacity-type","values":["on-demand"]},{"key":"topology.kubernetes.io/zone","values":["b"]}]}]},
	 {"name":"c-4x","offerings":[
	  {"Price":0.1,"Requirements":[{"key":"karpenter.sh/capacity-type","values":["on-demand"]},{"key":"topology.kubernetes.io/zone","values":["a"]}]}]}]`
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func observation() *observe.Observation {
	ob := &observe.Observation{
		Pods: map[string]*observe.PodRecord{}, Nodes: map[string]*observe.NodeRecord{},
		NodeClaims: map[string]*observe.NodeClaimRecord{
			"np-1": {Name: "np-1", Created: at(0), Initialized: at(3), InstanceType: "c-16x", CapacityType: "on-demand", Zone: "a", Node: "n1"},
			"np-2": {Name: "np-2", Created: at(0), Initialized: at(5), InstanceType: "c-16x", CapacityType: "on-demand", Zone: "b", Node: "n2"},
			"np-3": {Name: "np-3", Created: at(0), Initialized: at(4), InstanceType: "c-4x", CapacityType: "on-demand", Zone: "a", Node: "n3"},
			"gone": {Name: "gone", Created: at(0), Deleted: at(9), InstanceType: "c-4x", CapacityType: "on-demand", Zone: "a"},
		},
	}
	for i, node := range []string{"n1", "n1", "n1", "n2", "n2", "n3"} {
		name := "p" + string(rune('a'+i))
		ob.Pods[name] = &observe.PodRecord{Name: name, Created: at(0), Ready: at(4 + i), Phase: "Running", Node: node}
	}
	ob.Pods["oom"] = &observe.PodRecord{Name: "oom", Created: at(0), Ready: at(4), Phase: "Running", Node: "n3", Restarts: 2, LastTermination: "OOMKilled"}
	ob.Pods["pending"] = &observe.PodRecord{Name: "pending", Created: at(0), Phase: "Pending"}
	return ob
}

func TestCompute(t *testing.T) {
	fp, err := Compute(observation(), testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &Fingerprint{
		Selection: Selection{
			InstanceTypes: map[string]int{"c-16x/on-demand": 2, "c-4x/on-demand": 1}, CapacityTypes: map[string]int{"on-demand": 3},
			Nodes: 3, Zones: 2, ZoneSkew: 1, HourlyCost: 0.9, PodsPerNodeMin: 2, PodsPerNodeMax: 3,
		},
		Timing: Timing{
			PodReady:       Percentiles{Count: 7, P50: 6, P90: 9, P99: 9, Max: 9},
			NodeClaimReady: Percentiles{Count: 3, P50: 4, P90: 5, P99: 5, Max: 5},
		},
		Outcomes: Outcomes{Running: 6, Pending: 1, Restarting: 1, OOMKilled: 1},
	}
	if d := cmp.Diff(want, fp); d != "" {
		t.Fatalf("fingerprint (-want +got):\n%s", d)
	}
	if k := fp.Selection.Key(); k != "c-16x/on-demand×2,c-4x/on-demand×1" {
		t.Fatalf("key %q", k)
	}
}

// On the received clock each latency and each of its stages is read from
// the receive times (milliseconds), the server's where a transition was
// not seen happen.
func TestComputeStagesOnTheReceivedClock(t *testing.T) {
	ms := func(v int) time.Time { return t0.Add(time.Duration(v) * time.Millisecond) }
	ob := &observe.Observation{Clock: observe.ReceivedClock, Nodes: map[string]*observe.NodeRecord{},
		NodeClaims: map[string]*observe.NodeClaimRecord{"np-1": {Name: "np-1", Created: at(0), Launched: at(0), Registered: at(2), Initialized: at(2),
			InstanceType: "c-4x", CapacityType: "on-demand", Zone: "a", Node: "n1",
			Received: observe.Received{Created: ms(10), Launched: ms(250), Registered: ms(1650), Initialized: ms(1650)}}},
		Pods: map[string]*observe.PodRecord{"p": {Name: "p", Created: at(0), Scheduled: at(2), Ready: at(3), Phase: "Running", Node: "n1",
			Received: observe.Received{Created: ms(5), Scheduled: ms(1800), Ready: ms(2100)}},
			// On a NodeClaim created before it: no decision waited for.
			"late": {Name: "late", Created: at(1), Scheduled: at(2), Phase: "Pending", Node: "n1",
				Received: observe.Received{Created: ms(900), Scheduled: ms(1800)}}},
	}
	fp, err := Compute(ob, testCatalog(t))
	if err != nil {
		t.Fatal(err)
	}
	one := func(v float64) Percentiles { return Percentiles{Count: 1, P50: v, P90: v, P99: v, Max: v} }
	// The decision is "p"'s alone: 10 ms after it, within the server's
	// second; "late" came after its NodeClaim.
	want := Timing{Clock: observe.ReceivedClock, PodReady: one(2.095), NodeClaimReady: one(1.64), PodScheduled: Percentiles{Count: 2, P50: 0.9, P90: 1.795, P99: 1.795, Max: 1.795},
		PodStart: one(0.3), PodDecision: one(0.005), NodeClaimLaunch: one(0.24), NodeRegistration: one(1.4), NodeInitialization: one(0)}
	if d := cmp.Diff(want, fp.Timing); d != "" {
		t.Fatalf("timing (-want +got):\n%s", d)
	}
}

func TestComputeRejectsTypesOutsideTheCatalog(t *testing.T) {
	ob := observation()
	ob.NodeClaims["np-1"].InstanceType = "m5.large"
	if _, err := Compute(ob, testCatalog(t)); err == nil || !strings.Contains(err.Error(), "not in the catalog") {
		t.Fatalf("want a catalog error, got %v", err)
	}
}

func fp(key map[string]int, nodes int, cost, podP90 float64) *Fingerprint {
	return &Fingerprint{
		Selection: Selection{InstanceTypes: key, Nodes: nodes, HourlyCost: cost, Zones: 1, PodsPerNodeMin: 5, PodsPerNodeMax: 5},
		Timing:    Timing{PodReady: Percentiles{Count: 5, P50: podP90 - 1, P90: podP90}, NodeClaimReady: Percentiles{Count: 1, P50: 2, P90: 3}},
		Outcomes:  Outcomes{Running: 5},
	}
}

func TestBaselineKeepsTheSpread(t *testing.T) {
	a := map[string]int{"c-16x/on-demand": 1}
	b := map[string]int{"c-8x/on-demand": 2}
	bl, err := NewBaseline("s", Provenance{Karpenter: "v1.14.1"}, []*Fingerprint{fp(a, 1, 0.4, 4), fp(b, 2, 0.44, 5), fp(a, 1, 0.4, 4), fp(a, 1, 0.4, 6), fp(a, 1, 0.4, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if len(bl.Selections) != 2 || bl.Selections[0].Runs != 4 || bl.Selections[1].Runs != 1 {
		t.Fatalf("selections %+v", bl.Selections)
	}
	if !strings.Contains(bl.Note, "non-deterministic") {
		t.Fatalf("a scenario with two selections must say so: %q", bl.Note)
	}
	// p90 values 4,5,4,6,4: median 4; no limit is stored (verification
	// tests the values).
	if s := bl.Timing.PodReadyP90; s.Median != 4 || s.MAD != 0 || s.Limit != 0 || s.Largest() != 6 || len(s.Values) != 5 {
		t.Fatalf("p90 samples %+v", s)
	}
	if _, err := NewBaseline("s", Provenance{}, []*Fingerprint{fp(a, 1, 0.4, 4), {Outcomes: Outcomes{Pending: 1}}}); err == nil {
		t.Fatal("runs that end differently cannot make a baseline")
	}
}

// Adding runs later must give the baseline that recording them all at once
// gives, and leave the original alone (a report's copy may still be in use).
func TestAddIsRecordingMoreRuns(t *testing.T) {
	a := map[string]int{"c-16x/on-demand": 1}
	b := map[string]int{"c-8x/on-demand": 2}
	c := map[string]int{"c-32x/on-demand": 1}
	runs := []*Fingerprint{fp(a, 1, 0.4, 4), fp(b, 2, 0.44, 5), fp(a, 1, 0.4, 4), fp(c, 1, 0.8, 9), fp(b, 2, 0.44, 5)}
	runs[3].Selection.Zones, runs[3].Selection.PodsPerNodeMax = 3, 11
	env := Provenance{Karpenter: "v1.14.1", KarpenterSettings: map[string]string{}}
	all, err := NewBaseline("s", env, runs)
	if err != nil {
		t.Fatal(err)
	}
	first, err := NewBaseline("s", env, runs[:2])
	if err != nil {
		t.Fatal(err)
	}
	before := first.clone()
	added, err := first.Add(runs[2:]...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(all, added); d != "" {
		t.Fatalf("added later (-recorded at once +added):\n%s", d)
	}
	if d := cmp.Diff(before, first); d != "" {
		t.Fatalf("Add changed the baseline it was called on:\n%s", d)
	}
	if added.Runs != 5 || added.Zones.Max != 3 || added.PodsPerNode.Max != 11 || len(added.Timing.PodReadyP90.Values) != 5 {
		t.Fatalf("runs %d, zones %+v, pods per node %+v, p90 %+v", added.Runs, added.Zones, added.PodsPerNode, added.Timing.PodReadyP90)
	}
	if added.Note != "non-deterministic: 3 distinct selections in 5 runs" {
		t.Fatalf("note %q", added.Note)
	}
	if _, err := first.Add(&Fingerprint{Selection: runs[0].Selection, Outcomes: Outcomes{Running: 4, Pending: 1}}); err == nil || !strings.Contains(err.Error(), "run 3 ended with") {
		t.Fatalf("a run that ended differently must be refused, got %v", err)
	}
	if _, err := first.Add(); err == nil {
		t.Fatal("adding nothing must be an error")
	}
}

// A run without a latency (no pod or NodeClaim went through that stage)
// has no sample of it. Fails on the code that appended the run's zero: a
// median pulled towards a stage that never happened.
func TestARunWithoutALatencyLeavesNoSamples(t *testing.T) {
	a := map[string]int{"c-16x/on-demand": 1}
	runs := []*Fingerprint{fp(a, 1, 0.4, 4), fp(a, 1, 0.4, 5), fp(a, 1, 0.4, 4)}
	runs[1].Timing.NodeClaimReady = Percentiles{}
	env := Provenance{Karpenter: "v1.14.1", KarpenterSettings: map[string]string{}}
	for name, build := range map[string]func() (*Baseline, error){
		"recorded at once": func() (*Baseline, error) { return NewBaseline("s", env, runs) },
		"added later": func() (*Baseline, error) {
			b, err := NewBaseline("s", env, runs[:1])
			if err != nil {
				return nil, err
			}
			return b.Add(runs[1:]...)
		},
	} {
		bl, err := build()
		if err != nil {
			t.Fatal(err)
		}
		if s := bl.Timing.NodeClaimReadyP50; len(s.Values) != 0 || s.Median != 0 {
			t.Errorf("%s: NodeClaim-ready p50 %+v, want no samples", name, s)
		}
		if s := bl.Timing.PodReadyP50; len(s.Values) != 3 || s.Median != 3 {
			t.Errorf("%s: pod-ready p50 %+v, want the three runs' values", name, s)
		}
		more, err := bl.Add(fp(a, 1, 0.4, 4))
		if err != nil {
			t.Fatal(err)
		}
		if s := more.Timing.NodeClaimReadyP50; len(s.Values) != 0 {
			t.Errorf("%s: a run added later restarted NodeClaim-ready's samples: %+v", name, s)
		}
	}
}

// Derived numbers in a baseline file are checked against its values: a
// hand-edited median, or a schema-2 limit (read, never used since schema
// 3), would otherwise change silently what verification accepts. Fails on
// the code before schema 3, which read every limit on trust.
func TestDerivedNumbersAreChecked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	v2 := "schemaVersion: 2\nscenario: s\nruns: 5\nenvironment: {karpenter: v1.14.1, kubernetes: v1.36.3, catalog: kwok-generic, catalogDigest: d, karpenterSettings: {}}\n" +
		"selections:\n- {instanceTypes: {c-4x/on-demand: 1}, nodes: 1, hourlyCost: 0.2, runs: 5}\n" +
		"timing:\n  podReadyP50: {values: [10, 11, 10, 12, 30], median: 11, mad: 1, limit: LIMIT}\n"
	for limit, ok := range map[string]bool{"32": true, "40": false} {
		if err := os.WriteFile(path, []byte(strings.Replace(v2, "LIMIT", limit, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadBaseline(path)
		switch {
		case ok && err != nil:
			// max(30, 11+4·1.4826·1) + 2 = 32: the limit the old rule derived.
			t.Errorf("limit %s is the values' own: %v", limit, err)
		case !ok && (err == nil || !strings.Contains(err.Error(), "timing.podReadyP50.limit")):
			t.Errorf("hand-edited limit %s: want an error naming timing.podReadyP50.limit, got %v", limit, err)
		}
	}
	bl, err := NewBaseline("s", Provenance{KarpenterSettings: map[string]string{}}, []*Fingerprint{fp(map[string]int{"x/on-demand": 1}, 1, 0.1, 3), fp(map[string]int{"x/on-demand": 1}, 1, 0.1, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if err := bl.Save(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for name, edit := range map[string][2]string{
		"median":         {"median: 4\n", "median: 3\n"},
		"one value less": {"values:\n    - 3\n    - 5\n", "values:\n    - 3\n"},
		"a limit":        {"median: 4\n", "median: 4\n    limit: 9\n"},
		"a clock":        {"clock: server", "clock: sundial"},
		// A schema-3 file whose values are emptied: without the check it
		// loaded and its latency went untested.
		"values emptied": {"values:\n    - 3\n    - 5\n", "values: []\n"},
	} {
		bad := strings.Replace(string(data), edit[0], edit[1], 1)
		if bad == string(data) {
			t.Fatalf("%s: the edit %q does not apply to\n%s", name, edit[0], data)
		}
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadBaseline(path); err == nil {
			t.Errorf("%s edited: want an error", name)
		}
	}
}

func TestSaveLoadRoundTripAndStrictness(t *testing.T) {
	bl, err := NewBaseline("s", Provenance{Karpenter: "v1.14.1", KarpenterSettings: map[string]string{}}, []*Fingerprint{fp(map[string]int{"x/on-demand": 1}, 1, 0.1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := Path(dir, "s")
	if err := bl.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(bl, got); d != "" {
		t.Fatalf("round trip (-saved +loaded):\n%s", d)
	}
	data, _ := os.ReadFile(path)
	bad := filepath.Join(dir, "bad.yaml")
	for name, content := range map[string]string{
		"unknown field":           strings.Replace(string(data), "runs: 1\n", "runs: 1\nrunz: 2\n", 1),
		"wrong schema":            strings.Replace(string(data), "schemaVersion: 3", "schemaVersion: 9", 1),
		"not yaml":                "selections: [",
		"no selections":           "schemaVersion: 1\nscenario: s\nruns: 1\n",
		"accepted, no reason":     string(data) + "accepted:\n- run: s-abcde\n  reason: \"\"\n",
		"accepted twice":          string(data) + "accepted:\n- {run: s-abcde, reason: noise}\n- {run: s-abcde, reason: noise}\n",
		"more accepted than runs": string(data) + "accepted:\n- {run: s-abcde, reason: noise}\n- {run: s-fghij, reason: noise}\n",
	} {
		if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadBaseline(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: want an error naming the file, got %v", name, err)
		}
	}
}

// A baseline recorded before inputs were (schema 1) still loads and is
// still verified; change attribution against it says it needs a
// re-record. One of schema 2 keeps its inputs through a save and load.
func TestSchemaOneLoadsWithoutInputs(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.yaml")
	v1 := "schemaVersion: 1\nscenario: web-service\nruns: 1\nenvironment: {karpenter: v1.14.1, kubernetes: v1.36.3, catalog: kwok-generic, catalogDigest: d, karpenterSettings: {}}\n" +
		"selections:\n- {instanceTypes: {c-4x/on-demand: 1}, nodes: 1, hourlyCost: 0.2, runs: 1}\n"
	if err := os.WriteFile(old, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBaseline(old)
	if err != nil {
		t.Fatalf("a schema 1 baseline must still load: %v", err)
	}
	if b.Inputs != nil || !strings.Contains(b.NoInputs(), "re-record it (nodeprint record web-service)") {
		t.Errorf("inputs %v, NoInputs %q: want none and the re-record command", b.Inputs, b.NoInputs())
	}
	withInputs := strings.Replace(v1, "schemaVersion: 1", "schemaVersion: 1\ninputs: {nodePool: {}, nodeClass: {}, workloads: {}, catalog: {name: x, digest: d}, karpenter: {version: v1}}", 1)
	if err := os.WriteFile(old, []byte(withInputs), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBaseline(old); err == nil || !strings.Contains(err.Error(), "schema 1 has no inputs") {
		t.Errorf("inputs in a schema 1 file: %v, want an error", err)
	}
	b.SchemaVersion = SchemaVersion
	b.Inputs = &inputs.Inputs{NodePool: map[string]any{"limits": map[string]any{"cpu": "4"}}, Workloads: map[string]inputs.Workload{"web": {Replicas: 3}},
		Catalog: inputs.Catalog{Name: "kwok-generic", Digest: "d"}, Karpenter: inputs.Karpenter{Version: "v1.14.1", Binary: "b"}}
	path := filepath.Join(dir, "new.yaml")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := inputs.Diff(b.Inputs, got.Inputs); len(d) != 0 || got.NoInputs() != "" {
		t.Errorf("inputs changed through save and load: %v", d)
	}
}

// Merging two recordings is recording their runs at once; the newer
// recording's inputs are kept, and recordings of other inputs or another
// environment are refused.
func TestMergeIsRecordingTogether(t *testing.T) {
	a := map[string]int{"c-16x/on-demand": 1}
	b := map[string]int{"c-8x/on-demand": 2}
	c := map[string]int{"c-32x/on-demand": 1}
	runs := []*Fingerprint{fp(a, 1, 0.4, 4), fp(b, 2, 0.44, 5), fp(a, 1, 0.4, 4), fp(c, 1, 0.8, 9), fp(b, 2, 0.44, 5)}
	runs[3].Selection.Zones, runs[3].Selection.PodsPerNodeMax = 3, 11
	env := Provenance{Karpenter: "v1.14.1", CatalogDigest: "d", KarpenterSettings: map[string]string{}, Machine: &Machine{CPU: "cpu", Cores: 2}}
	in := &inputs.Inputs{Karpenter: inputs.Karpenter{Version: "v1.14.1"}}
	all, err := NewBaseline("s", env, runs)
	if err != nil {
		t.Fatal(err)
	}
	all.Inputs = in
	older, err := NewBaseline("s", env, runs[:2])
	if err != nil {
		t.Fatal(err)
	}
	older.SchemaVersion = 1 // recorded before inputs were
	newer, err := NewBaseline("s", env, runs[2:])
	if err != nil {
		t.Fatal(err)
	}
	newer.Inputs = in
	merged, err := older.Merge(newer)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(all, merged); d != "" {
		t.Fatalf("merged (-recorded at once +merged):\n%s", d)
	}
	other := *newer
	other.Inputs = &inputs.Inputs{Karpenter: inputs.Karpenter{Version: "v1.15.0"}}
	if _, err := merged.Merge(&other); err == nil || !strings.Contains(err.Error(), "other inputs") {
		t.Errorf("merging runs of other inputs: %v, want a refusal", err)
	}
	elsewhere := *newer
	elsewhere.Provenance.CatalogDigest = "e"
	if _, err := older.Merge(&elsewhere); err == nil || !strings.Contains(err.Error(), "record afresh") {
		t.Errorf("merging runs of another catalog: %v, want a refusal", err)
	}
}

// A baseline keeps how many NodeClaims its runs replaced, through Add,
// Merge and a save and load; one recorded before that keeps it unknown.
func TestBaselineKeepsReplacedNodeClaims(t *testing.T) {
	fp := func(n int) *Fingerprint {
		return &Fingerprint{Selection: Selection{InstanceTypes: map[string]int{"c/on-demand": 1}, Nodes: 1}, Replaced: n}
	}
	b, err := NewBaseline("s", Provenance{Machine: &Machine{CPU: "cpu", Cores: 2}}, []*Fingerprint{fp(2), fp(1)})
	if err != nil {
		t.Fatal(err)
	}
	if b.Replaced == nil || *b.Replaced != (Range{1, 2}) {
		t.Fatalf("replaced %+v, want 1..2", b.Replaced)
	}
	b2, err := b.Add(fp(3))
	if err != nil {
		t.Fatal(err)
	}
	if *b2.Replaced != (Range{1, 3}) || *b.Replaced != (Range{1, 2}) {
		t.Errorf("Add: %+v (original %+v)", b2.Replaced, b.Replaced)
	}
	path := filepath.Join(t.TempDir(), "s.yaml")
	if err := b2.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Replaced == nil || *loaded.Replaced != (Range{1, 3}) {
		t.Errorf("loaded replaced %+v, want 1..3", loaded.Replaced)
	}
	old := b.clone()
	old.Replaced = nil
	if m, err := old.Merge(b); err != nil || m.Replaced != nil {
		t.Errorf("merged with a baseline recorded before replacements: %+v, %v; want unknown", m, err)
	}
	if a, _ := old.Add(fp(5)); a.Replaced != nil {
		t.Errorf("a run added to such a baseline: %+v, want unknown", a.Replaced)
	}
}

// Runs of two machines are not added to one baseline: their latencies and
// Karpenter's usage differ, and the spread of both would widen the
// baseline for each (how mixed-arch was once fixed). A baseline that does
// not say its machine cannot take runs either; the kernel is information.
func TestMergeRefusesRunsOfAnotherMachineClass(t *testing.T) {
	rec := func(m *Machine) *Baseline {
		b, err := NewBaseline("s", Provenance{Karpenter: "v1.14.1", KarpenterSettings: map[string]string{}, Machine: m}, []*Fingerprint{fp(map[string]int{"x/on-demand": 1}, 1, 0.1, 3)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	here := &Machine{CPU: "AMD EPYC 7B13", Cores: 2, Kernel: "6.1"}
	for name, c := range map[string]struct {
		other *Machine
		ok    bool
	}{
		"same class, another kernel": {&Machine{CPU: "AMD EPYC 7B13", Cores: 2, Kernel: "6.6"}, true},
		"another CPU":                {&Machine{CPU: "Intel Xeon 8375C", Cores: 2}, false},
		"more cores":                 {&Machine{CPU: "AMD EPYC 7B13", Cores: 4}, false},
		"not recorded":               {nil, false},
	} {
		_, err := rec(here).Merge(rec(c.other))
		if c.ok != (err == nil) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "machine") {
			t.Errorf("%s: the error must say why: %v", name, err)
		}
	}
}
