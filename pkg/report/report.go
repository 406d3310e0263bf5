// Package report writes the results of a nodeprint invocation (run,
// verify, a suite) for machines and for people: JSON (versioned, schema in
// docs/report.schema.json), a Markdown summary for a pull-request comment or
// a CI step summary, JUnit XML for CI test views, and one self-contained
// HTML file with a provisioning timeline per scenario.
package report

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/redact"
	"github.com/nodeprint/nodeprint/pkg/repo"
)

// SchemaVersion is the version of the JSON report. It changes when a field
// is removed or changes meaning; added fields keep it.
const SchemaVersion = 1

// Status of one scenario.
const (
	Passed = "passed" // the expected attribution, or no regression
	Failed = "failed" // a regression or another attribution than the expected one
	Error  = "error"  // the run did not complete (environment, interruption)
)

// Report is one invocation's results.
type Report struct {
	SchemaVersion int    `json:"schemaVersion"`
	Tool          string `json:"tool"`
	// Command is what produced it: "run", "verify", "suite:<name>".
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Shard is "I/N" when the invocation ran a slice of the catalog.
	Shard    string `json:"shard,omitempty"`
	Parallel int    `json:"parallel,omitempty"`
	Stack    Stack  `json:"environment"`
	// Upgrade is set by a Karpenter upgrade check (--karpenter-version).
	Upgrade   *Upgrade   `json:"upgrade,omitempty"`
	Summary   Summary    `json:"summary"`
	Scenarios []Scenario `json:"scenarios"`
}

// Upgrade is what a Karpenter upgrade check found: the scenarios ran with
// Karpenter To against baselines recorded with From.
type Upgrade struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Differing names every scenario whose fingerprint differs from its
	// baseline, tolerated deviations included, and every scenario that did
	// not pass (a fault attributed otherwise, a run that failed): what a
	// team reads before upgrading. Filled in by Finish.
	Differing []string `json:"differing"`
}

// Stack is what the runs ran on.
type Stack struct {
	Karpenter  string `json:"karpenter,omitempty"`
	Kubernetes string `json:"kubernetes,omitempty"`
	Cluster    string `json:"cluster,omitempty"`
	// Provider is the cluster's provider (local, kind, existing).
	Provider string `json:"provider,omitempty"`
	// Nodes says how the provider's nodes started, where that differs by
	// machine (kind: privileged, or through nodeprint's docker wrapper),
	// and where Karpenter runs when not as a process of this machine.
	Nodes string `json:"nodes,omitempty"`
}

// Summary counts the scenarios and gives the exit code the CLI returns.
type Summary struct {
	Total    int `json:"total"`
	Passed   int `json:"passed"`
	Failed   int `json:"failed"`
	Errors   int `json:"errors"`
	ExitCode int `json:"exitCode"`
}

// Scenario is one scenario's result.
type Scenario struct {
	Name   string `json:"name"`
	File   string `json:"file,omitempty"`
	Status string `json:"status"`
	// Fault and Expected are set for a fault scenario.
	Fault    string       `json:"fault,omitempty"`
	Expected *Expectation `json:"expected,omitempty"`
	Seconds  float64      `json:"seconds"`
	// Runs are the run ids (namespace and NodePool names) it used.
	Runs     []string                 `json:"runs,omitempty"`
	Verdict  *attribute.Verdict       `json:"verdict,omitempty"`
	Baseline *fingerprint.Baseline    `json:"baseline,omitempty"`
	Observed *fingerprint.Fingerprint `json:"observed,omitempty"`
	Diff     *diff.Diff               `json:"diff,omitempty"`
	// Inputs says what changed in the inputs since the baseline, beside
	// the fingerprint diff (plain scenarios).
	Inputs   *InputChanges `json:"inputs,omitempty"`
	Timeline *Timeline     `json:"timeline,omitempty"`
	// Runbook is the runbook page of the deciding rule, relative to the
	// repository (runbooks/en/rules/<rule>.md).
	Runbook string `json:"runbook,omitempty"`
	// Notes say what of the team's manifests the scenario names did not
	// carry over to the run on KWOK (a node class's AWS fields, images,
	// volumes, HPA metrics other than cpu and memory).
	Notes []string `json:"notes,omitempty"`
	// Failure says why a suite's spec failed when the verdict alone does
	// not (the right attribution, but objects left behind).
	Failure string `json:"failure,omitempty"`
	Error   string `json:"error,omitempty"`
}

