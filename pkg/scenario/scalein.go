package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/utils/clock"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// ScaleIn is what a run does after its scale-out settled: steps that take
// load away (scale a workload down, remove it), then it watches what
// Karpenter removes until nothing has changed for Settle.Quiet. Its
// decisions are the run's disruption fingerprint.
type ScaleIn struct {
	// Steps run in order, each After its predecessor (the first after the
	// scale-out settled).
	Steps []Step `json:"steps"`
	// Settle says when the scale-in counts as over.
	Settle ScaleInSettle `json:"settle,omitempty"`
}

// Step is one change of a scale-in: exactly one of Scale, Remove and
// NodePool.
type Step struct {
	// After is how long the step waits after the previous one (default 0).
	After Duration `json:"after,omitempty"`
	// Scale sets a workload's replicas.
	Scale *ScaleStep `json:"scale,omitempty"`
	// Remove deletes a workload (its pods go with it).
	Remove string `json:"remove,omitempty"`
	// NodePool edits the run's NodePool with a JSON merge patch of its
	// spec (RFC 7386: maps merge, lists such as requirements and budgets
	// are replaced whole, null removes): a template label or requirement
	// drifts the nodes Karpenter launched before, expireAfter expires
	// them, the disruption block changes its policy from then on.
	NodePool map[string]any `json:"nodePool,omitempty"`
	// Interrupt terminates nodes of the run under Karpenter, as a spot
	// reclaim or a lost instance does.
	Interrupt *InterruptStep `json:"interrupt,omitempty"`
}

// InterruptStep terminates Nodes of the run's nodes (the first by name):
// each Node object, which is the instance on KWOK, is removed without
// Karpenter's drain, so Karpenter learns of the loss as it does of an
// instance the cloud took away. The KWOK provider has no interruption
// queue, so there is no two-minute notice first.
type InterruptStep struct {
	Nodes int `json:"nodes"`
}

// ScaleStep sets a workload's replicas.
type ScaleStep struct {
	Workload string `json:"workload"`
	// Replicas is required (0 is a value, not a default).
	Replicas *int32 `json:"replicas"`
}

// ScaleInSettle says when a scale-in is over: every remaining pod Ready
// and no NodeClaim, Node or pod changed for Quiet, bounded by Timeout.
type ScaleInSettle struct {
	// Quiet defaults to the NodePool's consolidateAfter plus
	// DefaultScaleInQuiet: Karpenter looks for disruptions every 10 s and
	// validates a consolidation for 15 s before it acts, so a shorter
	// silence does not prove it has nothing left to do. With an interrupt
	// step it is at least InterruptQuiet.
	Quiet Duration `json:"quiet,omitempty"`
	// Timeout bounds the scale-in from its first step (default 10m).
	Timeout Duration `json:"timeout,omitempty"`
}

// Scale-in defaults and bounds.
const (
	DefaultScaleInQuiet = 45 * time.Second
	// InterruptQuiet is the least default quiet period of a scale-in that
	// interrupts nodes: Karpenter garbage-collects a NodeClaim whose
	// instance is gone every 2 minutes, so a shorter silence can end the
	// scale-in before it has noticed.
	InterruptQuiet        = 150 * time.Second
	DefaultScaleInTimeout = 10 * time.Minute
	MaxScaleInSteps       = 20
	maxInterrupted        = 100
	maxScaleInWait        = 30 * time.Minute
)

// defaultsScaleIn fills the scale-in's quiet period and timeout once the
// NodePool is resolved (its consolidateAfter sets the default quiet).
func defaultsScaleIn(s *Scenario) {
	si := s.Spec.ScaleIn
	if si == nil {
		return
	}
	if si.Settle.Quiet.Duration == 0 {
		si.Settle.Quiet.Duration = DefaultScaleInQuiet + consolidateAfter(s.NodePool)
		if slices.ContainsFunc(si.Steps, func(st Step) bool { return st.Interrupt != nil }) {
			si.Settle.Quiet.Duration = max(si.Settle.Quiet.Duration, InterruptQuiet)
		}
	}
	if si.Settle.Timeout.Duration == 0 {
		si.Settle.Timeout.Duration = DefaultScaleInTimeout
	}
}

