package attribute

import (
	"fmt"
	"strings"
)

// The verdicts.
const (
	L1Infrastructure = "L1-infrastructure"
	L2Orchestration  = "L2-orchestration"
	L3Application    = "L3-application"
	None             = "none"
	Inconclusive     = "inconclusive"
)

// LayerVerdict maps a layer to its verdict.
func LayerVerdict(layer string) string {
	switch layer {
	case "L1":
		return L1Infrastructure
	case "L2":
		return L2Orchestration
	case "L3":
		return L3Application
	}
	return Inconclusive
}

// Fired is a rule whose conditions all held, with the values that made them hold.
type Fired struct {
	Rule     string  `json:"rule"`
	Layer    string  `json:"layer"`
	Evidence []Value `json:"evidence"`
}

// Verdict is the attribution of one run.
type Verdict struct {
	Scenario string `json:"scenario"`
	// Verdict is L1-infrastructure, L2-orchestration, L3-application, none or inconclusive.
	Verdict string `json:"verdict"`
	// Layer is L1, L2 or L3 for an attribution, empty otherwise.
	Layer string `json:"layer,omitempty"`
	// Rule decided the verdict (empty for none and inconclusive).
	Rule   string  `json:"rule,omitempty"`
	Title  Text    `json:"title,omitzero"`
	Owner  Text    `json:"owner,omitzero"`
	Checks []Check `json:"checks,omitempty"`
	// Reason explains none and inconclusive verdicts.
	Reason string `json:"reason,omitempty"`
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
	for _, d := range signalDefs {
		x, ok, detail := d.compute(in)
		val := Value{ID: d.ID, Value: x, Available: ok, Detail: detail}
		vals[d.ID] = val
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
		v.Verdict = Inconclusive
		v.Reason = "the harness's own environment failed during the run (" + h.Detail + "): its observations cannot be trusted"
		return v, nil
	}
	if len(v.Fired) == 0 {
		if reg := vals["diff.regressions"]; reg.Available && reg.Value > 0 {
			v.Verdict = Inconclusive
			v.Reason = "the fingerprint regressed (" + reg.Detail + ") but no rule explains it: extend the rules rather than guess"
			return v, nil
		}
		v.Verdict = None
		v.Reason = "no rule fired and the fingerprint matches the baseline"
		return v, nil
	}
	first := v.Fired[0]
	r, _ := rs.Rule(first.Rule)
	v.Verdict, v.Layer, v.Rule = LayerVerdict(r.Layer), r.Layer, r.ID
	v.Title, v.Owner, v.Checks = r.Title, rs.Owners[r.Layer], r.Checks
	return v, nil
}

// Summary is the verdict in one line with its deciding evidence.
func (v *Verdict) Summary() string {
	if v.Rule == "" {
		return fmt.Sprintf("%s: %s", v.Verdict, v.Reason)
	}
	var ev []string
	for _, e := range v.Fired[0].Evidence {
		ev = append(ev, e.String())
	}
	return fmt.Sprintf("%s by %s (%s): %s", v.Verdict, v.Rule, v.Title.En, strings.Join(ev, "; "))
}