// InputChanges are the changes in a plain scenario's inputs since its
// baseline was recorded.
type InputChanges struct {
	Changes []inputs.Change `json:"changes"`
	// Unknown says why they could not be compared (a baseline of schema
	// 1 records no inputs).
	Unknown string `json:"unknown,omitempty"`
	// Accept is the command that makes an intended change the new
	// baseline.
	Accept string `json:"accept,omitempty"`
}

// InputsOf compares a run's inputs with its baseline's.
func InputsOf(b *fingerprint.Baseline, now *inputs.Inputs) *InputChanges {
	if b == nil {
		return nil
	}
	if b.Inputs == nil {
		return &InputChanges{Changes: []inputs.Change{}, Unknown: b.NoInputs()}
	}
	ic := &InputChanges{Changes: inputs.Diff(b.Inputs, now)}
	if ic.Changes == nil {
		ic.Changes = []inputs.Change{}
	}
	if len(ic.Changes) > 0 {
		ic.Accept = "nodeprint record " + b.Scenario
	}
	return ic
}

// Lines is the changes as text, one a line ("" when none is known).
func (ic *InputChanges) Lines() []string {
	if ic == nil {
		return nil
	}
	if ic.Unknown != "" {
		return []string{"inputs: not compared: " + ic.Unknown}
	}
	if len(ic.Changes) == 0 {
		return []string{"inputs: unchanged since the baseline"}
	}
	out := []string{fmt.Sprintf("inputs: %d changed since the baseline (if intended, accept with `%s`):", len(ic.Changes), ic.Accept)}
	for _, c := range ic.Changes {
		out = append(out, "  "+c.String())
	}
	return out
}

// Effect says in one line what a run's provisioning is against its
// baseline's: "cost $0.17/h → $0.36/h (+112%), nodes 1 → 2", or "" when
// selection and cost are as recorded.
func Effect(b *fingerprint.Baseline, fp *fingerprint.Fingerprint) string {
	if b == nil || fp == nil || len(b.Selections) == 0 {
		return ""
	}
	minN, maxN := b.Selections[0].Nodes, b.Selections[0].Nodes
	minC, maxC := b.Selections[0].HourlyCost, b.Selections[0].HourlyCost
	for _, s := range b.Selections {
		minN, maxN = min(minN, s.Nodes), max(maxN, s.Nodes)
		minC, maxC = min(minC, s.HourlyCost), max(maxC, s.HourlyCost)
	}
	var parts []string
	cost, nodes := fp.Selection.HourlyCost, fp.Selection.Nodes
	if cost < minC-0.005 || cost > maxC+0.005 {
		ref := (minC + maxC) / 2
		pct := ""
		if ref > 0 {
			pct = fmt.Sprintf(" (%+.0f%%)", (cost-ref)/ref*100)
		}
		parts = append(parts, fmt.Sprintf("cost %s → $%.2f/h%s", span("$%.2f/h", minC, maxC), cost, pct))
	}
	if nodes < minN || nodes > maxN {
		parts = append(parts, fmt.Sprintf("nodes %s → %d", span("%d", minN, maxN), nodes))
	}
	return strings.Join(parts, ", ")
}

func span[T int | float64](format string, lo, hi T) string {
	if lo == hi {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format, lo) + "–" + fmt.Sprintf(format, hi)
}

// Expectation is a fault scenario's expected attribution.
type Expectation struct {
	Layer layer.Layer `json:"layer"`
	Rule  string      `json:"rule,omitempty"`
}

// New starts a report.
func New(command string, started time.Time) *Report {
	return &Report{SchemaVersion: SchemaVersion, Tool: "nodeprint", Command: command, Started: started.UTC(), Scenarios: []Scenario{}}
}

// Add appends a scenario's result.
func (r *Report) Add(s Scenario) { r.Scenarios = append(r.Scenarios, s) }

// Finish sorts the scenarios by name (parallel runs finish in any order),
// counts them and records the exit code the invocation ends with.
func (r *Report) Finish(finished time.Time, exitCode int) {
	r.Finished = finished.UTC()
	sort.SliceStable(r.Scenarios, func(i, j int) bool { return r.Scenarios[i].Name < r.Scenarios[j].Name })
	r.Summary = Summary{Total: len(r.Scenarios), ExitCode: exitCode}
	for _, s := range r.Scenarios {
		switch s.Status {
		case Passed:
			r.Summary.Passed++
		case Failed:
			r.Summary.Failed++
		default:
			r.Summary.Errors++
		}
	}
	if u := r.Upgrade; u != nil {
		u.Differing = []string{}
		from := map[string]bool{}
		for _, s := range r.Scenarios {
			if s.Baseline != nil && s.Fault == "" && s.Baseline.Provenance.Karpenter != "" {
				from[s.Baseline.Provenance.Karpenter] = true
			}
			if s.Status != Passed || (s.Fault == "" && s.Diff != nil && len(s.Diff.Deviations) > 0) {
				u.Differing = append(u.Differing, s.Name)
			}
		}
		if u.From == "" {
			u.From = strings.Join(slices.Sorted(maps.Keys(from)), ", ")
		}
	}
}

