package attribute

import (
	"fmt"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/layer"
)

// The verdicts.
const (
	L1Infrastructure = layer.L1Infrastructure
	L2Orchestration  = layer.L2Orchestration
	L3Application    = layer.L3Application
	None             = "none"
	Inconclusive     = "inconclusive"
)

// CauseEnvironment is the cause of an inconclusive verdict when the
// harness's own environment failed during the run.
const CauseEnvironment = "environment"

// EnvironmentVerdict is the verdict of a run the environment failed under
// before it could be classified: what happened is in reason.
func EnvironmentVerdict(scenario, reason string) *Verdict {
	return &Verdict{Scenario: scenario, Verdict: Inconclusive, Cause: CauseEnvironment, Fired: []Fired{},
		Reason: "the harness's own environment failed during the run (" + reason + "): its observations cannot be trusted"}
}

// LayerVerdict maps a layer to its verdict (inconclusive for no layer).
func LayerVerdict(l layer.Layer) string {
	if v := l.Verdict(); v != "" {
		return v
	}
	return Inconclusive
}

// Fired is a rule whose conditions all held, with the values that made them hold.
type Fired struct {
	Rule     string      `json:"rule"`
	Layer    layer.Layer `json:"layer"`
	Evidence []Value     `json:"evidence"`
}

// Verdict is the attribution of one run.
type Verdict struct {
	Scenario string `json:"scenario"`
	// Verdict is L1-infrastructure, L2-orchestration, L3-application, none or inconclusive.
	Verdict string `json:"verdict"`
	// Layer is L1, L2 or L3 for an attribution, empty otherwise.
	Layer layer.Layer `json:"layer,omitempty"`
	// Rule decided the verdict (empty for none and inconclusive).
	Rule   string  `json:"rule,omitempty"`
	Title  Text    `json:"title,omitzero"`
	Owner  Text    `json:"owner,omitzero"`
	Checks []Check `json:"checks,omitempty"`
	// Reason explains none and inconclusive verdicts.
	Reason string `json:"reason,omitempty"`
	// Cause is CauseEnvironment when the verdict is inconclusive because
	// the environment failed (empty otherwise).
	Cause string `json:"cause,omitempty"`
	// Fired lists every rule that fired, in decision order.
	Fired []Fired `json:"fired"`
	// Signals are every signal's value.
	Signals []Value `json:"signals"`
}

// Signal returns a signal's value from the verdict.
func (v *Verdict) Signal(id string) (Value, bool) {
	for _, s := range v.Signals {
		if s.ID == id {
			return s, true
		}
	}
	return Value{}, false
}

// Classify applies the rule set to one run.
func Classify(rs *RuleSet, in *Input) (*Verdict, error) {
	if in.Observation == nil || in.Observed == nil {
		return nil, fmt.Errorf("failed to classify %s: no observation", in.Scenario)
	}
	v := &Verdict{Scenario: in.Scenario, Fired: []Fired{}}
	vals := map[string]Value{}
	for i := range signalDefs {
		val := signalDefs[i].evaluate(in)
		vals[val.ID] = val
		v.Signals = append(v.Signals, val)
	}
	for _, r := range rs.Rules {
		var ev []Value
		all := true
		for _, c := range r.When {
			val := vals[c.Signal]
			if !val.Available || !c.holds(val.Value) {
				all = false
				break
			}
			ev = append(ev, val)
		}
		if all {
			v.Fired = append(v.Fired, Fired{Rule: r.ID, Layer: r.Layer, Evidence: ev})
		}
	}
	if h := vals["harness.healthy"]; h.Value == 0 {
		env := EnvironmentVerdict(in.Scenario, h.Detail)
		v.Verdict, v.Cause, v.Reason = env.Verdict, env.Cause, env.Reason
		return v, nil
	}
	if len(v.Fired) == 0 {
		for _, st := range Fallbacks {
			if reason, ok := st.decide(in, rs, vals); ok {
				v.Verdict, v.Reason = st.Verdict, reason
				return v, nil
			}
		}
	}
	first := v.Fired[0]
	r, _ := rs.Rule(first.Rule)
	v.Verdict, v.Layer, v.Rule = LayerVerdict(r.Layer), r.Layer, r.ID
	v.Title, v.Owner, v.Checks = r.Title, rs.Owners[r.Layer], r.Checks
	v.Reason = severalChanges(vals)
	return v, nil
}

// Step is a step of the decision order that is not a rule. The harness's
// health comes before every rule; the Fallbacks decide, in order, when no
// rule fired. The runbooks draw the decision order from the same list.
type Step struct {
	// ID names the step; the runbooks hold its question and verdict in
	// each language.
	ID string
	// Verdict is what the step decides: Inconclusive or None.
	Verdict string
	decide  func(in *Input, rs *RuleSet, vals map[string]Value) (reason string, ok bool)
}

