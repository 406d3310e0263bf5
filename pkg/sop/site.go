package sop

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/repo"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// site is the runbooks of one language: the pages and how they link.
type site struct {
	in        *Input
	lang      string
	rules     []ruleView
	baselines []baselineView
	faults    []faultView
	signals   []signalView
}

type condView struct{ Signal, Cond, Help string }

type checkView struct {
	Why, Command, Shows string
	Context             bool
}

type moveView struct {
	Field, Clean, Faulted, Change string
	Flagged                       bool
}

type valueView struct{ Signal, Value, Detail string }

type deviationView struct{ Path, Baseline, Observed string }

type recordingView struct {
	Scenario, Fault, Params, File string
	Moves                         []moveView
	Deviations                    []deviationView
	Evidence                      []valueView
	// ScenarioPath is the scenario file to reproduce it with ("" when not found).
	ScenarioPath string
}

type ruleView struct {
	ID, Layer, LayerName, Title, Symptom, RulesOut, Owner string
	Position                                              string
	Conditions                                            []condView
	Checks                                                []checkView
	Recordings                                            []recordingView
	Escalation                                            escalationView
	// Unrecorded are fault scenarios that expect the rule but have no
	// recorded fingerprint.
	Unrecorded []string
}

type escalationView struct{ Layer, LayerName, Owner, When, Attach, Meanwhile string }

type faultView struct {
	Name, Layer, Summary string
	// Recorded are "scenario → rule" for each anomaly of the fault.
	Recorded []faultRecord
}

type faultRecord struct{ Scenario, Rule string }

type signalView struct{ ID, Help string }

type rangeView struct{ Measure, Median, Seen string }

type selectionView struct{ Instances, Nodes, Cost, SeenIn string }

type baselineView struct {
	Name, Description, ScenarioPath, NodePool, Catalog, Workloads string
	Recorded                                                      string
	Selections                                                    []selectionView
	CostRange, Zones, ZoneSkew, PodsPerNode                       string
	Latency                                                       []rangeView
	Outcomes, Note                                                string
	// ScaleIn says what Karpenter removed in the recorded scale-ins.
	ScaleIn []string
	// Accepted are runs added from reports, each "run: reason".
	Accepted []string
	// First are the index's columns.
	FirstSelection, FirstCost, PodReadyP50 string
	// Clock says which clock the latencies were read from.
	Clock string
}

func newSite(in *Input, lang string) *site {
	s := &site{in: in, lang: lang}
	scenarios := map[string]*scenario.Scenario{}
	for _, sc := range in.Scenarios {
		scenarios[sc.Metadata.Name] = sc
	}
	for _, d := range in.Signals {
		s.signals = append(s.signals, signalView{ID: d.ID, Help: d.HelpIn(lang)})
	}
	help := map[string]string{}
	for _, d := range in.Signals {
		help[d.ID] = d.HelpIn(lang)
	}
	byRule := map[string][]*attribute.Anomaly{}
	byFault := map[string][]*attribute.Anomaly{}
	for _, a := range in.Anomalies {
		byRule[a.Rule] = append(byRule[a.Rule], a)
		byFault[a.Fault] = append(byFault[a.Fault], a)
	}
	for i, r := range in.Rules.Rules {
		v := ruleView{ID: r.ID, Layer: string(r.Layer), LayerName: msg(lang, "layer"+string(r.Layer)), Title: r.Title.In(lang), Symptom: r.Symptom.In(lang),
			RulesOut: r.RulesOut.In(lang), Owner: in.Rules.Owners[r.Layer].In(lang),
			Position:   fmt.Sprintf(msg(lang, "rulePosition"), i+1, len(in.Rules.Rules)),
			Escalation: s.escalation(r.Layer)}
		if r.Meanwhile != nil {
			v.Escalation.Meanwhile = r.Meanwhile.In(lang)
		}
		for _, c := range r.When {
			v.Conditions = append(v.Conditions, condView{Signal: c.Signal, Cond: opSymbol(c.Op) + " " + num(c.Value), Help: help[c.Signal]})
		}
		for _, c := range r.Checks {
			v.Checks = append(v.Checks, checkView{Why: c.Why.In(lang), Command: c.Command, Shows: c.Shows, Context: c.Context})
		}
		recorded := map[string]bool{}
		for _, a := range byRule[r.ID] {
			v.Recordings = append(v.Recordings, s.recording(a, scenarios[a.Scenario]))
			recorded[a.Scenario] = true
		}
		for _, sc := range in.Scenarios {
			if f := sc.Spec.Fault; f != nil && f.Expect != nil && f.Expect.Rule == r.ID && !recorded[sc.Metadata.Name] {
				v.Unrecorded = append(v.Unrecorded, sc.Metadata.Name)
			}
		}
		s.rules = append(s.rules, v)
	}
	for _, d := range in.Faults {
		f := faultView{Name: d.Name, Layer: string(d.Layer), Summary: d.SummaryIn(lang)}
		for _, a := range byFault[d.Name] {
			f.Recorded = append(f.Recorded, faultRecord{Scenario: a.Scenario, Rule: a.Rule})
		}
		s.faults = append(s.faults, f)
	}
	for _, b := range in.Baselines {
		s.baselines = append(s.baselines, s.baseline(b, scenarios[b.Scenario]))
	}
	return s
}

