package attribute

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/usage"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// healthy is a settled run: two Ready nodes, four Running pods.
func healthy() *Input {
	ob := &observe.Observation{Start: t0, End: t0.Add(time.Minute), Pods: map[string]*observe.PodRecord{},
		NodeClaims: map[string]*observe.NodeClaimRecord{}, Nodes: map[string]*observe.NodeRecord{}}
	for _, n := range []string{"n1", "n2"} {
		ob.Nodes[n] = &observe.NodeRecord{Name: n, Created: t0, Ready: t0.Add(time.Second), InstanceType: "c-4x", Labels: map[string]string{"kubernetes.io/arch": "amd64"}}
		ob.NodeClaims["c-"+n] = &observe.NodeClaimRecord{Name: "c-" + n, Created: t0, Launched: t0, Registered: t0.Add(time.Second), Initialized: t0.Add(time.Second), Node: n}
	}
	for i, p := range []string{"p1", "p2", "p3", "p4"} {
		node := "n1"
		if i%2 == 1 {
			node = "n2"
		}
		ob.Pods[p] = &observe.PodRecord{Name: p, Workload: "web", Created: t0, Scheduled: t0.Add(time.Second), Ready: t0.Add(2 * time.Second), Node: node, Phase: "Running"}
	}
	np := &karpv1.NodePool{}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Kind: "KWOKNodeClass", Name: "run"}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	tpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	fp := &fingerprint.Fingerprint{Selection: fingerprint.Selection{Nodes: 2, InstanceTypes: map[string]int{"c-4x/on-demand": 2}},
		Timing: fingerprint.Timing{NodeClaimReady: fingerprint.Percentiles{Count: 2, P50: 1, Max: 1}}, Outcomes: fingerprint.Outcomes{Running: 4}}
	bl, _ := fingerprint.NewBaseline("s", fingerprint.Provenance{}, []*fingerprint.Fingerprint{fp})
	// The API server answered the baseline's Karpenter in 100 ms on average.
	bl.Karpenter = &fingerprint.BaselineKarpenter{LatencyMs: fingerprint.Samples{Values: []float64{100}, Median: 100}}
	return &Input{
		Scenario: "s", Baseline: bl, Observed: fp, Observation: ob, Diff: &diff.Diff{},
		Facts: Facts{
			NodePool: np, NodeClassExists: true,
			Workloads:   map[string]*corev1.PodTemplateSpec{"web": tpl},
			Replicas:    map[string]Replicas{"web": {Applied: 4, Desired: 4}},
			Fit:         map[string]fit.Result{"web": {Catalog: 10, NodePool: 5}},
			Allocatable: map[string]corev1.ResourceList{"c-4x": {corev1.ResourceCPU: resource.MustParse("3900m"), corev1.ResourceMemory: resource.MustParse("15Gi"), corev1.ResourcePods: resource.MustParse("110")}},
		},
	}
}

