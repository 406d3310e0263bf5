// Package diff compares an observed fingerprint with its baseline and lists
// the deviations, each with a path, both values, the rule applied and a
// severity.
package diff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Severity of a deviation.
type Severity string

// The severities.
const (
	// Regression fails verification.
	Regression Severity = "regression"
	// Tolerated is a change the scenario's tolerances accept; it is reported, not failed.
	Tolerated Severity = "tolerated"
)

// Deviation is one difference from the baseline.
type Deviation struct {
	Path     string   `json:"path"`
	Baseline string   `json:"baseline"`
	Observed string   `json:"observed"`
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Ratio is a per-run metric's median over the baseline's (latencies,
	// Karpenter's usage); 0 for the others.
	Ratio float64 `json:"ratio,omitempty"`
}

// Diff is every deviation of one run, or of a run and the runs that
// confirmed it (their latencies and Karpenter's usage are tested together).
type Diff struct {
	Scenario   string      `json:"scenario"`
	Deviations []Deviation `json:"deviations"`
	// Test is the statistical test of the per-run metrics against the
	// baseline's recorded runs; nil where none could be compared, or
	// where they were paired instead.
	Test *Test `json:"test,omitempty"`
	// Timing says how the machine-dependent metrics were judged (paired,
	// not compared, or against recorded runs) and why; nil from Compare
	// alone.
	Timing *Timing `json:"timing,omitempty"`
}

// Test is how the per-run metrics (latencies, Karpenter's usage) were
// compared with the baseline's runs: an exact one-sided permutation test
// (pkg/permtest) at a stated false-alarm rate.
type Test struct {
	// Runs and Recorded are the runs tested and the baseline's runs.
	Runs     int `json:"runs"`
	Recorded int `json:"recorded"`
	// Alpha is the false-alarm rate; P the test's p-value; MinP the
	// smallest p-value these run counts can give (above Alpha: the test
	// cannot fail, and a shift is only reported).
	Alpha float64 `json:"alpha"`
	P     float64 `json:"p"`
	MinP  float64 `json:"minP"`
	Exact bool    `json:"exact"`
	// Suspect says a metric moved past its gate but the runs so far
	// cannot decide it: more runs can. Verify's auto repeat takes them
	// only where nothing else failed already (Diff.Suspect).
	Suspect bool `json:"suspect,omitempty"`
	// Skipped says what could not be compared, and why.
	Skipped string `json:"skipped,omitempty"`
}

// Suspect reports whether more runs are needed to decide: a per-run
// metric moved past its gate and the runs so far cannot test it, and
// nothing else has failed already. More runs cannot undo a regression of
// the selection or the outcomes, and a grossly regressed run is the
// costliest to repeat: an over-provisioning Karpenter's burst-1000 run
// made 886 nodes, and three of them took the control plane down.
func (d *Diff) Suspect() bool { return d.Test != nil && d.Test.Suspect && !d.Regressed() }

// TimingSummary is the timing judgement in one line (Timing.Summary),
// with what the recorded runs left untested when they were the method
// ("" without a Timing).
func (d *Diff) TimingSummary() string {
	if d.Timing == nil {
		return ""
	}
	s := d.Timing.Summary()
	if d.Timing.Method == Recorded && d.Test != nil && d.Test.Skipped != "" {
		s += "; not tested: " + d.Test.Skipped
	}
	return s
}

// Regressed reports whether any deviation fails verification.
func (d *Diff) Regressed() bool {
	for _, x := range d.Deviations {
		if x.Severity == Regression {
			return true
		}
	}
	return false
}

// Rules are the scenario's settings that verification applies.
type Rules struct {
	Tolerances scenario.Tolerances
	// FalseAlarm is the share of verifications of an unchanged stack that
	// may fail on the per-run metrics (default DefaultFalseAlarm).
	FalseAlarm float64
	// ZonesMatter makes a change in the zone count or skew a regression;
	// otherwise it is reported as tolerated (see scenario.ZonesMatter).
	ZonesMatter bool
	// CPU gives an instance type's vCPUs (the scenario's catalog); nil
	// when the caller has no catalog, and the unit-cost check is skipped.
	CPU func(instanceType string) (float64, bool)
	// CatalogErr is why the scenario's catalog could not be read: a
	// selection the tolerances accept is then a regression that says so,
	// since the cost of its vCPUs cannot be checked.
	CatalogErr error
}

// RulesFor returns the verification rules of a scenario.
func RulesFor(s *scenario.Scenario) Rules {
	r := Rules{Tolerances: s.Spec.Baseline.Tolerances, ZonesMatter: s.ZonesMatter(), FalseAlarm: s.Spec.Baseline.FalseAlarm}
	c, err := catalog.Load(s.CatalogPath)
	if err != nil {
		r.CatalogErr = err
		return r
	}
	r.CPU = c.CPU
	return r
}

// costPerCPU is a selection's hourly cost per vCPU; false when a type's
// vCPUs are unknown.
func costPerCPU(types map[string]int, cost float64, cpuOf func(string) (float64, bool)) (float64, bool) {
	if cpuOf == nil {
		return 0, false
	}
	total := 0.0
	for key, n := range types {
		name, _, _ := strings.Cut(key, "/")
		c, ok := cpuOf(name)
		if !ok {
			return 0, false
		}
		total += c * float64(n)
	}
	if total == 0 {
		return 0, false
	}
	return cost / total, true
}

// Compare applies the verification rules (docs/scenarios.md, "Verification
// rules") to a run, fp; more are runs of the same inputs that confirm it:
// its selection and outcomes are compared with the baseline's, and the
// per-run metrics of all of them are tested together.
func Compare(b *fingerprint.Baseline, rules Rules, fp *fingerprint.Fingerprint, more ...*fingerprint.Fingerprint) *Diff {
	d := &Diff{Scenario: b.Scenario}
	d.static(b, rules, fp)
	d.metrics(b, append([]*fingerprint.Fingerprint{fp}, more...), rules)
	sort.SliceStable(d.Deviations, func(i, j int) bool { return d.Deviations[i].Path < d.Deviations[j].Path })
	return d
}

// static adds the deviations that do not depend on the machine: the
// selection (and pods per node where it is seen), zones and outcomes.
func (d *Diff) static(b *fingerprint.Baseline, rules Rules, fp *fingerprint.Fingerprint) {
	if d.selection(b, fp.Selection, rules) {
		d.podsPerNode(b, fp.Selection)
	}
	d.zones(b, fp.Selection, rules.ZonesMatter)
	d.outcomes(b.Outcomes, fp.Outcomes)
	d.disruption(b.Disruption, fp.Disruption, rules)
}

func (d *Diff) add(path, base, obs, rule string, sev Severity) {
	d.Deviations = append(d.Deviations, Deviation{Path: path, Baseline: base, Observed: obs, Rule: rule, Severity: sev})
}

// selection compares what Karpenter chose and says whether the baseline
// saw that selection.
func (d *Diff) selection(b *fingerprint.Baseline, sel fingerprint.Selection, rules Rules) (seen bool) {
	return d.selectionAgainst("selection", b.Selections, sel, rules)
}

// selectionAgainst compares a selection with the ones seen, under path.
func (d *Diff) selectionAgainst(path string, seenSels []fingerprint.SeenSelection, sel fingerprint.Selection, rules Rules) (seen bool) {
	tol := rules.Tolerances
	var keys []string
	nodes, cost := fingerprint.Range{}, fingerprint.Range{}
	for i, s := range seenSels {
		keys = append(keys, s.Key())
		seen = seen || s.Key() == sel.Key()
		nodes = nodes.Extend(float64(s.Nodes), i == 0)
		cost = cost.Extend(s.HourlyCost, i == 0)
	}
	if seen {
		return true
	}
	withinNodes := nodes.Contains(float64(sel.Nodes), float64(tol.Nodes))
	withinCost := sel.HourlyCost >= cost.Min*(1-tol.CostPercent/100)-1e-9 && sel.HourlyCost <= cost.Max*(1+tol.CostPercent/100)+1e-9
	sev := Regression
	rule := "the selection must be one the baseline saw"
	if (tol.CostPercent > 0 || tol.Nodes > 0) && withinNodes && withinCost {
		sev = Tolerated
		rule = fmt.Sprintf("unseen selection within the tolerances (cost ±%g%%, nodes ±%d)", tol.CostPercent, tol.Nodes)
		d.costPerCPU(path, seenSels, sel, rules)
	}
	d.add(path+".instanceTypes", strings.Join(keys, " | "), sel.Key(), rule, sev)
	if !cost.Contains(sel.HourlyCost, 1e-9) {
		d.add(path+".hourlyCost", rangeString(cost, "%.4f"), fmt.Sprintf("%.4f", sel.HourlyCost), fmt.Sprintf("within the seen range ±%g%%", tol.CostPercent), sevIf(withinCost, sev))
	}
	if !nodes.Contains(float64(sel.Nodes), 0) {
		d.add(path+".nodes", rangeString(nodes, "%.0f"), fmt.Sprint(sel.Nodes), fmt.Sprintf("within the seen range ±%d", tol.Nodes), sevIf(withinNodes, sev))
	}
	return false
}

// costPerCPU checks a selection the tolerances accept. The noise they
// accept (how pods fall into batch windows) changes how much capacity is
// bought, not what a vCPU of it costs: a dearer kind of instance within
// the cost tolerance is still a regression (measured: make mutants'
// expensive-types build on burst-1000, +24% a vCPU, inside the cost range).
func (d *Diff) costPerCPU(path string, seenSels []fingerprint.SeenSelection, sel fingerprint.Selection, rules Rules) {
	if rules.CatalogErr != nil {
		d.add(path+".costPerCPU", "unknown", "unknown",
			fmt.Sprintf("the cost of a vCPU must be checked for a selection the tolerances accept, and the catalog could not be read: %v", rules.CatalogErr), Regression)
		return
	}
	unit, ok := costPerCPU(sel.InstanceTypes, sel.HourlyCost, rules.CPU)
	if !ok {
		return
	}
	seen := fingerprint.Range{}
	for i, s := range seenSels {
		u, ok := costPerCPU(s.InstanceTypes, s.HourlyCost, rules.CPU)
		if !ok {
			return
		}
		seen = seen.Extend(u, i == 0)
	}
	tol := rules.Tolerances.CostPercent
	if unit > seen.Max*(1+tol/100)+1e-9 || unit < seen.Min*(1-tol/100)-1e-9 {
		d.add(path+".costPerCPU", rangeString(seen, "%.5f"), fmt.Sprintf("%.5f", unit),
			fmt.Sprintf("the cost of a vCPU within the seen range ±%g%% (batching changes how much is bought, not its price)", tol), Regression)
	}
}

func (d *Diff) podsPerNode(b *fingerprint.Baseline, sel fingerprint.Selection) {
	if sel.Nodes > 0 && (!b.PodsPerNode.Contains(float64(sel.PodsPerNodeMin), 0) || !b.PodsPerNode.Contains(float64(sel.PodsPerNodeMax), 0)) {
		d.add("selection.podsPerNode", rangeString(b.PodsPerNode, "%.0f"), fmt.Sprintf("%d..%d", sel.PodsPerNodeMin, sel.PodsPerNodeMax), "pods per node within the seen range", Regression)
	}
}

func (d *Diff) zones(b *fingerprint.Baseline, sel fingerprint.Selection, matter bool) {
	sev, why := Regression, ""
	if !matter {
		sev, why = Tolerated, " (the scenario does not constrain zones: a tie-break, reported only)"
	}
	if !b.Zones.Contains(float64(sel.Zones), 0) {
		d.add("selection.zones", rangeString(b.Zones, "%.0f"), fmt.Sprint(sel.Zones), "the number of zones must be one the baseline saw"+why, sev)
	}
	if float64(sel.ZoneSkew) > b.ZoneSkew.Max {
		d.add("selection.zoneSkew", rangeString(b.ZoneSkew, "%.0f"), fmt.Sprint(sel.ZoneSkew), "zones may not be more uneven than the baseline saw"+why, sev)
	}
}

func (d *Diff) outcomes(bo, o fingerprint.Outcomes) {
	for _, x := range []struct {
		path     string
		base, ob int
	}{
		{"outcomes.running", bo.Running, o.Running}, {"outcomes.pending", bo.Pending, o.Pending},
		{"outcomes.restarting", bo.Restarting, o.Restarting}, {"outcomes.oomKilled", bo.OOMKilled, o.OOMKilled},
	} {
		if x.base != x.ob {
			d.add(x.path, fmt.Sprint(x.base), fmt.Sprint(x.ob), "pod outcomes must match the baseline", Regression)
		}
	}
}

func sevIf(tolerated bool, otherwise Severity) Severity {
	if tolerated {
		return Tolerated
	}
	return otherwise
}

func rangeString(r fingerprint.Range, f string) string {
	if r.Min == r.Max {
		return fmt.Sprintf(f, r.Min)
	}
	return fmt.Sprintf(f+".."+f, r.Min, r.Max)
}

// Text renders the diff for people: -baseline +observed per deviation.
func (d *Diff) Text() string {
	var sb strings.Builder
	if len(d.Deviations) == 0 {
		fmt.Fprintf(&sb, "scenario %s: no deviation from the baseline\n", d.Scenario)
	} else {
		fmt.Fprintf(&sb, "scenario %s: %d deviation(s) from the baseline (-baseline +observed)\n", d.Scenario, len(d.Deviations))
	}
	for _, x := range d.Deviations {
		fmt.Fprintf(&sb, "  %s [%s] (rule: %s)\n", x.Path, x.Severity, x.Rule)
		fmt.Fprintf(&sb, "    - %s\n    + %s\n", x.Baseline, x.Observed)
	}
	if d.Timing != nil {
		fmt.Fprintf(&sb, "  timing: %s\n", d.Timing.Summary())
	}
	return sb.String()
}

// JSON renders the diff for machines.
func (d *Diff) JSON() ([]byte, error) { return json.MarshalIndent(d, "", "  ") }