// UpgradeLine says in one sentence what an upgrade check found; "" when
// the report is not one.
func (r *Report) UpgradeLine() string {
	u := r.Upgrade
	if u == nil {
		return ""
	}
	head := fmt.Sprintf("Karpenter upgrade check %s → %s: ", u.From, u.To)
	if len(u.Differing) == 0 {
		return head + fmt.Sprintf("none of the %d scenario(s) differs from its baseline", len(r.Scenarios))
	}
	status := map[string]string{}
	for _, s := range r.Scenarios {
		status[s.Name] = s.Status
	}
	names := make([]string, len(u.Differing))
	for i, n := range u.Differing {
		names[i] = n
		if status[n] == Passed {
			// Within the tolerances: the pinned release may show it too.
			names[i] += " (tolerated)"
		}
	}
	return head + fmt.Sprintf("%d of %d scenario(s) differ from their baselines: %s", len(u.Differing), len(r.Scenarios), strings.Join(names, ", "))
}

// RunbookPage is where the runbooks describe a rule.
func RunbookPage(rule string) string {
	if rule == "" {
		return ""
	}
	return repo.RunbookRulePage(rule)
}

// Files are the report files WriteAll writes, by format.
var Files = map[string]string{"json": "report.json", "markdown": "summary.md", "junit": "junit.xml", "html": "report.html"}

// Redacted is a copy of the report with secrets masked in every string
// (pkg/redact): errors and evidence may quote what a cluster said.
func (r *Report) Redacted() (*Report, error) {
	red, err := redact.Value(r)
	if err != nil {
		return nil, err
	}
	return red, nil
}

// WriteAll writes every format into dir, redacted.
func (r *Report) WriteAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create the report directory: %w", err)
	}
	red, err := r.Redacted()
	if err != nil {
		return err
	}
	for _, w := range []struct {
		name  string
		write func() ([]byte, error)
	}{
		{Files["json"], red.JSON}, {Files["markdown"], red.Markdown}, {Files["junit"], red.JUnit}, {Files["html"], red.HTML},
	} {
		b, err := w.write()
		if err != nil {
			return fmt.Errorf("failed to render %s: %w", w.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, w.name), b, 0o644); err != nil {
			return fmt.Errorf("failed to write the report: %w", err)
		}
	}
	return nil
}

// TimelineOf samples an observation once a second: pods pending and
// running, NodeClaims by phase and nodes Ready, from the server-side
// transition times the observer recorded. injected is the fault's
// injection time (zero for none).
func TimelineOf(ob *observe.Observation, injected time.Time) *Timeline {
	if ob == nil || ob.Start.IsZero() {
		return nil
	}
	start := ob.Start
	if !injected.IsZero() && injected.Before(start) {
		start = injected
	}
	end := ob.End
	if end.Before(start) {
		end = start
	}
	tl := &Timeline{Start: start.UTC()}
	if !injected.IsZero() {
		s := injected.Sub(start).Seconds()
		tl.FaultInjectedAt = &s
	}
	at := func(t time.Time, x time.Time) bool { return !x.IsZero() && !x.After(t) }
	gone := func(t time.Time, deleted time.Time) bool { return at(t, deleted) }
	for t := start; !t.After(end.Add(time.Second)); t = t.Add(time.Second) {
		s := Sample{Second: t.Sub(start).Seconds()}
		for _, p := range ob.Pods {
			if !at(t, p.Created) || gone(t, p.Deleted) {
				continue
			}
			switch {
			case at(t, p.Ready):
				s.PodsRunning++
			case !at(t, p.Scheduled):
				s.PodsPending++
			default:
				s.PodsStarting++
			}
		}
		for _, c := range ob.NodeClaims {
			if !at(t, c.Created) || gone(t, c.Deleted) {
				continue
			}
			switch {
			case at(t, c.Initialized):
				s.NodeClaimsInitialized++
			case at(t, c.Registered):
				s.NodeClaimsRegistered++
			case at(t, c.Launched):
				s.NodeClaimsLaunched++
			default:
				s.NodeClaimsCreated++
			}
		}
		for _, n := range ob.Nodes {
			if at(t, n.Ready) && !gone(t, n.Deleted) {
				s.NodesReady++
			}
		}
		tl.Samples = append(tl.Samples, s)
	}
	return tl
}