func classify(t *testing.T, in *Input) *Verdict {
	t.Helper()
	rs, err := Rules()
	if err != nil {
		t.Fatal(err)
	}
	v, err := Classify(rs, in)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func pending(in *Input) {
	for _, p := range in.Observation.Pods {
		p.Scheduled, p.Ready, p.Node, p.Phase = time.Time{}, time.Time{}, "", "Pending"
	}
	in.Observation.Nodes, in.Observation.NodeClaims = map[string]*observe.NodeRecord{}, map[string]*observe.NodeClaimRecord{}
	in.Observed.Outcomes = fingerprint.Outcomes{Pending: 4}
	in.Observed.Selection = fingerprint.Selection{}
	in.Observed.Timing = fingerprint.Timing{}
}

// Each rule, given the pattern of its own fault, decides the verdict. It
// is long because it is a table, one row per rule in the decision order.
func TestEveryRuleDecidesItsOwnPattern(t *testing.T) {
	cases := []struct {
		rule   string
		break_ func(in *Input)
	}{
		{"L1-apiserver-degraded", func(in *Input) { n := 40.0; in.Facts.KarpenterErrors = &n }},
		{"L1-apiserver-slow", func(in *Input) { n, ms := 0.0, 420.0; in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &n, &ms }},
		{"L1-insufficient-capacity", func(in *Input) {
			pending(in)
			in.Observation.Events = append(in.Observation.Events, observe.EventRecord{Reason: "InsufficientCapacityError", Kind: "NodeClaim", Count: 3})
		}},
		{"L1-registration-failed", func(in *Input) {
			pending(in)
			in.Observation.NodeClaims["c"] = &observe.NodeClaimRecord{Name: "c", Created: t0, Launched: t0.Add(time.Second)}
		}},
		{"L1-node-not-ready", func(in *Input) { in.Observation.Nodes["n1"].NotReady = true }},
		{"L1-slow-boot", func(in *Input) {
			in.Observed.Timing.NodeClaimReady = fingerprint.Percentiles{Count: 2, P50: 41, Max: 42}
			for _, c := range in.Observation.NodeClaims {
				c.Launched, c.Initialized = c.Created.Add(time.Second), c.Created.Add(41*time.Second)
			}
		}},
		{"L1-node-finalizer-held", func(in *Input) {
			notGone(in)
			in.Observed.Disruption.NotGone[0].HeldBy = []string{"storage.example.com/detach"}
		}},
		{"L1-termination-stuck", func(in *Input) { notGone(in) }},
		{"L2-nodeclass-missing", func(in *Input) {
			pending(in)
			in.Facts.NodeClassExists = false
			// The KWOK provider reports a missing node class as insufficient capacity.
			in.Observation.Events = append(in.Observation.Events, observe.EventRecord{Reason: "InsufficientCapacityError", Kind: "NodeClaim", Count: 1})
		}},
		{"L2-nodepool-excludes-fitting-instances", func(in *Input) {
			pending(in)
			in.Facts.Fit["web"] = fit.Result{Catalog: 10, NodePool: 0}
		}},
		{"L2-nodepool-limits", func(in *Input) {
			pending(in)
			in.Facts.NodePool.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("4")}
			in.Facts.NodePool.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		}},
		{"L2-disruption-churn", func(in *Input) {
			for _, n := range []string{"x", "y"} {
				in.Observation.NodeClaims[n] = &observe.NodeClaimRecord{Name: n, Created: t0, Launched: t0, Registered: t0, Deleted: t0.Add(20 * time.Second)}
			}
		}},
		{"L2-disruption-budget-exceeded", func(in *Input) {
			in.Observed.Disruption = &fingerprint.Disruption{Outcome: observe.Settled, Decisions: []fingerprint.Decision{
				{At: 21, Reason: "Empty", Kind: "delete", Nodes: []string{"a", "b", "c"}, Disrupting: 3, Allowed: 1}}}
		}},
		{"L2-scale-in-churn", func(in *Input) { replacedAgain(in, 0) }},
		{"L2-policy-violation", func(in *Input) { in.Observation.Nodes["n2"].Labels = map[string]string{"kubernetes.io/arch": "arm64"} }},
		{"L2-no-provisioning", func(in *Input) { pending(in) }},
		{"L3-oom-killed", func(in *Input) {
			in.Observation.Pods["p1"].LastTermination, in.Observation.Pods["p1"].Restarts = "OOMKilled", 2
		}},
		{"L3-crash-loop", func(in *Input) {
			in.Observation.Pods["p2"].Waiting, in.Observation.Pods["p2"].LastTermination, in.Observation.Pods["p2"].Restarts = "CrashLoopBackOff", "Error", 3
		}},
		{"L3-image-pull", func(in *Input) { in.Observation.Pods["p3"].Waiting = "ImagePullBackOff" }},
		{"L3-requests-exceed-catalog", func(in *Input) {
			pending(in)
			in.Facts.Fit["web"] = fit.Result{Catalog: 0, NodePool: 0, Largest: "c-256x"}
		}},
		{"L2-karpenter-overprovisions", func(in *Input) { surge(in, 20) }},
		{"L2-karpenter-resources", func(in *Input) { hungry(in, 1600, 2000, 0) }},
		{"L1-catalog-change", func(in *Input) { changeInputs(in, func(x *inputs.Inputs) { x.Catalog.Digest = "other" }) }},
		{"L2-policy-change", func(in *Input) {
			changeInputs(in, func(x *inputs.Inputs) { x.NodePool = map[string]any{"limits": map[string]any{"cpu": "4"}} })
		}},
		{"L2-karpenter-change", func(in *Input) { changeInputs(in, func(x *inputs.Inputs) { x.Karpenter.Version = "v1.15.0" }) }},
		{"L3-workload-change", func(in *Input) {
			changeInputs(in, func(x *inputs.Inputs) { x.Workloads["web"] = inputs.Workload{Replicas: 8} })
		}},
		{"L3-drain-held", func(in *Input) { drainHeld(in, 3) }},
		{"L3-cpu-saturation", func(in *Input) {
			in.Facts.PodUsage = map[string]corev1.ResourceList{"p1": {corev1.ResourceCPU: resource.MustParse("4")}}
		}},
	}
	rs, _ := Rules()
	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			in := healthy()
			tc.break_(in)
			v := classify(t, in)
			if v.Rule != tc.rule {
				t.Fatalf("want rule %s, got %s", tc.rule, v.Summary())
			}
			if want := LayerVerdict(layer.Layer(tc.rule[:2])); v.Verdict != want || string(v.Layer) != tc.rule[:2] {
				t.Errorf("want verdict %s, got %s (layer %s)", want, v.Verdict, v.Layer)
			}
			if len(v.Fired) == 0 || len(v.Fired[0].Evidence) == 0 {
				t.Errorf("a verdict must carry the evidence that decided it: %+v", v.Fired)
			}
			covered[tc.rule] = true
		})
	}
	for _, r := range rs.Rules {
		if !covered[r.ID] {
			t.Errorf("rule %s has no case here", r.ID)
		}
	}
}

// drainHeld is a scale-in under unchanged inputs that removed nothing
// where every baseline run removed baselineRemoved drifted NodeClaims,
// with Karpenter's word that a do-not-disrupt pod held two of them.
func drainHeld(in *Input, baselineRemoved int) {
	changeInputs(in, func(*inputs.Inputs) {})
	in.Baseline.Disruption = &fingerprint.BaselineDisruption{Runs: []fingerprint.DisruptionRun{
		{Outcome: observe.Settled, Disrupted: map[string]int{"Drifted": baselineRemoved}},
		{Outcome: observe.Settled, Disrupted: map[string]int{"Drifted": baselineRemoved}},
	}}
	msg := `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=s/web-1)`
	in.Observed.Disruption = &fingerprint.Disruption{Outcome: observe.Settled, Disrupted: map[string]int{}, Held: []fingerprint.Hold{
		{NodeClaim: "c-n1", By: fingerprint.HeldByPod, Message: msg}, {NodeClaim: "c-n2", By: fingerprint.HeldByPod, Message: msg}}}
}

// A hold is the application's only when it cost the scale-in something
// and Karpenter is the baseline's: the pods that held a baseline run as
// much are its normal, and another Karpenter's hold is that build's change.
func TestDrainHeldNeedsFewerRemovalsUnderTheSameKarpenter(t *testing.T) {
	in := healthy()
	drainHeld(in, 0)
	in.Diff = &diff.Diff{}
	if v := classify(t, in); v.Rule == "L3-drain-held" {
		t.Errorf("held pods where the baseline removed nothing either: %s", v.Summary())
	}
	in = healthy()
	drainHeld(in, 3)
	in.Inputs.Karpenter.Version = "v1.15.0"
	if v := classify(t, in); v.Rule != "L2-karpenter-change" {
		t.Errorf("held under another Karpenter: %s, want L2-karpenter-change", v.Summary())
	}
	in = healthy()
	drainHeld(in, 3)
	in.Observed.Disruption.Held = nil
	if v := classify(t, in); v.Rule == "L3-drain-held" {
		t.Errorf("fewer removals without Karpenter naming a pod: %s", v.Summary())
	}
}