// Fallbacks are the decision order's steps after the rules; the last one
// always decides.
var Fallbacks = []Step{
	{ID: "regressed", Verdict: Inconclusive, decide: func(in *Input, _ *RuleSet, vals map[string]Value) (string, bool) {
		reg := vals["diff.regressions"]
		reason := "the fingerprint regressed (" + reg.Detail + ") but no rule explains it: extend the rules rather than guess"
		if k := vals["disruption.keptByKarpenter"]; k.Available && k.Value > 0 && scaleInRegressed(in) {
			reason += fmt.Sprintf("; Karpenter's own words on the %g NodeClaim(s) its consolidation kept: %s", k.Value, k.Detail)
		}
		if in.Diff != nil && in.Diff.Timing != nil && in.Diff.Timing.Method == diff.Unchanged {
			reason += "; " + undecidedScenario
		}
		return reason, reg.Available && reg.Value > 0
	}},
	// The seeds' headline case, without the catalog that tells a policy
	// excluding instances that exist (L2) from pods asking for what no
	// instance offers (L3).
	{ID: "unadmitted", Verdict: Inconclusive, decide: func(_ *Input, _ *RuleSet, vals map[string]Value) (string, bool) {
		u := vals["policy.pendingAdmittedByNoNodePool"]
		return "pods are pending and no NodePool admits them (" + u.Detail + "); without the instance catalog it cannot be told " +
			"whether the policy excludes instances that exist (L2) or the pods ask for what no instance offers (L3): give the catalog (--catalog)", u.Available && u.Value == 1
	}},
	// explain: the workload is troubled (that is why it is listed), so
	// "none" would claim too much.
	{ID: "noBaseline", Verdict: Inconclusive, decide: func(in *Input, rs *RuleSet, vals map[string]Value) (string, bool) {
		reason := "no rule explains what the cluster shows (there is no baseline to compare with, so the rules that need one cannot fire)"
		if b := blocked(rs, vals); b != "" {
			reason += "; " + b
		}
		return reason, in.Baseline == nil
	}},
	{ID: "none", Verdict: None, decide: func(*Input, *RuleSet, map[string]Value) (string, bool) {
		return "no rule fired and the fingerprint matches the baseline", true
	}},
}

// undecidedScenario is the regressed step's word on a run in which nothing
// the baseline records differs: the same inputs on the same Karpenter
// build ended as no recorded run did, so the scenario leaves the outcome
// to chance (a race inside Karpenter, the machine's load), and the
// deviation says nothing about a change.
const undecidedScenario = "nothing recorded differs from the baseline (inputs, Karpenter build and settings, Kubernetes), " +
	"so the same scenario on the same build ended as none of its recorded runs did: the scenario leaves this outcome to chance " +
	"(a race inside Karpenter, or the machine's load), not to a change the baseline records; make the scenario decide one way " +
	"(docs/scenarios.md, Scenarios that decide one way), or, if this outcome is one it should allow, add this run to the baseline with `nodeprint accept`"

// scaleInRegressed reports whether a regression is in the scale-in's
// fingerprint (a disruption path).
func scaleInRegressed(in *Input) bool {
	if in.Diff == nil {
		return false
	}
	for _, d := range in.Diff.Deviations {
		if d.Severity == diff.Regression && strings.HasPrefix(d.Path, "disruption.") {
			return true
		}
	}
	return false
}

// Label is the verdict as people read it: "inconclusive (environment)"
// for an environment failure, else the verdict.
func (v *Verdict) Label() string {
	if v.Cause != "" {
		return v.Verdict + " (" + v.Cause + ")"
	}
	return v.Verdict
}

// EnvironmentFailed reports whether the verdict is inconclusive because
// the environment failed: such a run is an error (exit 3), not a finding.
func (v *Verdict) EnvironmentFailed() bool {
	return v != nil && v.Verdict == Inconclusive && v.Cause == CauseEnvironment
}

// Summary is the verdict in one line with its deciding evidence.
func (v *Verdict) Summary() string {
	if v.Rule == "" {
		return fmt.Sprintf("%s: %s", v.Label(), v.Reason)
	}
	var ev []string
	for _, e := range v.Fired[0].Evidence {
		ev = append(ev, e.String())
	}
	return fmt.Sprintf("%s by %s (%s): %s", v.Verdict, v.Rule, v.Title.En, strings.Join(ev, "; "))
}

// blocked names the rules that might have fired but for a read that
// failed: every condition on a readable signal holds, and a signal whose
// read failed (Value.Error) is the rest. It says which and why, so the
// engineer knows what to look at or to grant.
func blocked(rs *RuleSet, vals map[string]Value) string {
	var parts []string
	for _, r := range rs.Rules {
		var missing []string
		holds := true
		for _, c := range r.When {
			val := vals[c.Signal]
			switch {
			case !val.Available && val.Error != "":
				missing = append(missing, c.Signal+" ("+val.Error+")")
			case !val.Available, !c.holds(val.Value):
				holds = false
			}
		}
		if holds && len(missing) > 0 {
			parts = append(parts, r.ID+" might apply, but "+strings.Join(missing, ", ")+" could not be read")
		}
	}
	return strings.Join(parts, "; ")
}

// changeSignals are the inputs a change can be in, in the decision order
// of the layers that own them.
var changeSignals = []struct{ id, what string }{
	{"inputs.catalogChanged", "the catalog (L1)"},
	{"inputs.policyChanged", "the NodePool or node class (L2)"},
	{"inputs.karpenterChanged", "Karpenter (L2)"},
	{"inputs.workloadChanged", "a workload (L3)"},
}

// severalChanges says so when more than one kind of input changed: the
// verdict then names the first by the decision order, and the engineer
// should know the others changed too.
func severalChanges(vals map[string]Value) string {
	var what []string
	for _, c := range changeSignals {
		if v := vals[c.id]; v.Available && v.Value == 1 {
			what = append(what, c.what+": "+v.Detail)
		}
	}
	if len(what) < 2 {
		return ""
	}
	return fmt.Sprintf("%d kinds of input changed since the baseline, decided by the decision order (L1, then L2, then L3): %s",
		len(what), strings.Join(what, "; "))
}
