// Package attribute reads a run against its baseline and names the layer
// that broke: L1 infrastructure, L2 orchestration, L3 application, none, or
// inconclusive. Rules are data (rules.yaml): an ID, a layer, conditions on
// named signals with thresholds, the owner, the first checks with their
// kubectl commands (or a read of Karpenter's metrics), and their text in English and Chinese. Classify
// evaluates them in the decision order (the specific rules L1, L2, L3, then
// the change rules L1, L2, L3) and the first firing rule decides; a verdict
// carries every signal with its value.
package attribute

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nodeprint/nodeprint/pkg/lang"
	"github.com/nodeprint/nodeprint/pkg/layer"

	"sigs.k8s.io/yaml"
)

// Text is a string in English and Chinese.
type Text struct {
	En string `json:"en"`
	Zh string `json:"zh"`
}

// In returns the text in a language (lang.En or lang.Zh).

// commandPrefix is what a check may run: kubectl, or curl of Karpenter's
// own metrics, which on nodeprint's cluster no Service fronts (Karpenter
// runs as a process there).
var commandPrefix = regexp.MustCompile(`^(kubectl |curl -sS <karpenter-metrics> )`)

func (t Text) In(l string) string {
	if l == lang.Zh {
		return t.Zh
	}
	return t.En
}

// Condition is one test of a signal against a threshold.
type Condition struct {
	Signal string  `json:"signal"`
	Op     string  `json:"op"`
	Value  float64 `json:"value"`
}

func (c Condition) String() string { return fmt.Sprintf("%s %s %g", c.Signal, c.Op, c.Value) }

func (c Condition) holds(v float64) bool {
	switch c.Op {
	case ">=":
		return v >= c.Value
	case ">":
		return v > c.Value
	case "<=":
		return v <= c.Value
	case "<":
		return v < c.Value
	case "==":
		return v == c.Value
	}
	return false
}

// Check is a first check an on-call engineer runs.
type Check struct {
	Command string `json:"command"`
	Why     Text   `json:"why"`
	// Shows is a regular expression the command's output matches when the
	// rule's pattern is present: the runbooks print it as what to look
	// for, and the fault suite asserts it against a live fault and, for an
	// evidence check, asserts that the clean run of the same scenario does
	// not match it (a pattern a healthy cluster matches shows nothing).
	// Empty when the output has no fixed text to look for.
	Shows string `json:"shows,omitempty"`
	// Context marks a check whose output helps read the pattern but cannot
	// tell it from a healthy cluster (a table's header, the policy as
	// written, an API server that is healthy when the fault is on
	// Karpenter's path to it): its shows is what a working command prints,
	// and it is not evidence. The runbooks say so.
	Context bool `json:"context,omitempty"`
}

// Evidence reports whether the check's output tells the pattern from a
// healthy cluster: it names what to look for and is not context.
func (c Check) Evidence() bool { return c.Shows != "" && !c.Context }

// Escalation is what on-call does with a verdict of one layer.
type Escalation struct {
	// When is the point at which to hand over to the layer's owner.
	When Text `json:"when"`
	// Attach is what the hand-over carries.
	Attach Text `json:"attach"`
	// Meanwhile is the mitigation on-call may apply before the owner answers.
	Meanwhile Text `json:"meanwhile"`
}

// Rule is one attribution rule.
type Rule struct {
	ID       string      `json:"id"`
	Layer    layer.Layer `json:"layer"`
	Title    Text        `json:"title"`
	Symptom  Text        `json:"symptom"`
	When     []Condition `json:"when"`
	Checks   []Check     `json:"checks"`
	RulesOut Text        `json:"rulesOut"`
	// Meanwhile, when set, replaces the layer's escalation.meanwhile on
	// the rule's runbook page: what to do while the owner looks, where
	// the layer's general advice would not help (or would hurt).
	Meanwhile *Text `json:"meanwhile,omitempty"`
}

// RuleSet is the rules and the owner of each layer.
type RuleSet struct {
	Owners     map[layer.Layer]Text       `json:"owners"`
	Escalation map[layer.Layer]Escalation `json:"escalation"`
	Rules      []Rule                     `json:"rules"`
}

//go:embed rules.yaml
var rulesYAML []byte

// Rules returns the built-in rule set, in decision order. The file is
// embedded and its tests parse it, so an error here is a build defect.
var Rules = sync.OnceValues(func() (*RuleSet, error) {
	rs, err := ParseRules(rulesYAML)
	if err != nil {
		return nil, fmt.Errorf("embedded rules.yaml: %w", err)
	}
	return rs, nil
})