func (s *site) escalation(l layer.Layer) escalationView {
	e := s.in.Rules.Escalation[l]
	return escalationView{Layer: string(l), LayerName: msg(s.lang, "layer"+string(l)), Owner: s.in.Rules.Owners[l].In(s.lang),
		When: e.When.In(s.lang), Attach: e.Attach.In(s.lang), Meanwhile: e.Meanwhile.In(s.lang)}
}

func (s *site) recording(a *attribute.Anomaly, sc *scenario.Scenario) recordingView {
	r := recordingView{Scenario: a.Scenario, Fault: a.Fault, File: s.path(repo.AnomalyPath(s.in.FingerprintsDir, a.Scenario))}
	if sc != nil {
		r.ScenarioPath = s.path(sc.Path)
	}
	var params []string
	for k, v := range a.Params {
		params = append(params, k+"="+v)
	}
	sort.Strings(params)
	if len(params) > 0 {
		r.Params = ", " + strings.Join(params, ", ")
	}
	flagged := map[string]bool{}
	for _, d := range a.Deviations {
		flagged[d.Path] = true
		r.Deviations = append(r.Deviations, deviationView{Path: d.Path, Baseline: d.Baseline, Observed: d.Observed})
	}
	if a.Baseline != nil && a.Faulted != nil {
		r.Moves = moves(a.Baseline, a.Faulted, flagged)
	}
	for _, e := range a.Evidence {
		r.Evidence = append(r.Evidence, valueView{Signal: e.ID, Value: num(e.Value), Detail: e.Detail})
	}
	return r
}

// field is one fingerprint field the runbooks compare.
type field struct {
	path string
	get  func(*fingerprint.Fingerprint) any
	kind string // "n" count, "s" seconds, "$" cost, "k" key
}

