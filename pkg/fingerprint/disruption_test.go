package fingerprint

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/observe"
)

// A scale-in as Karpenter does it: at +20 s a multi-node consolidation
// replaces two underutilised nodes with one smaller (launched at +12 s,
// the old ones deleted once it is ready), at +50 s an empty node is
// deleted, and a node that failed to launch is removed without a
// disruption event.
func scaleInObservation(t0 time.Time) *observe.Observation {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	claim := func(name, it string, created, deleted, gone float64) *observe.NodeClaimRecord {
		c := &observe.NodeClaimRecord{Name: name, InstanceType: it, CapacityType: "on-demand", Zone: "z1", Node: "node-" + name, Created: at(created)}
		if it != "" {
			c.Initialized = at(created + 5)
		}
		if deleted > 0 {
			c.Deleted, c.Gone = at(deleted), at(gone)
		}
		return c
	}
	ob := &observe.Observation{Outcome: observe.Settled, End: at(120), NodeClaims: map[string]*observe.NodeClaimRecord{
		"a": claim("a", "c-4x", -100, 20, 23),
		"b": claim("b", "c-4x", -100, 20.4, 24),
		"c": claim("c", "c-2x", -100, 50, 51),
		"d": claim("d", "c-8x", -100, 0, 0),
		"r": claim("r", "c-2x", 12, 0, 0),
		"f": claim("f", "", 30, 31, 31),
	}, Pods: map[string]*observe.PodRecord{
		"p1": {Name: "p1", Node: "node-a"},
		"p2": {Name: "p2", Node: "node-b", Deleted: at(21)},
		"p3": {Name: "p3", Node: "node-a", Deleted: at(2)}, // removed by the scale step, before the decision
		"p4": {Name: "p4", Node: "node-d"},
	}}
	ev := func(s float64, reason, obj, msg string) observe.EventRecord {
		return observe.EventRecord{Time: at(s), Reason: reason, Kind: "NodeClaim", Object: "NodeClaim/" + obj, Message: msg}
	}
	ob.Events = []observe.EventRecord{
		ev(-90, "DisruptionTerminating", "old", "Disrupting NodeClaim: Underutilized"), // before the scale-in
		ev(12, "DisruptionLaunching", "r", "Launching NodeClaim: Underutilized"),
		ev(20, "DisruptionTerminating", "a", "Disrupting NodeClaim: Underutilized"),
		ev(21, "DisruptionTerminating", "b", "Disrupting NodeClaim: Underutilized"),
		ev(50, "DisruptionTerminating", "c", "Disrupting NodeClaim: Empty"),
		ev(51, "Unconsolidatable", "d", "Can't remove without creating 2 candidates"),
	}
	return ob
}