// Consolidation or drift that stops under the baseline's Karpenter and
// NodePool, with no pod Karpenter names as the hold, has no mechanism on
// record: the verdict says so rather than guess a layer.
func TestScaleInThatStopsWithNothingChangedIsInconclusive(t *testing.T) {
	in := healthy()
	drainHeld(in, 3)
	in.Observed.Disruption.Held = nil
	in.Diff = &diff.Diff{}
	in.Diff.Deviations = append(in.Diff.Deviations, diff.Deviation{Path: "disruption.disrupted.Drifted", Baseline: "3", Observed: "0", Severity: diff.Regression})
	v := classify(t, in)
	if v.Verdict != Inconclusive || v.Layer != "" || v.Reason == "" {
		t.Fatalf("a scale-in that stopped with nothing changed and no hold: %s (layer %q), want inconclusive with a reason", v.Summary(), v.Layer)
	}
}

// Karpenter's own reason for the nodes it kept goes into that verdict's
// reason as its words, and changes neither the verdict nor the layer; a
// regression outside the scale-in does not quote it.
func TestScaleInThatStopsQuotesKarpentersReasons(t *testing.T) {
	in := healthy()
	drainHeld(in, 3)
	in.Observed.Disruption.Held = nil
	in.Observed.Disruption.Kept = []fingerprint.Kept{
		{NodeClaim: "c-n1", Message: "Can't replace with a cheaper node", At: 12},
		{NodeClaim: "c-n2", Message: "Can't replace with a cheaper node", At: -40},
		{NodeClaim: "c-n3", Message: "Can't remove without creating 2 candidates", At: 30},
	}
	in.Diff = &diff.Diff{}
	in.Diff.Deviations = append(in.Diff.Deviations, diff.Deviation{Path: "disruption.disrupted.Underutilized", Baseline: "3", Observed: "0", Severity: diff.Regression})
	v := classify(t, in)
	want := `Karpenter's own words on the 3 NodeClaim(s) its consolidation kept: "Can't replace with a cheaper node": c-n1, c-n2 (1 of 2 said before the scale-in); "Can't remove without creating 2 candidates": c-n3`
	if v.Verdict != Inconclusive || v.Layer != "" || !strings.Contains(v.Reason, want) {
		t.Fatalf("got %s (layer %q), want inconclusive whose reason holds %s", v.Summary(), v.Layer, want)
	}
	in.Diff.Deviations = []diff.Deviation{{Path: "latency.podReady.p50", Baseline: "3 s", Observed: "9 s", Severity: diff.Regression}}
	if v := classify(t, in); strings.Contains(v.Reason, "Karpenter's own words") {
		t.Errorf("a scale-out regression quotes the scale-in's kept nodes: %s", v.Summary())
	}
}

// replacedAgain is a regressed scale-in in which Karpenter replaced two of
// its own drift replacements again, where each baseline run did so
// baselineMost times.
func replacedAgain(in *Input, baselineMost int) {
	in.Diff = &diff.Diff{}
	in.Diff.Deviations = append(in.Diff.Deviations, diff.Deviation{Path: "disruption.replacements", Baseline: "[2, 2]", Observed: "9", Severity: diff.Regression})
	in.Baseline.Disruption = &fingerprint.BaselineDisruption{Runs: []fingerprint.DisruptionRun{
		{Outcome: observe.Settled, Disrupted: map[string]int{"Drifted": 2}, Replacements: 2, ReplacedAgain: baselineMost},
	}}
	in.Observed.Disruption = &fingerprint.Disruption{Outcome: observe.TimedOut, Disrupted: map[string]int{"Drifted": 9}, Replacements: 9,
		ReplacedAgain: []string{"web-r1", "web-r2"}}
}

// A loop is the scale-in's own only beyond what the baseline's runs did,
// and only when the fingerprint regressed.
func TestScaleInChurnNeedsMoreLoopsAndARegression(t *testing.T) {
	in := healthy()
	replacedAgain(in, 2)
	if v := classify(t, in); v.Rule == "L2-scale-in-churn" {
		t.Errorf("as many loops as a baseline run: %s", v.Summary())
	}
	in = healthy()
	replacedAgain(in, 0)
	in.Diff = &diff.Diff{}
	if v := classify(t, in); v.Rule == "L2-scale-in-churn" {
		t.Errorf("loops in a fingerprint that matches: %s", v.Summary())
	}
}

// notGone is a scale-in under unchanged inputs whose deleted NodeClaim
// stayed 140 s after its drain.
func notGone(in *Input) {
	changeInputs(in, func(*inputs.Inputs) {})
	in.Observed.Disruption = &fingerprint.Disruption{Outcome: observe.TimedOut, Disrupted: map[string]int{"Empty": 1},
		NotGone: []fingerprint.Lingering{{NodeClaim: "c-n1", Drained: 60, For: 140}}}
}

// Nodes that stay after their drain are the cloud's only under the
// baseline's Karpenter: another build's wait is that build's change.
func TestTerminationStuckNeedsTheSameKarpenter(t *testing.T) {
	in := healthy()
	notGone(in)
	in.Inputs.Karpenter.Version = "v1.15.0"
	in.Diff = &diff.Diff{}
	in.Diff.Deviations = append(in.Diff.Deviations, diff.Deviation{Path: "disruption.outcome", Baseline: "settled", Observed: "timed-out", Severity: diff.Regression})
	if v := classify(t, in); v.Rule != "L2-karpenter-change" {
		t.Errorf("not gone under another Karpenter: %s, want L2-karpenter-change", v.Summary())
	}
}

// A Node held by another controller's finalizer is that controller's
// whichever Karpenter runs: the change rule does not take it.
func TestNodeFinalizerHeldUnderAnotherKarpenter(t *testing.T) {
	in := healthy()
	notGone(in)
	in.Observed.Disruption.NotGone[0].HeldBy = []string{"storage.example.com/detach"}
	in.Inputs.Karpenter.Version = "v1.15.0"
	in.Diff = &diff.Diff{}
	in.Diff.Deviations = append(in.Diff.Deviations, diff.Deviation{Path: "disruption.outcome", Baseline: "settled", Observed: "timed-out", Severity: diff.Regression})
	v := classify(t, in)
	if v.Rule != "L1-node-finalizer-held" {
		t.Fatalf("held under another Karpenter: %s, want L1-node-finalizer-held", v.Summary())
	}
	if s, _ := v.Signal("disruption.notGoneHeld"); !strings.Contains(s.Detail, "held by the finalizer(s) storage.example.com/detach") {
		t.Errorf("the evidence does not name the finalizer: %+v", s)
	}
}