// consolidateAfter is the NodePool's consolidateAfter; 0 when it has none
// or it is Never.
func consolidateAfter(np *karpv1.NodePool) time.Duration {
	if np == nil || np.Spec.Disruption.ConsolidateAfter.Duration == nil {
		return 0
	}
	return *np.Spec.Disruption.ConsolidateAfter.Duration
}

// applyDisruption puts policy.disruption in the resolved NodePool, in place
// of the disruption block its manifest has.
func applyDisruption(s *Scenario) {
	if d := s.Spec.Policy.Disruption; d != nil && s.NodePool != nil {
		s.NodePool = s.NodePool.DeepCopy()
		s.NodePool.Spec.Disruption = *d.DeepCopy()
	}
}

// budgetNodes is the CRD's pattern for a budget's nodes.
var budgetNodes = regexp.MustCompile(`^((100|[0-9]{1,2})%|[0-9]+)$`)

// validateDisruption checks a disruption block as Karpenter's CRD would,
// so that a bad one stops the scenario before anything is applied.
func validateDisruption(field string, d *karpv1.Disruption, add func(field, msg string, args ...any)) {
	if d == nil {
		return
	}
	switch d.ConsolidationPolicy {
	case "", karpv1.ConsolidationPolicyWhenEmpty, karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, karpv1.ConsolidationPolicyBalanced:
	default:
		add(field+".consolidationPolicy", "want WhenEmpty, WhenEmptyOrUnderutilized or Balanced (Karpenter v1.14 and later), got %q", d.ConsolidationPolicy)
	}
	if v := d.ConsolidateAfter.Duration; v != nil && *v < 0 {
		add(field+".consolidateAfter", "%s is negative: write a duration such as 30s, or Never", *v)
	}
	for i, b := range d.Budgets {
		f := fmt.Sprintf("%s.budgets[%d]", field, i)
		if !budgetNodes.MatchString(b.Nodes) {
			add(f+".nodes", "%q is not a node count or a percentage such as 10%%", b.Nodes)
		}
		if (b.Schedule == nil) != (b.Duration == nil) {
			add(f, "set schedule and duration together (a window), or neither (always in force)")
			continue
		}
		if b.Schedule != nil {
			if _, err := b.IsActive(clock.RealClock{}); err != nil {
				add(f+".schedule", "%q is not a cron schedule (five fields, or @daily and the like): %v", *b.Schedule, err)
			}
		}
		for j, r := range b.Reasons {
			switch r {
			case karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized, karpv1.DisruptionReasonDrifted:
			default:
				add(fmt.Sprintf("%s.reasons[%d]", f, j), "want Empty, Underutilized or Drifted, got %q", r)
			}
		}
	}
}