var fields = []field{
	{"selection.instanceTypes", func(f *fingerprint.Fingerprint) any { return f.Selection.Key() }, "k"},
	{"selection.capacityTypes", func(f *fingerprint.Fingerprint) any { return mapKey(f.Selection.CapacityTypes) }, "k"},
	{"selection.nodes", func(f *fingerprint.Fingerprint) any { return float64(f.Selection.Nodes) }, "n"},
	{"selection.hourlyCost", func(f *fingerprint.Fingerprint) any { return f.Selection.HourlyCost }, "$"},
	{"selection.zones", func(f *fingerprint.Fingerprint) any { return float64(f.Selection.Zones) }, "n"},
	{"selection.zoneSkew", func(f *fingerprint.Fingerprint) any { return float64(f.Selection.ZoneSkew) }, "n"},
	{"selection.podsPerNodeMin", func(f *fingerprint.Fingerprint) any { return float64(f.Selection.PodsPerNodeMin) }, "n"},
	{"selection.podsPerNodeMax", func(f *fingerprint.Fingerprint) any { return float64(f.Selection.PodsPerNodeMax) }, "n"},
	{"timing.podReady.count", func(f *fingerprint.Fingerprint) any { return float64(f.Timing.PodReady.Count) }, "n"},
	{"timing.podReady.p50", func(f *fingerprint.Fingerprint) any { return f.Timing.PodReady.P50 }, "s"},
	{"timing.podReady.p90", func(f *fingerprint.Fingerprint) any { return f.Timing.PodReady.P90 }, "s"},
	{"timing.nodeClaimReady.count", func(f *fingerprint.Fingerprint) any { return float64(f.Timing.NodeClaimReady.Count) }, "n"},
	{"timing.nodeClaimReady.p50", func(f *fingerprint.Fingerprint) any { return f.Timing.NodeClaimReady.P50 }, "s"},
	{"timing.nodeClaimReady.p90", func(f *fingerprint.Fingerprint) any { return f.Timing.NodeClaimReady.P90 }, "s"},
	{"outcomes.running", func(f *fingerprint.Fingerprint) any { return float64(f.Outcomes.Running) }, "n"},
	{"outcomes.pending", func(f *fingerprint.Fingerprint) any { return float64(f.Outcomes.Pending) }, "n"},
	{"outcomes.restarting", func(f *fingerprint.Fingerprint) any { return float64(f.Outcomes.Restarting) }, "n"},
	{"outcomes.oomKilled", func(f *fingerprint.Fingerprint) any { return float64(f.Outcomes.OOMKilled) }, "n"},
	// The scale-in, where the scenario has one (both runs without it read
	// the same and show no row).
	{"disruption.outcome", func(f *fingerprint.Fingerprint) any { return string(scaleIn(f).Outcome) }, "k"},
	{"disruption.decisions", func(f *fingerprint.Fingerprint) any { return float64(len(scaleIn(f).Decisions)) }, "n"},
	{"disruption.maxDisrupting", func(f *fingerprint.Fingerprint) any { return float64(scaleIn(f).MaxDisrupting) }, "n"},
	{"disruption.evicted", func(f *fingerprint.Fingerprint) any { return float64(scaleIn(f).Evicted) }, "n"},
	{"disruption.after.nodes", func(f *fingerprint.Fingerprint) any { return float64(scaleIn(f).After.Nodes) }, "n"},
	{"disruption.after.hourlyCost", func(f *fingerprint.Fingerprint) any { return scaleIn(f).After.HourlyCost }, "$"},
	{"disruption.notGone", func(f *fingerprint.Fingerprint) any { return float64(len(scaleIn(f).NotGone)) }, "n"},
}

// scaleIn is f's scale-in, empty where it had none.
func scaleIn(f *fingerprint.Fingerprint) *fingerprint.Disruption {
	if f.Disruption == nil {
		return &fingerprint.Disruption{}
	}
	return f.Disruption
}

// moves are the fields that differ between the clean and the faulted run,
// with the change in absolute and, for costs and latencies, relative terms.
func moves(clean, faulted *fingerprint.Fingerprint, flagged map[string]bool) []moveView {
	var out []moveView
	for _, f := range fields {
		a, b := f.get(clean), f.get(faulted)
		if a == b {
			continue
		}
		m := moveView{Field: f.path, Flagged: flagged[f.path]}
		switch f.kind {
		case "k":
			m.Clean, m.Faulted, m.Change = orDash(a.(string)), orDash(b.(string)), "≠"
		default:
			x, y := a.(float64), b.(float64)
			m.Clean, m.Faulted = unit(x, f.kind), unit(y, f.kind)
			m.Change = signed(y-x, f.kind)
			if (f.kind == "$" || f.kind == "s") && x != 0 {
				m.Change += " (" + strings.Replace(fmt.Sprintf("%+.0f%%", (y-x)/x*100), "-", "−", 1) + ")"
			}
		}
		out = append(out, m)
	}
	return out
}