// A Node another controller holds is not the cloud's: the cloud's rule
// does not fire beside the finalizer's.
func TestAHeldNodeIsNotTheClouds(t *testing.T) {
	in := healthy()
	notGone(in)
	in.Observed.Disruption.NotGone[0].HeldBy = []string{"storage.example.com/detach"}
	for _, f := range classify(t, in).Fired {
		if f.Rule == "L1-termination-stuck" {
			t.Errorf("L1-termination-stuck fired for a Node held by another controller's finalizer: %+v", f)
		}
	}
}

// surge gives the run n NodeClaims for its 4 pods, which the baseline
// served with 2 nodes, under unchanged inputs.
func surge(in *Input, n int) {
	changeInputs(in, func(*inputs.Inputs) {})
	in.Diff = &diff.Diff{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("extra-%d", i)
		in.Observation.NodeClaims[name] = &observe.NodeClaimRecord{Name: name, Created: t0, Launched: t0, Registered: t0.Add(time.Second), Initialized: t0.Add(time.Second)}
	}
}

// Effect is not cause: an API server slow or failing while Karpenter
// floods it with NodeClaims far beyond the baseline's need is read as
// Karpenter's (L2), never as the infrastructure's; pods an HPA added raise
// the need with them, so slowness beside such growth stays L1.
func TestAnAPIServerSlowUnderKarpentersOwnFloodIsNotL1(t *testing.T) {
	slow := func(in *Input) { n, ms := 0.0, 900.0; in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &n, &ms }
	in := healthy()
	surge(in, 40)
	slow(in)
	v := classify(t, in)
	if v.Rule != "L2-karpenter-overprovisions" {
		t.Fatalf("a slow API server under a NodeClaim flood: %s, want L2-karpenter-overprovisions", v.Summary())
	}
	for _, f := range v.Fired {
		if f.Layer == "L1" {
			t.Errorf("an L1 rule fired on the flood's effect: %s", f.Rule)
		}
	}
	grown := healthy()
	surge(grown, 40)
	slow(grown)
	for i := 0; i < 80; i++ {
		name := fmt.Sprintf("hpa-%d", i)
		grown.Observation.Pods[name] = &observe.PodRecord{Name: name, Workload: "web", Created: t0, Scheduled: t0.Add(time.Second), Ready: t0.Add(2 * time.Second), Node: "n1", Phase: "Running"}
	}
	if v := classify(t, grown); v.Rule != "L1-apiserver-slow" {
		t.Errorf("NodeClaims that follow the pods (84 pods, 42 NodeClaims at the baseline's 2 pods a node): %s, want L1-apiserver-slow", v.Summary())
	}
}

// Effect is not cause, for disruption too: a node Karpenter replaces takes
// its pods with it, each an eviction, a create and a bind; an API server
// slow under that storm is not L1 (measured: make mutants'
// outside-requirements build on burst-1000, a drifted node of 1,000 pods).
func TestAnAPIServerSlowUnderKarpentersOwnEvictionsIsNotL1(t *testing.T) {
	storm := func(evicted int) *Input {
		in := healthy()
		n, ms := 0.0, 433.0
		in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &n, &ms
		in.Observation.Nodes["n2"].Labels = map[string]string{"kubernetes.io/arch": "arm64"}
		in.Observation.NodeClaims["old"] = &observe.NodeClaimRecord{Name: "old", Created: t0, Launched: t0, Registered: t0, Initialized: t0, Deleted: t0.Add(time.Minute), Node: "gone"}
		for i := 0; i < evicted; i++ {
			name := fmt.Sprintf("evicted-%d", i)
			in.Observation.Pods[name] = &observe.PodRecord{Name: name, Workload: "web", Created: t0, Scheduled: t0, Ready: t0, Deleted: t0.Add(time.Minute), Node: "gone", Phase: "Running"}
		}
		return in
	}
	if v := classify(t, storm(30)); v.Rule != "L2-policy-violation" {
		t.Errorf("a slow API server while Karpenter evicted 30 pods: %s, want L2-policy-violation", v.Summary())
	}
	if v := classify(t, storm(5)); v.Rule != "L1-apiserver-slow" {
		t.Errorf("a slow API server beside 5 evictions: %s, want L1-apiserver-slow", v.Summary())
	}
}

// A Karpenter whose own launch is slow launches late and boots promptly:
// the time is lost before the instance exists, not while it boots, so it
// is not L1-slow-boot (measured: make mutants' slow-launch build read
// L1-slow-boot while the rule timed created → initialised).
func TestASlowLaunchIsNotASlowBoot(t *testing.T) {
	in := healthy()
	changeInputs(in, func(x *inputs.Inputs) { x.Karpenter.Binary = "mutant" })
	in.Observed.Timing.NodeClaimReady = fingerprint.Percentiles{Count: 2, P50: 41, Max: 42}
	for _, c := range in.Observation.NodeClaims {
		c.Launched, c.Initialized = c.Created.Add(40*time.Second), c.Created.Add(41*time.Second)
	}
	if v := classify(t, in); v.Rule != "L2-karpenter-change" {
		t.Fatalf("a slow launch by a changed Karpenter: %s, want L2-karpenter-change", v.Summary())
	}
	for _, c := range in.Observation.NodeClaims {
		c.Launched = c.Created.Add(time.Second)
	}
	if v := classify(t, in); v.Rule != "L1-slow-boot" {
		t.Fatalf("the same time lost while booting: %s, want L1-slow-boot", v.Summary())
	}
}