func TestComputeDisruption(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{Budgets: []karpv1.Budget{{Nodes: "50%"}}}}}
	// Two steps: the second 30 s after the first, between the decisions.
	d, err := ComputeDisruption(scaleInObservation(t0), nil, NeverEdited(np), t0, []time.Time{t0, t0.Add(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	want := &Disruption{
		Outcome:   observe.Settled,
		Before:    Selection{InstanceTypes: map[string]int{"c-4x/on-demand": 2, "c-2x/on-demand": 1, "c-8x/on-demand": 1}, CapacityTypes: map[string]int{"on-demand": 4}, Nodes: 4, Zones: 1},
		After:     Selection{InstanceTypes: map[string]int{"c-8x/on-demand": 1, "c-2x/on-demand": 1}, CapacityTypes: map[string]int{"on-demand": 2}, Nodes: 2, Zones: 1},
		Disrupted: map[string]int{"Underutilized": 2, "Empty": 1, NoReason: 1},
		Decisions: []Decision{
			{At: 20, Reason: "Underutilized", Kind: "replace", Nodes: []string{"c-4x/on-demand", "c-4x/on-demand"}, Replacements: []string{"c-2x/on-demand"}, Disrupting: 2, Allowed: 3, Evicted: 2, Step: 1},
			{At: 50, Reason: "Empty", Kind: "delete", Nodes: []string{"c-2x/on-demand"}, Disrupting: 1, Allowed: 2, Evicted: 0, Step: 2},
		},
		Replacements: 1, MaxDisrupting: 2, Evicted: 2, SteadyAfter: 51, Steps: []float64{0, 30},
		Timeline: []Point{{At: 0, Nodes: 4}, {At: 12, Nodes: 5}, {At: 23, Nodes: 4}, {At: 24, Nodes: 3}, {At: 51, Nodes: 2}},
		Kept:     []Kept{{NodeClaim: "d", Message: "Can't remove without creating 2 candidates", At: 51}},
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Fatalf("disruption (-want +got):\n%s", diff)
	}
	// The first decision came while the steps still ran, the second after.
	if diff := cmp.Diff(map[string]int{"replace/Underutilized/multi": 1}, d.Summary().DuringSteps); diff != "" {
		t.Fatalf("summary's decisions during the steps (-want +got):\n%s", diff)
	}
}

// Two commands for one reason far apart are two decisions, and a budget
// window in force at a decision bounds it.
func TestDisruptionDecisionsApartAndBudgetWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	ob := scaleInObservation(t0)
	ob.Events[3].Time = t0.Add(40 * time.Second) // b removed 20 s after a
	ob.NodeClaims["b"].Deleted, ob.NodeClaims["b"].Gone = t0.Add(40*time.Second), t0.Add(41*time.Second)
	sched, dur := "0 9 * * *", 1*time.Hour
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{Budgets: []karpv1.Budget{
		{Nodes: "1", Schedule: &sched, Duration: ptrDuration(dur), Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonUnderutilized}},
	}}}}
	d, err := ComputeDisruption(ob, nil, NeverEdited(np), t0, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range d.Decisions {
		got = append(got, x.Reason+"/"+x.Kind+"/"+itoa(len(x.Nodes))+"/allowed "+itoa(x.Allowed))
	}
	want := []string{"Underutilized/replace/1/allowed 1", "Underutilized/delete/1/allowed 1", "Empty/delete/1/allowed -1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
}

// Karpenter's reason for keeping a node is its latest Unconsolidatable
// event, also one from before the scale-in; a NodeClaim the scale-in
// removed was not kept, whatever Karpenter said of it earlier.
func TestDisruptionKept(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	ob := scaleInObservation(t0)
	ev := func(s float64, obj, msg string) observe.EventRecord {
		return observe.EventRecord{Time: t0.Add(time.Duration(s) * time.Second), Reason: "Unconsolidatable", Kind: "NodeClaim", Object: "NodeClaim/" + obj, Message: msg}
	}
	ob.Events = append(ob.Events[:len(ob.Events)-1],
		ev(-30, "r", "Can't replace with a cheaper node"),
		ev(5, "a", "Can't replace with a cheaper node"),
		ev(-60, "d", "Can't replace with a cheaper node"),
		ev(-20, "d", "not all pods would schedule, p4 would schedule against uninitialized nodeclaim/r"),
		observe.EventRecord{Time: t0, Reason: "Unconsolidatable", Kind: "Node", Object: "Node/node-d", Message: "Can't replace with a cheaper node"},
	)
	d, err := ComputeDisruption(ob, nil, NeverEdited(&karpv1.NodePool{}), t0, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	want := []Kept{
		{NodeClaim: "d", Message: "not all pods would schedule, p4 would schedule against uninitialized nodeclaim/r", At: -20},
		{NodeClaim: "r", Message: "Can't replace with a cheaper node", At: -30},
	}
	if diff := cmp.Diff(want, d.Kept); diff != "" {
		t.Fatalf("kept (-want +got):\n%s", diff)
	}
}

func ptrDuration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func itoa(n int) string { return strconv.Itoa(n) }

// Karpenter's DisruptionBlocked events as v1.14 words them: a pod's
// do-not-disrupt annotation and a PodDisruptionBudget hold their
// NodeClaims, also when reported before the scale-in (Karpenter repeats a
// hold every 2 minutes only); the node's own annotation, a nomination, an
// event on the Node and a NodeClaim gone before the scale-in do not.
func TestDisruptionHeld(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	ob := scaleInObservation(t0)
	blocked := func(s float64, kind, obj, msg string) observe.EventRecord {
		return observe.EventRecord{Time: t0.Add(time.Duration(s) * time.Second), Reason: "DisruptionBlocked", Kind: kind, Object: kind + "/" + obj, Message: msg}
	}
	pod := `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=run-1/web-7d9f-abcde)`
	ob.NodeClaims["gone"] = &observe.NodeClaimRecord{Name: "gone", Created: t0.Add(-100 * time.Second), Deleted: t0.Add(-50 * time.Second), Gone: t0.Add(-49 * time.Second)}
	ob.Events = append(ob.Events,
		blocked(-60, "NodeClaim", "d", pod), // reported in the scale-out, held since
		blocked(-60, "NodeClaim", "gone", pod),
		blocked(5, "Node", "node-d", pod),
		blocked(6, "NodeClaim", "r", `Pdb prevents pod evictions (PodDisruptionBudget=[run-1/web])`),
		blocked(7, "NodeClaim", "a", `Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`),
		blocked(8, "NodeClaim", "b", "Node is nominated for a pending pod"),
		blocked(9, "NodeClaim", "f", "Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[run-1/a run-1/b])"),
	)
	d, err := ComputeDisruption(ob, nil, NeverEdited(&karpv1.NodePool{}), t0, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	want := []Hold{
		{NodeClaim: "d", By: HeldByPod, Message: pod},
		{NodeClaim: "f", By: HeldByPDB, Message: "Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[run-1/a run-1/b])"},
		{NodeClaim: "r", By: HeldByPDB, Message: "Pdb prevents pod evictions (PodDisruptionBudget=[run-1/web])"},
	}
	if diff := cmp.Diff(want, d.Held); diff != "" {
		t.Fatalf("held (-want +got):\n%s", diff)
	}
}

// A loop: the replacement r launched for Underutilized is consolidated
// again for Underutilized, and its own replacement s drifts; a NodeClaim
// launched before the scale-in, or replaced for another reason, is no
// turn of a loop.
func TestDisruptionReplacedAgain(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	ob := scaleInObservation(t0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ob.NodeClaims["r"].Deleted, ob.NodeClaims["r"].Gone = at(70), at(71)
	ob.NodeClaims["s"] = &observe.NodeClaimRecord{Name: "s", InstanceType: "c-2x", CapacityType: "on-demand", Created: at(65), Initialized: at(68), Deleted: at(90), Gone: at(91)}
	ob.NodeClaims["old"] = &observe.NodeClaimRecord{Name: "old", InstanceType: "c-2x", CapacityType: "on-demand", Created: at(-95), Initialized: at(-92), Deleted: at(80), Gone: at(81)}
	ev := func(s float64, reason, obj, msg string) observe.EventRecord {
		return observe.EventRecord{Time: at(s), Reason: reason, Kind: "NodeClaim", Object: "NodeClaim/" + obj, Message: msg}
	}
	ob.Events = append(ob.Events,
		ev(-95, "DisruptionLaunching", "old", "Launching NodeClaim: Underutilized"),
		ev(80, "DisruptionTerminating", "old", "Disrupting NodeClaim: Underutilized"),
		ev(65, "DisruptionLaunching", "s", "Launching NodeClaim: Underutilized"),
		ev(70, "DisruptionTerminating", "r", "Disrupting NodeClaim: Underutilized"),
		ev(90, "DisruptionTerminating", "s", "Disrupting NodeClaim: Drifted"),
	)
	d, err := ComputeDisruption(ob, nil, NeverEdited(&karpv1.NodePool{}), t0, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r"}, d.ReplacedAgain); diff != "" {
		t.Fatalf("replaced again (-want +got):\n%s", diff)
	}
	if got := d.Summary().ReplacedAgain; got != 1 {
		t.Fatalf("summary's replacedAgain = %d, want 1", got)
	}
}

// A NodeClaim deleted in the scale-in and still there 90 s after its drain
// did not terminate; one that went within that time, one whose node still
// runs a pod of the run (a drain, not a termination) and one deleted
// before the scale-in are not counted. The drain ends with the last pod.
// A lingering NodeClaim whose Node has only finalizers that are not
// Karpenter's names them: another controller holds it once Karpenter is
// done.
func TestDisruptionNotGone(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ob := scaleInObservation(t0) // ends at +120 s
	ob.End = at(200)
	ob.NodeClaims["c"].Gone = time.Time{}                                      // deleted at +50 s, empty: stuck 150 s
	ob.NodeClaims["a"].Gone = time.Time{}                                      // deleted at +20 s, p1 still on it: draining
	ob.NodeClaims["b"].Gone = at(21 + 91)                                      // p2 gone at +21 s, the claim 91 s later
	ob.NodeClaims["f"].Deleted, ob.NodeClaims["f"].Gone = at(-30), time.Time{} // before the scale-in
	ob.Pods["p5"] = &observe.PodRecord{Name: "p5", Node: "node-c", Deleted: at(60)}
	if ob.Nodes == nil {
		ob.Nodes = map[string]*observe.NodeRecord{}
	}
	ob.Nodes["node-b"] = &observe.NodeRecord{Name: "node-b", Finalizers: []string{"karpenter.sh/termination"}}
	ob.Nodes["node-c"] = &observe.NodeRecord{Name: "node-c", Finalizers: []string{"storage.example.com/detach", "agent.example.com/drain"}}
	// Karpenter's own finalizer still there: it still waits (for the
	// instance), whatever else holds the Node.
	ob.NodeClaims["e"] = &observe.NodeClaimRecord{Name: "e", InstanceType: "c-2x", CapacityType: "on-demand", Node: "node-e", Created: at(-100), Initialized: at(-95), Deleted: at(55)}
	ob.Nodes["node-e"] = &observe.NodeRecord{Name: "node-e", Finalizers: []string{"storage.example.com/detach", "karpenter.sh/termination"}}
	d, err := ComputeDisruption(ob, nil, NeverEdited(&karpv1.NodePool{}), t0, []time.Time{t0})
	if err != nil {
		t.Fatal(err)
	}
	want := []Lingering{
		{NodeClaim: "b", Drained: 21, For: 91, Gone: true},
		{NodeClaim: "c", Drained: 60, For: 140, HeldBy: []string{"agent.example.com/drain", "storage.example.com/detach"}},
		{NodeClaim: "e", Drained: 55, For: 145},
	}
	if diff := cmp.Diff(want, d.NotGone); diff != "" {
		t.Fatalf("not gone (-want +got):\n%s", diff)
	}
}

// A step that edits the NodePool's budgets bounds the decisions after it,
// not those before: a change freeze applied at +30 s leaves the decision
// at +20 s under the budget it had. Where an edit falls within the
// decision's event second, either budget may have been in force, and the
// larger one bounds it: a freeze lifted at +20.5 s may already have been
// lifted for the decision the event dates +20 s.
func TestDisruptionBudgetOfTheNodePoolAsItWasThen(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	half := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{Budgets: []karpv1.Budget{{Nodes: "50%"}}}}}
	freeze := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{Budgets: []karpv1.Budget{{Nodes: "0"}}}}}
	for _, tc := range []struct {
		name     string
		was, now *karpv1.NodePool
		editAt   time.Duration
		want     []int
	}{
		{"frozen at +30 s", half, freeze, 30 * time.Second, []int{3, 0}},
		{"frozen at +10 s, before both", half, freeze, 10 * time.Second, []int{0, 0}},
		{"unfrozen within the first decision's second", freeze, half, 20500 * time.Millisecond, []int{3, 2}},
	} {
		h := NodePoolHistory{{NodePool: tc.was}, {Since: t0.Add(tc.editAt), NodePool: tc.now}}
		d, err := ComputeDisruption(scaleInObservation(t0), nil, h, t0, []time.Time{t0, t0.Add(tc.editAt)})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, x := range d.Decisions {
			got = append(got, x.Allowed)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: each decision's budget (-want +got):\n%s", tc.name, diff)
		}
	}
}

// A scale-in that did not settle ran for its whole timeout: its ending
// must not read as if it had ended at its last change.
func TestDisruptionEndingSaysWhenTheLastChangeCameForOneThatDidNotSettle(t *testing.T) {
	for _, c := range []struct {
		d    Disruption
		want string
	}{
		{Disruption{Outcome: observe.Settled, SteadyAfter: 74}, "settled after 74 s"},
		{Disruption{Outcome: observe.TimedOut, SteadyAfter: 18}, "timed-out; the last change at 18 s"},
		{Disruption{Outcome: observe.Stalled, SteadyAfter: 30.4}, "stalled; the last change at 30 s"},
	} {
		if diff := cmp.Diff(c.want, c.d.Ending()); diff != "" {
			t.Errorf("Ending() of %s (-want +got):\n%s", c.d.Outcome, diff)
		}
	}
}