func (s *site) baseline(b *fingerprint.Baseline, sc *scenario.Scenario) baselineView {
	l := s.lang
	v := baselineView{Name: b.Scenario, Note: b.Note}
	if sc != nil {
		v.Description = sc.Metadata.Description
		v.ScenarioPath = s.path(sc.Path)
		v.NodePool = nodePoolOf(sc.Spec.Policy)
		var ws []string
		for _, w := range sc.Spec.Workloads {
			ws = append(ws, fmt.Sprintf("%s: %d × (%s)", w.Name, w.Replicas, quantities(w.Requests)))
		}
		v.Workloads = strings.Join(ws, "; ")
	}
	v.Catalog = b.Provenance.Catalog
	settings := msg(l, "defaults")
	if len(b.Provenance.KarpenterSettings) > 0 {
		var kv []string
		for k, x := range b.Provenance.KarpenterSettings {
			kv = append(kv, k+"="+x)
		}
		sort.Strings(kv)
		settings = strings.Join(kv, ", ")
	}
	v.Recorded = fmt.Sprintf(msg(l, "recordedWith"), b.Provenance.Karpenter, b.Provenance.Kubernetes, b.Runs, settings)
	for _, a := range b.Accepted {
		v.Accepted = append(v.Accepted, fmt.Sprintf("`%s`: %s", a.Run, a.Reason))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, sel := range b.Selections {
		v.Selections = append(v.Selections, selectionView{Instances: selKey(sel.InstanceTypes), Nodes: strconv.Itoa(sel.Nodes),
			Cost: unit(sel.HourlyCost, "$"), SeenIn: fmt.Sprintf(msg(l, "ofRuns"), sel.Runs, b.Runs)})
		lo, hi = math.Min(lo, sel.HourlyCost), math.Max(hi, sel.HourlyCost)
	}
	if len(b.Selections) > 0 {
		v.CostRange = span(lo, hi, "$")
		v.FirstSelection, v.FirstCost = selKey(b.Selections[0].InstanceTypes), v.CostRange
	}
	v.Zones, v.ZoneSkew, v.PodsPerNode = span(b.Zones.Min, b.Zones.Max, "n"), span(b.ZoneSkew.Min, b.ZoneSkew.Max, "n"), span(b.PodsPerNode.Min, b.PodsPerNode.Max, "n")
	for _, t := range []struct {
		key string
		s   fingerprint.Samples
	}{{"podReady50", b.Timing.PodReadyP50}, {"podReady90", b.Timing.PodReadyP90}, {"ncReady50", b.Timing.NodeClaimReadyP50}, {"ncReady90", b.Timing.NodeClaimReadyP90}} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range t.s.Values {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		seen := "–"
		if len(t.s.Values) > 0 {
			seen = span(lo, hi, "s")
		}
		v.Latency = append(v.Latency, rangeView{Measure: msg(l, t.key), Median: unit(t.s.Median, "s"), Seen: seen})
	}
	v.Clock = msg(l, "clock-"+string(cmp.Or(b.Timing.Clock, observe.ServerClock)))
	v.PodReadyP50 = unit(b.Timing.PodReadyP50.Median, "s")
	o := b.Outcomes
	v.Outcomes = fmt.Sprintf(msg(l, "outcomesLine"), o.Running, o.Pending, o.Restarting, o.OOMKilled)
	v.ScaleIn = scaleInLines(b.Disruption, l)
	return v
}

// scaleInLines say what Karpenter removed in the recorded runs' scale-ins
// (none without one): the steady states, each count by reason and kind
// with its range over the runs, and how many nodes were disrupting at once.
func scaleInLines(d *fingerprint.BaselineDisruption, l string) []string {
	if d == nil || len(d.Runs) == 0 {
		return nil
	}
	var out []string
	for _, a := range d.AfterSelections() {
		k := fmt.Sprintf("%s (%d, $%.4f)", cmp.Or(a.Key(), "-"), a.Nodes, a.HourlyCost)
		out = append(out, fmt.Sprintf(msg(l, "scaleInAfter"), k, a.Runs, len(d.Runs)))
	}
	counts := func(key string, of func(fingerprint.DisruptionRun) map[string]int) {
		keys := map[string]bool{}
		for _, r := range d.Runs {
			for k := range of(r) {
				keys[k] = true
			}
		}
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			r := d.Range(func(x fingerprint.DisruptionRun) float64 { return float64(of(x)[k]) })
			out = append(out, fmt.Sprintf(msg(l, key), k, span(r.Min, r.Max, "")))
		}
	}
	counts("scaleInDecision", func(r fingerprint.DisruptionRun) map[string]int { return r.Decisions })
	counts("scaleInRemoved", func(r fingerprint.DisruptionRun) map[string]int { return r.Disrupted })
	most := d.Range(func(r fingerprint.DisruptionRun) float64 { return float64(r.MaxDisrupting) })
	took := d.Range(func(r fingerprint.DisruptionRun) float64 { return r.SteadyAfter })
	return append(out, fmt.Sprintf(msg(l, "scaleInMax"), span(most.Min, most.Max, ""), span(took.Min, took.Max, "s")))
}