// changeInputs gives the run inputs that differ from its baseline's as
// change does, and a fingerprint that regressed (more nodes).
// hungry is a run whose Karpenter held peakMiB of memory and made
// requests API requests (failed of them failing) where the baseline's held
// 300 MiB and made 400: the memory verification failed on.
func hungry(in *Input, peakMiB float64, requests, failed int) {
	changeInputs(in, func(*inputs.Inputs) {}) // the same inputs
	in.Baseline.Karpenter = &fingerprint.BaselineKarpenter{
		CPUSeconds: fingerprint.Samples{Values: []float64{2}}, PeakRSSMiB: fingerprint.Samples{Values: []float64{300}},
		Requests: fingerprint.Samples{Values: []float64{400}}, LatencyMs: fingerprint.Samples{Values: []float64{100}, Median: 100}}
	in.Observed.Karpenter = &usage.Usage{CPUSeconds: 2.2, PeakRSSBytes: peakMiB * (1 << 20), RequestsTotal: requests, Failed: failed,
		Requests: map[string]int{"LIST nodeclaims": requests}}
	in.Diff = &diff.Diff{Deviations: []diff.Deviation{{Path: "karpenter.peakRSSMiB", Baseline: "median 300.0 MiB of 10 runs", Observed: fmt.Sprintf("%.1f MiB", peakMiB),
		Severity: diff.Regression, Ratio: peakMiB / 300}}}
}

func changeInputs(in *Input, change func(*inputs.Inputs)) {
	base := func() *inputs.Inputs {
		return &inputs.Inputs{NodePool: map[string]any{}, NodeClass: map[string]any{}, Workloads: map[string]inputs.Workload{"web": {Replicas: 4}},
			Catalog: inputs.Catalog{Name: "kwok-generic", Digest: "d"}, Karpenter: inputs.Karpenter{Version: "v1.14.1", Binary: "b"}}
	}
	in.BaselineInputs, in.Inputs = base(), base()
	change(in.Inputs)
	in.Diff = &diff.Diff{Deviations: []diff.Deviation{{Path: "selection.nodes", Baseline: "2", Observed: "4", Severity: "regression"}}}
}

// A change names the layer that owns the input, and nothing fires on a
// change that did not regress the fingerprint; several changes are listed
// and decided by the decision order.
func TestChangesAreAttributedToTheLayerThatOwnsThem(t *testing.T) {
	in := healthy()
	changeInputs(in, func(x *inputs.Inputs) { x.Karpenter.Version = "v1.15.0" })
	in.Diff = &diff.Diff{}
	if v := classify(t, in); v.Verdict != None {
		t.Errorf("a change that regressed nothing: %s, want none", v.Summary())
	}
	in = healthy()
	changeInputs(in, func(x *inputs.Inputs) {
		x.Workloads["web"] = inputs.Workload{Replicas: 8}
		x.NodePool = map[string]any{"limits": map[string]any{"cpu": "4"}}
	})
	v := classify(t, in)
	if v.Rule != "L2-policy-change" {
		t.Fatalf("a policy and a workload change: %s, want L2-policy-change (L2 before L3)", v.Summary())
	}
	for _, want := range []string{"2 kinds of input changed", "the NodePool or node class (L2)", "a workload (L3)", "nodePool.limits.cpu"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q does not say %q", v.Reason, want)
		}
	}
	in.BaselineInputs = nil
	if v := classify(t, in); v.Verdict != Inconclusive {
		t.Errorf("a regression against a baseline without inputs: %s, want inconclusive", v.Summary())
	}
}

func TestHealthyRunIsNone(t *testing.T) {
	in := healthy()
	errs, ms := 0.0, 8.0
	in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &errs, &ms
	if v := classify(t, in); v.Verdict != None || len(v.Fired) != 0 {
		t.Fatalf("want none, got %s", v.Summary())
	}
}

func TestDecisionOrderPutsInfrastructureFirst(t *testing.T) {
	in := healthy()
	in.Observation.Nodes["n1"].NotReady = true
	in.Observation.Pods["p1"].Waiting = "ImagePullBackOff"
	v := classify(t, in)
	if v.Rule != "L1-node-not-ready" {
		t.Fatalf("want L1-node-not-ready before L3-image-pull, got %s", v.Summary())
	}
	if len(v.Fired) != 2 || v.Fired[1].Rule != "L3-image-pull" {
		t.Errorf("the later rule must still be listed: %+v", v.Fired)
	}
}

// The trap: a leak drives an HPA, Karpenter adds nodes, and the fingerprint
// regresses on nodes and cost. The verdict must stay L3, and its signals
// must show that the selection fits the requests and the nodes are Ready.
func TestMemoryLeakWithHPAIsTheApplication(t *testing.T) {
	in := healthy()
	for _, p := range in.Observation.Pods {
		p.LastTermination, p.Restarts = "OOMKilled", 2
	}
	in.Facts.Replicas["web"] = Replicas{Applied: 4, Desired: 12}
	in.Observed.Selection.Nodes = 5
	in.Diff = &diff.Diff{Deviations: []diff.Deviation{{Path: "selection.nodes", Severity: diff.Regression}, {Path: "selection.hourlyCost", Severity: diff.Regression}}}
	v := classify(t, in)
	if v.Rule != "L3-oom-killed" || v.Verdict != L3Application {
		t.Fatalf("want L3 by L3-oom-killed, got %s", v.Summary())
	}
	var evidence []string
	for _, e := range v.Fired[0].Evidence {
		evidence = append(evidence, e.ID)
	}
	if got := strings.Join(evidence, ","); got != "pods.oomKilled,nodes.ready,nodes.notReady,selection.nodesOverRequested,selection.policyViolations" {
		t.Errorf("the deciding evidence must show OOM kills, Ready nodes and a selection that fits: got %s", got)
	}
	for id, want := range map[string]float64{"selection.nodesOverRequested": 0, "selection.policyViolations": 0, "nodes.notReady": 0, "nodes.ready": 2, "workload.replicaGrowth": 8, "pods.oomKilled": 4, "selection.nodesDelta": 3} {
		s, ok := v.Signal(id)
		if !ok || !s.Available || s.Value != want {
			t.Errorf("signal %s = %+v, want %g", id, s, want)
		}
	}
}