// Timeline is a run's provisioning over time, one sample a second.
type Timeline struct {
	Start time.Time `json:"start"`
	// FaultInjectedAt is seconds from Start to the fault's injection.
	FaultInjectedAt *float64 `json:"faultInjectedAt,omitempty"`
	Samples         []Sample `json:"samples"`
}

// Sample is the state at one second. NodeClaims count in their latest phase.
type Sample struct {
	Second                float64 `json:"second"`
	PodsPending           int     `json:"podsPending"`
	PodsStarting          int     `json:"podsStarting"`
	PodsRunning           int     `json:"podsRunning"`
	NodeClaimsCreated     int     `json:"nodeClaimsCreated"`
	NodeClaimsLaunched    int     `json:"nodeClaimsLaunched"`
	NodeClaimsRegistered  int     `json:"nodeClaimsRegistered"`
	NodeClaimsInitialized int     `json:"nodeClaimsInitialized"`
	NodesReady            int     `json:"nodesReady"`
}

// TimingLine is how the scenario's machine-dependent metrics were judged,
// in one line ("" where its diff does not say: a fault scenario, an
// error).
func (s *Scenario) TimingLine() string {
	if s.Diff == nil {
		return ""
	}
	return s.Diff.TimingSummary()
}

// stepOf places a decision among a scale-in's steps (of several):
// " (after step 2 of 10)"; "" when the scale-in has one step.
func stepOf(x fingerprint.Decision, steps int) string {
	if steps < 2 {
		return ""
	}
	return fmt.Sprintf(" (after step %d of %d)", x.Step, steps)
}

// ScaleInLines say what Karpenter removed in the scenario's scale-in, one
// line for the whole and one per decision ("" for a scenario without one).
func (s *Scenario) ScaleInLines() []string {
	if s.Observed == nil || s.Observed.Disruption == nil {
		return nil
	}
	d := s.Observed.Disruption
	if d.Skipped != "" {
		return []string{"scale-in skipped: " + d.Skipped}
	}
	removed := make([]string, 0, len(d.Disrupted))
	for _, r := range slices.Sorted(maps.Keys(d.Disrupted)) {
		removed = append(removed, fmt.Sprintf("%s %d", r, d.Disrupted[r]))
	}
	counted := make([]string, 0, len(d.KarpenterRemoved))
	for _, r := range slices.Sorted(maps.Keys(d.KarpenterRemoved)) {
		counted = append(counted, fmt.Sprintf("%s %d", r, d.KarpenterRemoved[r]))
	}
	byReason := cmp.Or(strings.Join(removed, ", "), "none")
	if len(counted) > 0 {
		byReason += " (Karpenter's count: " + strings.Join(counted, ", ") + ")"
	}
	out := []string{fmt.Sprintf("scale-in %s: %d → %d node(s), $%.4f → $%.4f/h; removed by reason: %s; %d replacement(s), %d pod(s) evicted, at most %d node(s) disrupting at once",
		d.Ending(), d.Before.Nodes, d.After.Nodes, d.Before.HourlyCost, d.After.HourlyCost, byReason, d.Replacements, d.Evicted, d.MaxDisrupting)}
	for _, x := range d.Decisions {
		line := fmt.Sprintf("  at %.0f s%s: %s %s of %d node(s) [%s]", x.At, stepOf(x, len(d.Steps)), x.Kind, x.Reason, len(x.Nodes), strings.Join(x.Nodes, ", "))
		if len(x.Replacements) > 0 {
			line += " → [" + strings.Join(x.Replacements, ", ") + "]"
		}
		budget := "no budget bounds it"
		if x.Allowed >= 0 {
			budget = fmt.Sprintf("budget %d", x.Allowed)
		}
		out = append(out, line+fmt.Sprintf("; %d disrupting, %s; %d pod(s) evicted", x.Disrupting, budget, x.Evicted))
	}
	for _, h := range d.Held {
		out = append(out, fmt.Sprintf("  held by a %s: %s (NodeClaim %s)", h.By, h.Message, h.NodeClaim))
	}
	for _, k := range d.Kept {
		out = append(out, fmt.Sprintf("  kept by Karpenter's consolidation: %s (NodeClaim %s, said at %.0f s)", k.Message, k.NodeClaim, k.At))
	}
	return out
}