func quantities(q scenario.Quantities) string {
	var keys []string
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, k+" "+q[k])
	}
	return strings.Join(out, ", ")
}

func selKey(m map[string]int) string {
	return fingerprint.Selection{InstanceTypes: m}.Key()
}

func mapKey(m map[string]int) string {
	return selKey(m)
}

func opSymbol(op string) string {
	switch op {
	case ">=":
		return "≥"
	case "<=":
		return "≤"
	case "==":
		return "="
	}
	return op
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func unit(f float64, kind string) string {
	switch kind {
	case "$":
		return fmt.Sprintf("$%.4f", f)
	case "s":
		return num(f) + " s"
	}
	return num(f)
}

func signed(d float64, kind string) string {
	sign := "+"
	if d < 0 {
		sign, d = "−", -d
	}
	return sign + unit(math.Round(d*10000)/10000, kind)
}

func span(lo, hi float64, kind string) string {
	if lo == hi {
		return unit(lo, kind)
	}
	if kind == "s" {
		return num(lo) + "–" + num(hi) + " s"
	}
	return unit(lo, kind) + "–" + unit(hi, kind)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// path shows a file relative to the input's root when it is inside it, so
// that generated pages do not depend on where the checkout is.
func (s *site) path(p string) string {
	return displayPath(s.in.Root, p)
}

func displayPath(root, p string) string {
	if root != "" {
		if abs, err := filepath.Abs(p); err == nil {
			if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
				return filepath.ToSlash(rel)
			}
		}
	}
	return filepath.ToSlash(p)
}

// The template's view of the site.

func (s *site) Rules() []ruleView         { return s.rules }
func (s *site) Baselines() []baselineView { return s.baselines }
func (s *site) Faults() []faultView       { return s.faults }
func (s *site) Signals() []signalView     { return s.signals }

// ScenariosDirShown and FingerprintsDirShown are the input directories as
// the pages name them.
func (s *site) ScenariosDirShown() string    { return s.path(s.in.ScenariosDir) }
func (s *site) FingerprintsDirShown() string { return s.path(s.in.FingerprintsDir) }

type layerEscalation struct {
	E     escalationView
	Rules []string
}

// Escalations are the escalation matrix's rows, one per layer.
func (s *site) Escalations() []layerEscalation {
	var out []layerEscalation
	for _, l := range layer.All {
		e := layerEscalation{E: s.escalation(l)}
		for _, r := range s.rules {
			if r.Layer == string(l) {
				e.Rules = append(e.Rules, r.ID)
			}
		}
		out = append(out, e)
	}
	return out
}

// nodePoolOf says where a scenario's NodePool comes from: a fixture's
// name, a team's file (with the NodePool taken, and how many are applied
// beside it), or inline.
func nodePoolOf(p scenario.Policy) string {
	switch {
	case p.NodePoolRef != "":
		return p.NodePoolRef
	case p.NodePoolFile == "":
		return "inline"
	case p.AllNodePools:
		return p.NodePoolName + " of " + p.NodePoolFile + ", with every other NodePool of the file"
	case p.NodePoolName != "":
		return p.NodePoolName + " of " + p.NodePoolFile
	default:
		return p.NodePoolFile
	}
}