// Pods created just before the run ended (an HPA scaling up) are pending
// and have no NodeClaim yet: that is not Karpenter failing to provision.
func TestFreshPendingPodsAreNotANoProvisioningVerdict(t *testing.T) {
	in := healthy()
	for _, p := range in.Observation.Pods {
		p.LastTermination, p.Restarts = "OOMKilled", 1
	}
	in.Observation.Pods["fresh"] = &observe.PodRecord{Name: "fresh", Workload: "web", Created: in.Observation.End.Add(-3 * time.Second), Phase: "Pending"}
	v := classify(t, in)
	if v.Rule != "L3-oom-killed" {
		t.Fatalf("want L3-oom-killed, got %s", v.Summary())
	}
	in.Observation.Pods["fresh"].Created = in.Observation.End.Add(-PendingGrace)
	if v := classify(t, in); v.Rule != "L2-no-provisioning" {
		t.Fatalf("a pod pending for the grace period with room in the NodePool and no NodeClaim: want L2-no-provisioning, got %s", v.Summary())
	}
}

func TestBrokenHarnessIsInconclusive(t *testing.T) {
	in := healthy()
	in.Observation.Pods["p1"].LastTermination = "OOMKilled"
	in.Facts.Health = "karpenter (process exited)"
	v := classify(t, in)
	if v.Verdict != Inconclusive || !strings.Contains(v.Reason, "karpenter") {
		t.Fatalf("want inconclusive naming the failed component, got %s", v.Summary())
	}
	// The OOM kill fired a layer's rule; the environment still wins.
	if !v.EnvironmentFailed() || v.Label() != "inconclusive (environment)" || v.Layer != "" || v.Rule != "" {
		t.Fatalf("want inconclusive (environment) and no layer, got %s (layer %q, rule %q)", v.Label(), v.Layer, v.Rule)
	}
}

func TestUnexplainedRegressionIsInconclusive(t *testing.T) {
	in := healthy()
	in.Diff = &diff.Diff{Deviations: []diff.Deviation{{Path: "selection.instanceTypes", Severity: diff.Regression}}}
	v := classify(t, in)
	if v.Verdict != Inconclusive || !strings.Contains(v.Reason, "selection.instanceTypes") {
		t.Fatalf("want inconclusive, got %s", v.Summary())
	}
}

// A regression on a run in which nothing recorded differs (same inputs,
// same Karpenter build) says the scenario leaves its outcome to chance;
// the same regression against another build does not.
func TestUnexplainedRegressionOnTheSameBuildSaysTheScenarioIsUndecided(t *testing.T) {
	in := healthy()
	in.Diff = &diff.Diff{Deviations: []diff.Deviation{{Path: "disruption.decisions.delete/Underutilized/single", Baseline: "0", Observed: "1", Severity: diff.Regression}}}
	for method, want := range map[diff.TimingMethod]bool{diff.Unchanged: true, diff.Paired: false, diff.Recorded: false} {
		in.Diff.Timing = &diff.Timing{Method: method}
		v := classify(t, in)
		if v.Verdict != Inconclusive || v.Layer != "" {
			t.Fatalf("%s: got %s (layer %q), want inconclusive", method, v.Summary(), v.Layer)
		}
		if got := strings.Contains(v.Reason, undecidedScenario); got != want {
			t.Errorf("timing %s: the reason says the scenario is undecided: %v, want %v (%s)", method, got, want, v.Reason)
		}
	}
}