// validateScaleIn checks the scale-in's steps against the scenario's
// workloads.
func validateScaleIn(s *Scenario, add func(field, msg string, args ...any)) {
	si := s.Spec.ScaleIn
	if si == nil {
		return
	}
	const f = "spec.scaleIn"
	switch n := len(si.Steps); {
	case n == 0:
		add(f+".steps", "at least one step is needed (scale a workload down, or remove it)")
	case n > MaxScaleInSteps:
		add(f+".steps", "%d steps, at most %d", n, MaxScaleInSteps)
	}
	workloads := map[string]*Workload{}
	for i := range s.Spec.Workloads {
		workloads[s.Spec.Workloads[i].Name] = &s.Spec.Workloads[i]
	}
	removed := map[string]bool{}
	var waited time.Duration
	for i, st := range si.Steps {
		sf := fmt.Sprintf("%s.steps[%d]", f, i)
		waited += st.After.Duration
		name := ""
		if n := countSet(st.Scale != nil, st.Remove != "", st.NodePool != nil, st.Interrupt != nil); n != 1 {
			add(sf, "set one of scale ({workload, replicas}), remove (a workload's name), nodePool (a merge patch of the NodePool's spec) and interrupt ({nodes: N})")
			continue
		}
		switch {
		case st.Interrupt != nil:
			if n := st.Interrupt.Nodes; n < 1 || n > maxInterrupted {
				add(sf+".interrupt.nodes", "%d is out of range 1..%d", n, maxInterrupted)
			}
			continue
		case st.NodePool != nil:
			validateNodePoolEdit(sf+".nodePool", s.NodePool, st.NodePool, add)
			continue
		case st.Scale != nil:
			name = st.Scale.Workload
			if r := st.Scale.Replicas; r == nil {
				add(sf+".scale.replicas", "set the replicas the workload scales to (0 and up)")
			} else if *r < 0 || *r > MaxReplicas {
				add(sf+".scale.replicas", "%d is out of range 0..%d", *r, MaxReplicas)
			}
		default:
			name = st.Remove
		}
		w, ok := workloads[name]
		switch {
		case !ok:
			add(sf, "workload %q is not one of the scenario's", name)
		case removed[name]:
			add(sf, "workload %q was removed by an earlier step", name)
		case w.HPA != nil && st.Scale != nil:
			add(sf+".scale", "workload %q has an HPA, which sets its replicas: scale it through its load, or remove it", name)
		}
		if st.Remove != "" {
			removed[name] = true
		}
	}
	if waited > maxScaleInWait {
		add(f+".steps", "the steps wait %s in all, longer than %s", waited, maxScaleInWait)
	}
	if q := si.Settle.Quiet.Duration; q > maxScaleInWait {
		add(f+".settle.quiet", "%s is longer than %s", q, maxScaleInWait)
	}
	if t := si.Settle.Timeout.Duration; t > time.Hour {
		add(f+".settle.timeout", "%s is longer than the hour a scale-in may take", t)
	}
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// EditNodePool applies a nodePool step's merge patch to a NodePool spec
// and decodes the result strictly: a field the NodePool does not have is
// an error, as in a NodePool file.
func EditNodePool(spec karpv1.NodePoolSpec, patch map[string]any) (karpv1.NodePoolSpec, error) {
	doc, err := json.Marshal(spec)
	if err != nil {
		return spec, err
	}
	p, err := json.Marshal(patch)
	if err != nil {
		return spec, err
	}
	merged, err := jsonpatch.MergePatch(doc, p)
	if err != nil {
		return spec, fmt.Errorf("not a merge patch of a NodePool's spec: %w", err)
	}
	var out karpv1.NodePoolSpec
	dec := json.NewDecoder(bytes.NewReader(merged))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return spec, fmt.Errorf("the NodePool's spec after the edit is not valid: %w", err)
	}
	return out, nil
}

// validateNodePoolEdit checks a nodePool step against the NodePool it
// edits: what results must be a valid NodePool, and the node class is the
// run's own.
func validateNodePoolEdit(field string, np *karpv1.NodePool, patch map[string]any, add func(field, msg string, args ...any)) {
	if len(patch) == 0 {
		add(field, "an empty edit changes nothing: set the fields to change, e.g. {template: {metadata: {labels: {generation: \"2\"}}}}")
		return
	}
	if np == nil {
		return // the policy did not resolve: reported already
	}
	if t, ok := patch["template"].(map[string]any); ok {
		if sp, ok := t["spec"].(map[string]any); ok {
			if _, ok := sp["nodeClassRef"]; ok {
				add(field+".template.spec.nodeClassRef", "the node class is the run's own (a KWOKNodeClass): edit nodeClass in the policy instead")
				return
			}
		}
	}
	edited, err := EditNodePool(np.Spec, patch)
	if err != nil {
		add(field, "%v", err)
		return
	}
	validateDisruption(field+".disruption", &edited.Disruption, add)
}