// ParseRules decodes and validates a rule set strictly.
func ParseRules(b []byte) (*RuleSet, error) {
	rs := &RuleSet{}
	if err := yaml.UnmarshalStrict(b, rs); err != nil {
		return nil, fmt.Errorf("failed to decode rules: %w", err)
	}
	var errs []string
	seen := map[string]bool{}
	var last order
	for i, r := range rs.Rules {
		at := fmt.Sprintf("rules[%d] (%s)", i, r.ID)
		if r.ID == "" || seen[r.ID] {
			errs = append(errs, at+": missing or duplicate id")
		}
		seen[r.ID] = true
		if !r.Layer.Valid() {
			errs = append(errs, at+": layer must be L1, L2 or L3")
		}
		if !strings.HasPrefix(r.ID, string(r.Layer)+"-") {
			errs = append(errs, at+": id must start with its layer")
		}
		if r.Change() != strings.HasSuffix(r.ID, "-change") {
			errs = append(errs, at+": a change rule (a condition inputs.*Changed == 1) and only one has an id ending in -change")
		}
		if ord := (order{r.Change(), r.Layer}); ord.before(last) {
			errs = append(errs, at+": rules must be listed in the decision order (specific rules L1, L2, L3, then change rules L1, L2, L3)")
		} else {
			last = ord
		}
		if len(r.When) == 0 {
			errs = append(errs, at+": a rule needs at least one condition")
		}
		for j, c := range r.When {
			if _, ok := signalByID[c.Signal]; !ok {
				errs = append(errs, fmt.Sprintf("%s: when[%d]: unknown signal %q", at, j, c.Signal))
			}
			if !(Condition{Op: c.Op}).validOp() {
				errs = append(errs, fmt.Sprintf("%s: when[%d]: unknown operator %q", at, j, c.Op))
			}
		}
		for _, t := range []Text{r.Title, r.Symptom, r.RulesOut} {
			if t.En == "" || t.Zh == "" {
				errs = append(errs, at+": title, symptom and rulesOut need en and zh")
				break
			}
		}
		if m := r.Meanwhile; m != nil && (m.En == "" || m.Zh == "") {
			errs = append(errs, at+": meanwhile needs en and zh")
		}
		if len(r.Checks) == 0 {
			errs = append(errs, at+": a rule needs at least one check")
		}
		for j, c := range r.Checks {
			if !commandPrefix.MatchString(c.Command) || c.Why.En == "" || c.Why.Zh == "" {
				errs = append(errs, fmt.Sprintf("%s: checks[%d]: a kubectl command (or curl of <karpenter-metrics>) with why in en and zh", at, j))
			}
			if _, err := regexp.Compile(c.Shows); err != nil {
				errs = append(errs, fmt.Sprintf("%s: checks[%d].shows: %v", at, j, err))
			}
		}
	}
	for _, l := range layer.All {
		if o := rs.Owners[l]; o.En == "" || o.Zh == "" {
			errs = append(errs, "owners."+string(l)+": needs en and zh")
		}
		e := rs.Escalation[l]
		for _, t := range []Text{e.When, e.Attach, e.Meanwhile} {
			if t.En == "" || t.Zh == "" {
				errs = append(errs, "escalation."+string(l)+": when, attach and meanwhile need en and zh")
				break
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid rules:\n  %s", strings.Join(errs, "\n  "))
	}
	return rs, nil
}

// Change reports whether the rule fires because an input changed (a
// condition inputs.*Changed == 1) rather than on a mechanism it names.
// Change rules come after every specific rule in the decision order.
func (r Rule) Change() bool {
	for _, c := range r.When {
		if strings.HasPrefix(c.Signal, "inputs.") && strings.HasSuffix(c.Signal, "Changed") && c.Op == "==" && c.Value == 1 {
			return true
		}
	}
	return false
}

// order is a rule's place in the decision order: specific rules by layer,
// then change rules by layer.
type order struct {
	change bool
	layer  layer.Layer
}

func (o order) before(p order) bool {
	if o.change != p.change {
		return !o.change
	}
	return o.layer < p.layer
}

func (c Condition) validOp() bool {
	switch c.Op {
	case ">=", ">", "<=", "<", "==":
		return true
	}
	return false
}

// Rule returns a rule by ID.
func (rs *RuleSet) Rule(id string) (*Rule, bool) {
	for i := range rs.Rules {
		if rs.Rules[i].ID == id {
			return &rs.Rules[i], true
		}
	}
	return nil, false
}