func TestParseRulesRejectsBadRules(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown signal": `owners: {L1: {en: a, zh: b}, L2: {en: a, zh: b}, L3: {en: a, zh: b}}
rules:
- {id: L1-x, layer: L1, title: {en: a, zh: b}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: nope, op: ">=", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}`,
		"out of order": `owners: {L1: {en: a, zh: b}, L2: {en: a, zh: b}, L3: {en: a, zh: b}}
rules:
- {id: L3-x, layer: L3, title: {en: a, zh: b}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: pods.pending, op: ">=", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}
- {id: L1-x, layer: L1, title: {en: a, zh: b}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: pods.pending, op: ">=", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}`,
		"specific after change": `owners: {L1: {en: a, zh: b}, L2: {en: a, zh: b}, L3: {en: a, zh: b}}
rules:
- {id: L1-x-change, layer: L1, title: {en: a, zh: b}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: inputs.catalogChanged, op: "==", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}
- {id: L3-x, layer: L3, title: {en: a, zh: b}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: pods.pending, op: ">=", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}`,
		"change rule not named so": `owners: {L1: {en: a, zh: b}, L2: {en: a, zh: b}, L3: {en: a, zh: b}}
rules:
- {id: L1-x, layer: L1, title: {en: a, zh: b}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: inputs.catalogChanged, op: "==", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}`,
		"missing chinese": `owners: {L1: {en: a, zh: b}, L2: {en: a, zh: b}, L3: {en: a, zh: b}}
rules:
- {id: L1-x, layer: L1, title: {en: a}, symptom: {en: a, zh: b}, rulesOut: {en: a, zh: b}, when: [{signal: pods.pending, op: ">=", value: 1}], checks: [{command: kubectl get pods, why: {en: a, zh: b}}]}`,
		"unknown field": `owners: {L1: {en: a, zh: b}, L2: {en: a, zh: b}, L3: {en: a, zh: b}}
rules:
- {id: L1-x, layr: L1}`,
	} {
		if _, err := ParseRules([]byte(doc)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// A rule's own meanwhile advice needs both languages, as its title does.
func TestParseRulesRejectsAMeanwhileInOneLanguage(t *testing.T) {
	lines := strings.Split(string(rulesYAML), "\n")
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "  meanwhile: {en: ") {
			lines[i], n = `  meanwhile: {en: "only English"}`, n+1
		}
	}
	if n == 0 {
		t.Fatal("no rule of rules.yaml has its own meanwhile")
	}
	if _, err := ParseRules([]byte(strings.Join(lines, "\n"))); err == nil || !strings.Contains(err.Error(), "meanwhile needs en and zh") {
		t.Errorf("a meanwhile without zh: got %v", err)
	}
}

// A node class that could not be read (a 403, a timeout) is unknown: the
// node-class rule must not fire on it, and the signal says why it is
// unavailable. The same run with the class known to be missing fires it.
func TestAnUnreadableNodeClassIsNotMissing(t *testing.T) {
	missing := healthy()
	pending(missing)
	missing.Facts.NodeClassExists = false
	missing.Observation.Events = append(missing.Observation.Events, observe.EventRecord{Reason: "InsufficientCapacityError", Kind: "NodeClaim", Count: 1})
	if v := classify(t, missing); v.Rule != "L2-nodeclass-missing" {
		t.Fatalf("a missing node class: rule %q, want L2-nodeclass-missing", v.Rule)
	}
	unknown := healthy()
	pending(unknown)
	unknown.Facts.NodeClassExists = false
	unknown.Facts.NodeClassUnreadable = `failed to read KWOKNodeClass run: kwoknodeclasses.karpenter.kwok.sh "run" is forbidden`
	unknown.Observation.Events = append(unknown.Observation.Events, observe.EventRecord{Reason: "InsufficientCapacityError", Kind: "NodeClaim", Count: 1})
	v := classify(t, unknown)
	if v.Rule == "L2-nodeclass-missing" {
		t.Fatalf("an unreadable node class was read as missing: %s", v.Summary())
	}
	found := false
	for _, s := range v.Signals {
		if s.ID == "policy.nodeClassMissing" {
			found = true
			if s.Available || !strings.Contains(s.Detail, "forbidden") {
				t.Errorf("policy.nodeClassMissing = %+v, want unavailable with the read error as its detail", s)
			}
		}
	}
	if !found {
		t.Error("the verdict lists no policy.nodeClassMissing signal")
	}
}

// Without a baseline (explain) the workload is troubled, so no rule
// firing is inconclusive, never "none", and a rule blocked by a failed
// read is named with the error.
func TestExplainWithoutARuleIsInconclusiveAndNamesWhatCouldNotBeRead(t *testing.T) {
	in := healthy()
	pending(in)
	in.Baseline, in.Diff = nil, nil
	in.Facts.NodeClassUnreadable = `kwoknodeclasses.karpenter.kwok.sh "run" is forbidden`
	v := classify(t, in)
	if v.Verdict != Inconclusive {
		t.Fatalf("verdict %s, want inconclusive", v.Summary())
	}
	for _, want := range []string{"no baseline", "L2-nodeclass-missing might apply", "policy.nodeClassMissing", "forbidden"} {
		if !strings.Contains(v.Reason, want) {
			t.Errorf("reason %q does not say %q", v.Reason, want)
		}
	}
	if strings.Contains(v.Reason, "matches the baseline") {
		t.Errorf("reason %q speaks of a baseline there is none of", v.Reason)
	}
}

// Effect is not cause for Karpenter's own API requests: an API server slow
// while Karpenter floods it with five times its usual requests, mostly
// answered, is not L1 (the v1.8.1 and v1.11.0 shape); the same slowness
// with Karpenter's requests as usual, or mostly failing, still is.
func TestAnAPIServerSlowUnderKarpentersOwnRequestsIsNotL1(t *testing.T) {
	slowAPI := func(requests, failed int) *Input {
		in := healthy()
		hungry(in, 1600, requests, failed)
		n, ms := float64(failed), 300.0
		in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &n, &ms
		return in
	}
	if v := classify(t, slowAPI(2000, 0)); v.Rule != "L2-karpenter-resources" {
		t.Errorf("slow under Karpenter's own 2000 requests (400 in the baseline): %s, want L2-karpenter-resources", v.Summary())
	}
	if v := classify(t, slowAPI(450, 0)); v.Rule != "L1-apiserver-slow" {
		t.Errorf("slow with Karpenter's requests as usual: %s, want L1-apiserver-slow", v.Summary())
	}
	if v := classify(t, slowAPI(2000, 600)); v.Layer != "L1" {
		t.Errorf("slow and failing 30%% of 2000 requests (retries into a degraded API server): %s, want L1", v.Summary())
	}
}

// Slow is what is slow for this API server: a healthy run of a family
// whose NodeClaim writes take about 250 ms on a local API server is not an
// infrastructure fault (measured: 10 of 21 healthy verifications of the
// many-NodePools family read 252-579 ms and named L1 by the fixed bound);
// twice the baseline's latency is.
func TestAPILatencyIsSlowAgainstTheBaselinesOwn(t *testing.T) {
	at := func(ms, baseline float64) *Verdict {
		in := healthy()
		in.Baseline.Karpenter.LatencyMs = fingerprint.Samples{Values: []float64{baseline}, Median: baseline}
		n := 0.0
		in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &n, &ms
		return classify(t, in)
	}
	if v := at(300, 250); v.Layer == "L1" {
		t.Errorf("300 ms where the baseline's runs met 250 ms: %s, want no L1 verdict", v.Summary())
	}
	if v := at(600, 250); v.Rule != "L1-apiserver-slow" {
		t.Errorf("600 ms where the baseline's runs met 250 ms: %s, want L1-apiserver-slow", v.Summary())
	}
	in := healthy()
	in.Baseline.Karpenter = nil
	ms, n := 900.0, 0.0
	in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &n, &ms
	if v := classify(t, in); v.Layer == "L1" {
		t.Errorf("a baseline without the API latency cannot say what is slow: %s, want no L1 verdict", v.Summary())
	}
}

// Karpenter's counters are process-wide: under --parallel, a burst of API
// errors another run caused lands in every run's window. A run that shared
// Karpenter reads its Karpenter-wide signals as unavailable, so the L1 API
// rules, which decide first, do not take a neighbour's burst for this
// run's fault (a crash loop here: L3).
func TestKarpenterWideSignalsOfASharedRunAreUnavailable(t *testing.T) {
	in := healthy()
	for _, p := range in.Observation.Pods {
		p.Waiting, p.Restarts, p.LastTermination = "CrashLoopBackOff", 3, "Error"
	}
	burst, ms := 40.0, 900.0
	in.Facts.KarpenterErrors, in.Facts.KarpenterLatencyMs = &burst, &ms
	if v := classify(t, in); v.Rule != "L1-apiserver-degraded" {
		t.Fatalf("alone, the burst is this run's: %s, want L1-apiserver-degraded", v.Summary())
	}
	in.Facts.SharedKarpenter = []string{"memory-leak-hpa-abcde", "node-not-ready-fghij"}
	v := classify(t, in)
	if v.Rule != "L3-crash-loop" {
		t.Fatalf("shared with two runs: %s, want L3-crash-loop", v.Summary())
	}
	var wide []string
	for _, d := range Signals() {
		if !d.KarpenterWide() {
			continue
		}
		wide = append(wide, d.ID)
		s, _ := v.Signal(d.ID)
		if s.Available || !strings.Contains(s.Detail, "shared with 2 concurrent run(s): memory-leak-hpa-abcde, node-not-ready-fghij") {
			t.Errorf("%s of a shared run: %s, want unavailable, naming the runs", d.ID, s)
		}
	}
	if got := strings.Join(wide, ","); got != "api.karpenterErrors,api.karpenterLatencyMs,api.karpenterLatencyGrowth,karpenter.usageGrowth,karpenter.requestSurge" {
		t.Errorf("Karpenter-wide signals: %s", got)
	}
	rs, _ := Rules()
	for _, id := range []string{"L1-apiserver-degraded", "L1-apiserver-slow", "L2-karpenter-resources"} {
		if r, _ := rs.Rule(id); !r.ReadsKarpenterWide() {
			t.Errorf("%s reads Karpenter's counters", id)
		}
	}
	if r, _ := rs.Rule("L3-crash-loop"); r.ReadsKarpenterWide() {
		t.Error("L3-crash-loop reads the run's own pods")
	}
}

// A change rule fires only because an input changed; a specific rule of
// any layer names the mechanism, so it decides before every change rule
// even when the change is of an earlier layer: a node that violates its
// NodePool is L2 though the catalog changed too.
func TestASpecificRuleOutranksAnEarlierLayersChangeRule(t *testing.T) {
	in := healthy()
	in.Observation.Nodes["n2"].Labels = map[string]string{"kubernetes.io/arch": "arm64"}
	changeInputs(in, func(x *inputs.Inputs) { x.Catalog.Digest = "other" })
	v := classify(t, in)
	if v.Rule != "L2-policy-violation" {
		t.Fatalf("a policy violation under a changed catalog: %s, want L2-policy-violation", v.Summary())
	}
	if len(v.Fired) != 2 || v.Fired[1].Rule != "L1-catalog-change" {
		t.Errorf("the change rule must still be listed after it: %+v", v.Fired)
	}
	rs, _ := Rules()
	seenChange := false
	for _, r := range rs.Rules {
		if r.Change() {
			seenChange = true
		} else if seenChange {
			t.Errorf("specific rule %s comes after a change rule", r.ID)
		}
	}
}

// Consolidation replaces nodes in a healthy run too: a run that replaced
// as many NodeClaims as the baseline's runs did (two consolidated nodes)
// is not churn; one that replaced more is.
func TestReplacementsAreChurnOnlyBeyondTheBaselines(t *testing.T) {
	consolidated := func(in *Input, n int) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("old-%d", i)
			in.Observation.NodeClaims[name] = &observe.NodeClaimRecord{Name: name, Created: t0, Launched: t0, Registered: t0, Deleted: t0.Add(20 * time.Second)}
		}
	}
	in := healthy()
	fp := *in.Observed
	fp.Replaced = 2
	bl, err := fingerprint.NewBaseline("s", fingerprint.Provenance{}, []*fingerprint.Fingerprint{&fp})
	if err != nil {
		t.Fatal(err)
	}
	bl.Karpenter = in.Baseline.Karpenter
	in.Baseline = bl
	consolidated(in, 2)
	if v := classify(t, in); v.Verdict != None {
		t.Errorf("two replacements against a baseline of two: %s, want none", v.Summary())
	}
	consolidated(in, 4)
	v := classify(t, in)
	if v.Rule != "L2-disruption-churn" {
		t.Fatalf("four replacements against a baseline of two: %s, want L2-disruption-churn", v.Summary())
	}
	if s, _ := v.Signal("nodeclaims.replaced"); !strings.Contains(s.Detail, "at most 2 in a baseline run") {
		t.Errorf("the evidence must name the baseline's count: %q", s.Detail)
	}
}

// The NodePool field that keeps pending pods out is named in the evidence:
// a taint they do not tolerate, or a limit of a resource other than CPU
// whose headroom is below every type that fits.
func TestEvidenceNamesTheBlockingNodePoolField(t *testing.T) {
	in := healthy()
	pending(in)
	in.Facts.Fit["web"] = fit.Result{Catalog: 33, NodePool: 0, Example: "c-1x", Blocked: "spec.template.spec.taints: did not tolerate dedicated=gpu:NoSchedule"}
	v := classify(t, in)
	if v.Rule != "L2-nodepool-excludes-fitting-instances" {
		t.Fatalf("an untolerated taint: %s", v.Summary())
	}
	if s, _ := v.Signal("fit.pendingFitNodePool"); !strings.Contains(s.Detail, "spec.template.spec.taints") {
		t.Errorf("the evidence must name the taints: %q", s.Detail)
	}
	in = healthy()
	pending(in)
	in.Facts.NodePool.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("100Gi")}
	in.Facts.NodePool.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("99Gi")}
	in.Facts.Fit["web"] = fit.Result{Catalog: 10, NodePool: 5, Limited: "spec.limits.memory: 1Gi left (limit 100Gi, in use 99Gi), c-1x has 4Gi"}
	v = classify(t, in)
	if v.Rule != "L2-nodepool-limits" {
		t.Fatalf("memory headroom below every type: %s, want L2-nodepool-limits", v.Summary())
	}
	if s, _ := v.Signal("policy.limitsReached"); !strings.Contains(s.Detail, "spec.limits.memory") {
		t.Errorf("the evidence must name the memory limit: %q", s.Detail)
	}
}

// A scale-in within its budget, or a budget that bounds nothing, fires nothing.
func TestDisruptionWithinBudgetIsNotOverBudget(t *testing.T) {
	for _, allowed := range []int{3, -1} {
		in := healthy()
		in.Observed.Disruption = &fingerprint.Disruption{Outcome: observe.Settled, Decisions: []fingerprint.Decision{
			{At: 21, Reason: "Empty", Kind: "delete", Nodes: []string{"a", "b", "c"}, Disrupting: 3, Allowed: allowed}}}
		if v := classify(t, in); v.Verdict != None {
			t.Errorf("allowed %d: want none, got %s", allowed, v.Summary())
		}
	}
}
