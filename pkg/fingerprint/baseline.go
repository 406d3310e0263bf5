package fingerprint

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/permtest"
	"github.com/nodeprint/nodeprint/pkg/strictyaml"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// SchemaVersion is the version of the baseline file format: 2 records the
// inputs; 3 records which clock the latencies were read from and
// Karpenter's own usage per run, and no timing limit (verification tests
// the recorded runs statistically). Older schemas still load: a baseline of
// schema 1 has no inputs, so a change cannot be attributed against it
// (NoInputs says so); one of schema 1 or 2 has server-clock latencies.
const SchemaVersion = 3

// oldestSchema is the oldest baseline schema this build reads.
const oldestSchema = 1

// The schema-2 timing rule, kept to check a schema-2 file's limits against
// its values (a hand-edited limit is an error); verification no longer
// uses it. A value regressed when it exceeded
//
//	max(largest value seen, median + legacySigmas × madFactor × MAD) + legacySlack
const (
	legacySlack  = 2.0
	madFactor    = 1.4826
	legacySigmas = 4.0
)

// Baseline is a fingerprint recorded from repeated runs, with the spread it saw.
type Baseline struct {
	SchemaVersion int        `json:"schemaVersion"`
	Scenario      string     `json:"scenario"`
	Provenance    Provenance `json:"environment"`
	Runs          int        `json:"runs"`
	// Selections are the distinct selections seen, most frequent first.
	Selections  []SeenSelection `json:"selections"`
	Zones       Range           `json:"zones"`
	ZoneSkew    Range           `json:"zoneSkew"`
	PodsPerNode Range           `json:"podsPerNode"`
	// Replaced is the range of NodeClaims a run replaced
	// (Fingerprint.Replaced); nil in a baseline recorded before it was.
	Replaced *Range         `json:"replaced,omitempty"`
	Timing   BaselineTiming `json:"timing"`
	// Karpenter is Karpenter's own usage in each run; nil where a run
	// could not read it.
	Karpenter *BaselineKarpenter `json:"karpenter,omitempty"`
	Outcomes  Outcomes           `json:"outcomes"`
	// Note explains, for a non-deterministic scenario, where its spread comes from.
	Note string `json:"note,omitempty"`
	// Accepted are the runs among Runs that were added from a report
	// (nodeprint accept) rather than recorded.
	Accepted []AcceptedRun `json:"accepted,omitempty"`
	// Inputs are what the recorded runs applied (the NodePool, node
	// class, workloads, catalog and Karpenter), for change attribution;
	// nil in a baseline of schema 1.
	Inputs *inputs.Inputs `json:"inputs,omitempty"`
	// Disruption is each run's scale-in, for a scenario with one.
	Disruption *BaselineDisruption `json:"disruption,omitempty"`
}

// NoInputs says why a change cannot be attributed against the baseline,
// or "" when it can.
func (b *Baseline) NoInputs() string {
	if b.Inputs != nil {
		return ""
	}
	return fmt.Sprintf("baseline %s records no inputs (schema %d): re-record it (nodeprint record %s) so that a change in the inputs can be named and attributed",
		b.Scenario, b.SchemaVersion, b.Scenario)
}

// Provenance records what the baseline was recorded with.
type Provenance struct {
	Karpenter     string `json:"karpenter"`
	Kubernetes    string `json:"kubernetes"`
	Catalog       string `json:"catalog"`
	CatalogDigest string `json:"catalogDigest"`
	// KarpenterSettings are the non-default Karpenter settings (none: baselines use the defaults).
	KarpenterSettings map[string]string `json:"karpenterSettings"`
	// Machine is the machine the runs were recorded on (none: not
	// recorded, a baseline from before it was, or a cluster elsewhere).
	Machine *Machine `json:"machine,omitempty"`
}

// SeenSelection is one selection and how many runs chose it.
type SeenSelection struct {
	InstanceTypes map[string]int `json:"instanceTypes"`
	Nodes         int            `json:"nodes"`
	HourlyCost    float64        `json:"hourlyCost"`
	Runs          int            `json:"runs"`
}

// Key is the selection's instance-type multiset.
func (s SeenSelection) Key() string { return Selection{InstanceTypes: s.InstanceTypes}.Key() }

// Range is the smallest and largest value seen.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// Extend returns the range widened to hold v; first starts a new range at v.
func (r Range) Extend(v float64, first bool) Range {
	if first {
		return Range{v, v}
	}
	return Range{math.Min(r.Min, v), math.Max(r.Max, v)}
}

// Contains reports whether v is within the range widened by slack.
func (r Range) Contains(v, slack float64) bool { return v >= r.Min-slack && v <= r.Max+slack }

// BaselineTiming keeps each run's percentiles.
type BaselineTiming struct {
	// Clock is the clock the latencies were read from (server in a
	// baseline of schema 1 or 2).
	Clock             observe.Clock `json:"clock,omitempty"`
	PodReadyP50       Samples       `json:"podReadyP50"`
	PodReadyP90       Samples       `json:"podReadyP90"`
	NodeClaimReadyP50 Samples       `json:"nodeClaimReadyP50"`
	NodeClaimReadyP90 Samples       `json:"nodeClaimReadyP90"`
	// The stages' medians (Timing), since they were recorded.
	PodScheduledP50       Samples `json:"podScheduledP50,omitzero"`
	PodDecisionP50        Samples `json:"podDecisionP50,omitzero"`
	PodStartP50           Samples `json:"podStartP50,omitzero"`
	NodeClaimLaunchP50    Samples `json:"nodeClaimLaunchP50,omitzero"`
	NodeRegistrationP50   Samples `json:"nodeRegistrationP50,omitzero"`
	NodeInitializationP50 Samples `json:"nodeInitializationP50,omitzero"`
}

// BaselineKarpenter keeps Karpenter's usage in each run.
type BaselineKarpenter struct {
	CPUSeconds Samples `json:"cpuSeconds"`
	PeakRSSMiB Samples `json:"peakRSSMiB"`
	Requests   Samples `json:"requests"`
	// LatencyMs is the mean latency of Karpenter's API requests: the API
	// server's speed as Karpenter met it, kept for the rules (what is slow
	// for this cluster), not tested as Karpenter's own usage.
	LatencyMs Samples `json:"latencyMs"`
}

// Samples are one per-run statistic over the baseline's runs.
type Samples struct {
	Values []float64 `json:"values"`
	// Median is derived from Values, for the people who review the file;
	// one that disagrees with them is an error.
	Median float64 `json:"median"`
	// MAD and Limit are a schema-2 file's, derived from Values by the
	// old rule: checked when read, never written.
	MAD   float64 `json:"mad,omitempty"`
	Limit float64 `json:"limit,omitempty"`
}

// Largest is the largest value seen (0 for none).
func (s Samples) Largest() float64 {
	if len(s.Values) == 0 {
		return 0
	}
	return slices.Max(s.Values)
}

func newSamples(vals []float64) Samples {
	s := Samples{Values: vals}
	if len(vals) > 0 {
		s.Median = math.Round(permtest.Median(vals)*1000) / 1000
	}
	return s
}

// legacyDerived is what a schema-2 file stored beside its values.
func legacyDerived(vals []float64) (med, mad, limit float64) {
	med = permtest.Median(vals)
	dev := make([]float64, len(vals))
	for i, v := range vals {
		dev[i] = math.Abs(v - med)
	}
	mad = permtest.Median(dev)
	limit = math.Round((math.Max(slices.Max(vals), med+legacySigmas*madFactor*mad)+legacySlack)*100) / 100
	return med, mad, limit
}

// RunMetric is one per-run number of a fingerprint that verification
// compares with the baseline's runs statistically (pkg/permtest): the
// latency percentiles and Karpenter's own usage.
type RunMetric struct {
	// Path names it in diffs and reports; Field is where its samples are
	// in a baseline file.
	Path, Field string
	// Unit is how its values read: "s", "cpu-s", "MiB", "requests".
	Unit string
	// Usage is true for Karpenter's own usage, false for a latency.
	Usage bool
	// Untested metrics are recorded for the rules but not tested by
	// verification (the API server's latency as Karpenter met it).
	Untested bool
	// ScaleIn metrics time a run's scale-in. A scenario without one has
	// none, and they are tested only paired with a reference arm in the
	// same run: their recorded values (disruption.runs) are another
	// session's machine, so In is nil.
	ScaleIn bool
	// Floor is the least growth of the median, in Unit, that verification
	// reports: below it a shift can be real and still be nothing anyone
	// would act on, or another machine's (see TimingFloor, CPUFloor).
	Floor float64
	// Of reads it from a run; ok is false where the run has none.
	Of func(*Fingerprint) (v float64, ok bool)
	// In is its samples in a baseline, nil where it has none; with create,
	// the section that holds them is made where it is missing.
	In func(b *Baseline, create bool) *Samples
}

func timingMetric(path, field string, of func(Timing) Percentiles, p90 bool, in func(*BaselineTiming) *Samples) RunMetric {
	return RunMetric{Path: path, Field: field, Unit: "s", Floor: TimingFloor,
		Of: func(f *Fingerprint) (float64, bool) {
			p := of(f.Timing)
			if p90 {
				return p.P90, p.Count > 0
			}
			return p.P50, p.Count > 0
		},
		In: func(b *Baseline, _ bool) *Samples { return in(&b.Timing) }}
}

func usageMetric(path, unit string, of func(*usage.Usage) float64, in func(*BaselineKarpenter) *Samples) RunMetric {
	return RunMetric{Path: path, Field: path, Unit: unit, Usage: true,
		Of: func(f *Fingerprint) (float64, bool) {
			if f.Karpenter == nil || f.Karpenter.Restarted || f.Karpenter.SharedWith > 0 {
				return 0, false
			}
			return of(f.Karpenter), true
		},
		In: func(b *Baseline, create bool) *Samples {
			if b.Karpenter == nil {
				if !create {
					return nil
				}
				b.Karpenter = &BaselineKarpenter{}
			}
			return in(b.Karpenter)
		}}
}

// RunMetrics are every per-run metric, in the order reports list them.
var RunMetrics = []RunMetric{
	timingMetric("timing.podReady.p50", "timing.podReadyP50", func(t Timing) Percentiles { return t.PodReady }, false, func(t *BaselineTiming) *Samples { return &t.PodReadyP50 }),
	timingMetric("timing.podReady.p90", "timing.podReadyP90", func(t Timing) Percentiles { return t.PodReady }, true, func(t *BaselineTiming) *Samples { return &t.PodReadyP90 }),
	timingMetric("timing.nodeClaimReady.p50", "timing.nodeClaimReadyP50", func(t Timing) Percentiles { return t.NodeClaimReady }, false, func(t *BaselineTiming) *Samples { return &t.NodeClaimReadyP50 }),
	timingMetric("timing.nodeClaimReady.p90", "timing.nodeClaimReadyP90", func(t Timing) Percentiles { return t.NodeClaimReady }, true, func(t *BaselineTiming) *Samples { return &t.NodeClaimReadyP90 }),
	timingMetric("timing.podScheduled.p50", "timing.podScheduledP50", func(t Timing) Percentiles { return t.PodScheduled }, false, func(t *BaselineTiming) *Samples { return &t.PodScheduledP50 }),
	timingMetric("timing.podDecision.p50", "timing.podDecisionP50", func(t Timing) Percentiles { return t.PodDecision }, false, func(t *BaselineTiming) *Samples { return &t.PodDecisionP50 }),
	timingMetric("timing.podStart.p50", "timing.podStartP50", func(t Timing) Percentiles { return t.PodStart }, false, func(t *BaselineTiming) *Samples { return &t.PodStartP50 }),
	timingMetric("timing.nodeClaimLaunch.p50", "timing.nodeClaimLaunchP50", func(t Timing) Percentiles { return t.NodeClaimLaunch }, false, func(t *BaselineTiming) *Samples { return &t.NodeClaimLaunchP50 }),
	timingMetric("timing.nodeRegistration.p50", "timing.nodeRegistrationP50", func(t Timing) Percentiles { return t.NodeRegistration }, false, func(t *BaselineTiming) *Samples { return &t.NodeRegistrationP50 }),
	timingMetric("timing.nodeInitialization.p50", "timing.nodeInitializationP50", func(t Timing) Percentiles { return t.NodeInitialization }, false, func(t *BaselineTiming) *Samples { return &t.NodeInitializationP50 }),
	floor(CPUFloor, usageMetric("karpenter.cpuSeconds", "cpu-s", func(u *usage.Usage) float64 { return u.CPUSeconds }, func(k *BaselineKarpenter) *Samples { return &k.CPUSeconds })),
	usageMetric("karpenter.peakRSSMiB", "MiB", func(u *usage.Usage) float64 { return math.Round(u.PeakRSSBytes/(1<<20)*10) / 10 }, func(k *BaselineKarpenter) *Samples { return &k.PeakRSSMiB }),
	usageMetric("karpenter.requests", "requests", func(u *usage.Usage) float64 { return float64(u.RequestsTotal) }, func(k *BaselineKarpenter) *Samples { return &k.Requests }),
	// How long Karpenter took from the scale-in's first step to its last
	// change: its decisions' waits (consolidateAfter, validation, polling)
	// and the drains and terminations they start.
	scaleInMetric("disruption.steadyAfter", func(d *Disruption) float64 { return d.SteadyAfter }),
	untested(usageMetric("karpenter.latencyMs", "ms", func(u *usage.Usage) float64 { return u.MeanLatencyMs }, func(k *BaselineKarpenter) *Samples { return &k.LatencyMs })),
}

// scaleInMetric reads a scale-in timing from a run whose scale-in
// settled; one that stalled or timed out has no time to compare (its
// outcome already regressed).
func scaleInMetric(path string, of func(*Disruption) float64) RunMetric {
	return RunMetric{Path: path, Field: path, Unit: "s", Floor: TimingFloor, ScaleIn: true,
		Of: func(f *Fingerprint) (float64, bool) {
			if d := f.Disruption; d != nil && d.Outcome == observe.Settled {
				return of(d), true
			}
			return 0, false
		},
		In: func(*Baseline, bool) *Samples { return nil }}
}

func untested(m RunMetric) RunMetric { m.Untested = true; return m }

func floor(f float64, m RunMetric) RunMetric { m.Floor = f; return m }

const (
	// TimingFloor is the least a latency's median must grow by, in
	// seconds: a stage of 0.2 s that takes 0.26 s is 1.3× and real, and
	// nothing anyone would act on.
	TimingFloor = 0.2
	// CPUFloor is the least Karpenter's CPU seconds in a run must grow
	// by. Karpenter's background work (informers, batch timers) costs it a
	// few tenths of a CPU second per run whatever the scenario, and that
	// part moves with the machine: on a fresh machine of the same size the
	// small scenarios read 0.1-0.2 cpu-s above their baselines in every
	// run (cpu-heavy 0.195 -> 0.3, mixed-arch -> 0.4: past the 1.5x gate
	// and significant), while runners-twenty-pools read 1.63 against
	// 1.585. The regressions this metric is for are seconds per run
	// (v1.11.0 on twenty NodePools: +1.9 cpu-s).
	CPUFloor = 0.5
)

// NewBaseline aggregates the fingerprints of repeated runs.
func NewBaseline(scenario string, env Provenance, fps []*Fingerprint) (*Baseline, error) {
	if len(fps) == 0 {
		return nil, errors.New("a baseline needs at least one run")
	}
	b := &Baseline{SchemaVersion: SchemaVersion, Scenario: scenario, Provenance: env, Outcomes: fps[0].Outcomes}
	b.Timing.Clock = cmp.Or(fps[0].Timing.Clock, observe.ServerClock)
	if err := b.add(fps); err != nil {
		return nil, err
	}
	return b, nil
}

// AcceptedRun is a run a report observed that was added to the baseline
// afterwards (nodeprint accept): its spread was judged noise by a person,
// whose reason is kept for the next reviewer.
type AcceptedRun struct {
	Run    string `json:"run"`
	Reason string `json:"reason"`
}

// Add returns a copy of the baseline with more runs in it, as if they had
// been recorded with the others: the spread only grows, nothing seen before
// is dropped. A run that ended differently (outcomes) is refused, as in
// NewBaseline.
func (b *Baseline) Add(fps ...*Fingerprint) (*Baseline, error) {
	if len(fps) == 0 {
		return nil, errors.New("no run to add")
	}
	nb := b.clone()
	if err := nb.add(fps); err != nil {
		return nil, err
	}
	return nb, nil
}

// Merge returns b with the runs of o added, as if all had been recorded
// together: selections counted over both, ranges and timing samples
// joined. Both must be of one scenario and environment and end the same
// way; o's inputs become the result's, and b's must be o's or unknown (a
// baseline of schema 1, recorded with the same Karpenter, Kubernetes and
// catalog). It is how `nodeprint record --add` keeps a non-deterministic
// baseline's spread across recordings.
func (b *Baseline) Merge(o *Baseline) (*Baseline, error) {
	switch {
	case b.Scenario != o.Scenario:
		return nil, fmt.Errorf("baselines of %s and %s cannot be merged", b.Scenario, o.Scenario)
	case b.Outcomes != o.Outcomes:
		return nil, fmt.Errorf("the recorded runs ended with %+v, the new ones with %+v: a baseline must end the same way every run", b.Outcomes, o.Outcomes)
	case b.Provenance.Karpenter != o.Provenance.Karpenter || b.Provenance.Kubernetes != o.Provenance.Kubernetes ||
		b.Provenance.CatalogDigest != o.Provenance.CatalogDigest:
		return nil, fmt.Errorf("the recorded runs are of Karpenter %s, Kubernetes %s, catalog %.8s, the new ones of %s, %s, %.8s: record afresh",
			b.Provenance.Karpenter, b.Provenance.Kubernetes, b.Provenance.CatalogDigest, o.Provenance.Karpenter, o.Provenance.Kubernetes, o.Provenance.CatalogDigest)
	}
	if bm, om := b.Provenance.Machine, o.Provenance.Machine; bm == nil || om == nil || bm.Class() != om.Class() {
		// Latencies and Karpenter's usage move with the machine: runs of
		// two machines in one baseline widen its spread for both.
		return nil, fmt.Errorf("the recorded runs are of %s, the new ones of %s: runs of different machines are not added together (their latencies and Karpenter's usage differ); record afresh on the machine that verifies",
			bm.Class(), om.Class())
	}
	if bc, oc := b.clock(), o.clock(); bc != oc {
		return nil, fmt.Errorf("the recorded runs' latencies are read from the %s clock, the new ones' from the %s clock: record afresh", bc, oc)
	}
	if b.Inputs != nil {
		if d := inputs.Diff(b.Inputs, o.Inputs); len(d) > 0 {
			return nil, fmt.Errorf("the new runs applied other inputs than the recorded ones (%s): record afresh", inputs.Summary(d, 3))
		}
	}
	nb := b.clone()
	if err := nb.mergeDisruption(o); err != nil {
		return nil, err
	}
	bySel := map[string]int{}
	for i, s := range nb.Selections {
		bySel[s.Key()] = i
	}
	for _, s := range o.Selections {
		if i, ok := bySel[s.Key()]; ok {
			nb.Selections[i].Runs += s.Runs
			continue
		}
		s.InstanceTypes = maps.Clone(s.InstanceTypes)
		bySel[s.Key()] = len(nb.Selections)
		nb.Selections = append(nb.Selections, s)
	}
	nb.Runs += o.Runs
	for _, r := range []struct {
		dst *Range
		src Range
	}{{&nb.Zones, o.Zones}, {&nb.ZoneSkew, o.ZoneSkew}, {&nb.PodsPerNode, o.PodsPerNode}} {
		*r.dst = r.dst.Extend(r.src.Min, false).Extend(r.src.Max, false)
	}
	for _, m := range RunMetrics {
		dst, src := m.In(nb, false), m.In(o, false)
		if dst == nil || src == nil {
			continue
		}
		if len(dst.Values) == 0 || len(src.Values) == 0 {
			*dst = Samples{} // one side lacks it: one value a run, or none
			continue
		}
		*dst = newSamples(append(slices.Clone(dst.Values), src.Values...))
	}
	if nb.Replaced == nil || o.Replaced == nil {
		nb.Replaced = nil // some runs were recorded before replacements were
	} else {
		r := nb.Replaced.Extend(o.Replaced.Min, false).Extend(o.Replaced.Max, false)
		nb.Replaced = &r
	}
	if nb.Karpenter == nil || o.Karpenter == nil {
		// Some runs could not read Karpenter's usage: none is kept.
		nb.Karpenter = nil
	}
	sort.SliceStable(nb.Selections, func(i, j int) bool {
		if nb.Selections[i].Runs != nb.Selections[j].Runs {
			return nb.Selections[i].Runs > nb.Selections[j].Runs
		}
		return nb.Selections[i].Key() < nb.Selections[j].Key()
	})
	nb.Note = ""
	if len(nb.Selections) > 1 {
		nb.Note = fmt.Sprintf("non-deterministic: %d distinct selections in %d runs", len(nb.Selections), nb.Runs)
	}
	nb.Inputs, nb.SchemaVersion = o.Inputs, SchemaVersion
	return nb, nil
}

func (b *Baseline) clone() *Baseline {
	nb := *b
	nb.Selections = make([]SeenSelection, len(b.Selections))
	for i, s := range b.Selections {
		s.InstanceTypes = maps.Clone(s.InstanceTypes)
		nb.Selections[i] = s
	}
	nb.Provenance.KarpenterSettings = maps.Clone(b.Provenance.KarpenterSettings)
	nb.Accepted = slices.Clone(b.Accepted)
	if b.Karpenter != nil {
		k := *b.Karpenter
		nb.Karpenter = &k
	}
	if b.Replaced != nil {
		r := *b.Replaced
		nb.Replaced = &r
	}
	if b.Disruption != nil {
		nb.Disruption = &BaselineDisruption{Runs: slices.Clone(b.Disruption.Runs)}
	}
	for _, m := range RunMetrics {
		if s := m.In(&nb, false); s != nil {
			s.Values = slices.Clone(s.Values)
		}
	}
	return &nb
}

// clock is the clock the baseline's latencies were read from.
func (b *Baseline) clock() observe.Clock { return cmp.Or(b.Timing.Clock, observe.ServerClock) }

// add folds runs into b, which holds b.Runs runs already (none for a new one).
func (b *Baseline) add(fps []*Fingerprint) error {
	bySel := map[string]int{}
	for i, s := range b.Selections {
		bySel[s.Key()] = i
	}
	if first := b.Runs == 0; first {
		for _, m := range RunMetrics {
			m.In(b, m.Usage)
		}
		b.Replaced = &Range{}
	}
	if err := b.addDisruption(fps, b.Runs); err != nil {
		return err
	}
	values := map[string][]float64{}
	for _, m := range RunMetrics {
		// A metric the recorded runs lack (recorded before it was) is not
		// started by the new runs: its samples are one value a run or none.
		if s := m.In(b, false); s != nil && (b.Runs == 0 || len(s.Values) > 0) {
			values[m.Path] = slices.Clone(s.Values)
		}
	}
	keepUsage := b.Karpenter != nil
	for _, fp := range fps {
		first := b.Runs == 0
		b.Runs++
		if fp.Outcomes != b.Outcomes {
			return fmt.Errorf("run %d ended with %+v, run 1 with %+v: a baseline must end the same way every run", b.Runs, fp.Outcomes, b.Outcomes)
		}
		k := fp.Selection.Key()
		if i, ok := bySel[k]; ok {
			b.Selections[i].Runs++
		} else {
			bySel[k] = len(b.Selections)
			b.Selections = append(b.Selections, SeenSelection{InstanceTypes: maps.Clone(fp.Selection.InstanceTypes), Nodes: fp.Selection.Nodes, HourlyCost: fp.Selection.HourlyCost, Runs: 1})
		}
		b.Zones = b.Zones.Extend(float64(fp.Selection.Zones), first)
		b.ZoneSkew = b.ZoneSkew.Extend(float64(fp.Selection.ZoneSkew), first)
		b.PodsPerNode = b.PodsPerNode.Extend(float64(fp.Selection.PodsPerNodeMin), first).Extend(float64(fp.Selection.PodsPerNodeMax), false)
		if b.Replaced != nil {
			// Runs added to a baseline recorded before replacements were
			// leave it unknown.
			*b.Replaced = b.Replaced.Extend(float64(fp.Replaced), first)
		}
		if c := cmp.Or(fp.Timing.Clock, observe.ServerClock); c != b.clock() {
			return fmt.Errorf("run %d read its latencies from the %s clock, the baseline from the %s clock: record afresh", b.Runs, c, b.clock())
		}
		for _, m := range RunMetrics {
			v, ok := m.Of(fp)
			// A run without Karpenter's usage: none is kept.
			keepUsage = keepUsage && (ok || !m.Usage)
			vs, kept := values[m.Path]
			switch {
			case !kept:
			case !ok && !m.Usage:
				// A run without the latency (no pod or NodeClaim went
				// through that stage): a 0 would be a sample of a stage that
				// never happened. Its samples go, as usage's do, and
				// verification names the metric as one it did not test.
				values[m.Path] = nil
			case vs != nil || b.Runs == 1:
				values[m.Path] = append(vs, v)
			}
		}
	}
	if !keepUsage {
		b.Karpenter = nil
	}
	sort.SliceStable(b.Selections, func(i, j int) bool {
		if b.Selections[i].Runs != b.Selections[j].Runs {
			return b.Selections[i].Runs > b.Selections[j].Runs
		}
		return b.Selections[i].Key() < b.Selections[j].Key()
	})
	for _, m := range RunMetrics {
		if s := m.In(b, false); s != nil {
			*s = newSamples(values[m.Path])
		}
	}
	b.Note = ""
	if len(b.Selections) > 1 {
		b.Note = fmt.Sprintf("non-deterministic: %d distinct selections in %d runs", len(b.Selections), b.Runs)
	}
	return nil
}

// checkSamples refuses per-run samples that do not hold one value a run,
// or whose derived numbers disagree with their values: they are written
// by nodeprint, and a hand-edited median or limit would silently change
// what verification accepts.
func (b *Baseline) checkSamples(add func(field, msg string, args ...any)) {
	switch c := b.Timing.Clock; {
	case b.SchemaVersion < 3 && c == "":
		// Recorded before the clock was: the server's timestamps.
		b.Timing.Clock = observe.ServerClock
	case b.SchemaVersion < 3 && c != observe.ServerClock:
		add("timing.clock", "%q: schema %d latencies are the server's", c, b.SchemaVersion)
	case c != observe.ServerClock && c != observe.ReceivedClock:
		add("timing.clock", "%q: want %s or %s", c, observe.ServerClock, observe.ReceivedClock)
	}
	if b.SchemaVersion < 3 && b.Karpenter != nil {
		add("karpenter", "schema %d has no Karpenter usage; a baseline with it is schema 3", b.SchemaVersion)
	}
	for _, m := range RunMetrics {
		smp := m.In(b, false)
		if smp == nil {
			continue
		}
		field := m.Field
		if len(smp.Values) == 0 {
			if b.SchemaVersion >= 3 && smp.Median != 0 {
				// Emptied by hand or by a tool: without its values the
				// metric would silently go untested.
				add(field+".values", "missing, though the median %g says %d runs were recorded: verification tests the runs' values; re-record (nodeprint record %s)", smp.Median, b.Runs, b.Scenario)
			}
			continue // not recorded (an early schema-1 file, or a metric newer than the file)
		}
		if len(smp.Values) != b.Runs {
			add(field+".values", "%d values for %d runs: one value a run", len(smp.Values), b.Runs)
			continue
		}
		med, mad, limit := legacyDerived(smp.Values)
		if math.Abs(smp.Median-math.Round(med*1000)/1000) > 0.0005 && math.Abs(smp.Median-med) > 1e-9 {
			add(field+".median", "%g, but the median of its values is %g: re-record rather than edit", smp.Median, med)
		}
		switch {
		case b.SchemaVersion >= 3 && (smp.MAD != 0 || smp.Limit != 0):
			add(field, "schema %d has no mad or limit: verification tests the runs' values (docs/scenarios.md)", b.SchemaVersion)
		case b.SchemaVersion < 3 && (math.Abs(smp.MAD-mad) > 1e-9 || math.Abs(smp.Limit-limit) > 0.005):
			add(field+".limit", "mad %g and limit %g, but its values give %g and %g: re-record rather than edit", smp.MAD, smp.Limit, mad, limit)
		}
	}
}

// Path is where a scenario's baseline lives under dir.
func Path(dir, scenario string) string { return filepath.Join(dir, scenario+".yaml") }

// Save writes the baseline as YAML.
func (b *Baseline) Save(path string) error {
	out, err := yaml.Marshal(b)
	if err != nil {
		return fmt.Errorf("failed to encode baseline: %w", err)
	}
	header := []byte("# Recorded by nodeprint; re-record with `nodeprint record " + b.Scenario + "` or\n# go test ./suites/baseline/... -args -update-fingerprints. Reviewed like code.\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
	}
	return os.WriteFile(path, append(header, out...), 0o644)
}

// LoadBaseline reads a baseline strictly: unknown fields and a schema
// version this build does not know are errors naming the file.
func LoadBaseline(path string) (*Baseline, error) {
	data, err := strictyaml.ReadFile(path, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no baseline %s: record it with `nodeprint record` or -update-fingerprints: %w", path, err)
		}
		return nil, err
	}
	return ParseBaseline(path, data)
}

// ParseBaseline decodes and checks a baseline read from path; every
// problem is a *strictyaml.FieldError naming the file, field and line.
func ParseBaseline(path string, data []byte) (*Baseline, error) {
	if err := strictyaml.CheckText(path, data, 0); err != nil {
		return nil, err
	}
	b := &Baseline{}
	if errs, _ := strictyaml.Decode(path, data, b, "fingerprints are written by nodeprint record: re-record rather than edit"); len(errs) > 0 {
		return nil, errs
	}
	pos, _ := strictyaml.NewPositions(data)
	var errs strictyaml.ErrorList
	add := func(field, msg string, args ...any) {
		errs = append(errs, &strictyaml.FieldError{File: path, Path: field, Line: pos.Line(field), Msg: fmt.Sprintf(msg, args...)})
	}
	switch {
	case b.SchemaVersion < oldestSchema || b.SchemaVersion > SchemaVersion:
		add("schemaVersion", "%d, this nodeprint reads %d to %d: re-record it", b.SchemaVersion, oldestSchema, SchemaVersion)
	case b.SchemaVersion < 2 && b.Inputs != nil:
		add("inputs", "schema %d has no inputs; a baseline with inputs is schema 2", b.SchemaVersion)
	}
	if b.Scenario == "" {
		add("scenario", "no scenario name")
	} else if msgs := validation.IsDNS1123Subdomain(b.Scenario); len(msgs) > 0 {
		add("scenario", "%q is not a valid scenario name: %s", b.Scenario, strings.Join(msgs, "; "))
	}
	if b.Runs < 1 {
		add("runs", "%d: a baseline is recorded from at least one run", b.Runs)
	}
	if len(b.Selections) == 0 {
		add("selections", "no selection recorded")
	}
	total := 0
	for i, sel := range b.Selections {
		if sel.Runs < 1 {
			add(fmt.Sprintf("selections[%d].runs", i), "%d: a selection is seen in at least one run", sel.Runs)
		}
		total += sel.Runs
		if sel.Nodes < 0 || sel.HourlyCost < 0 || math.IsNaN(sel.HourlyCost) || math.IsInf(sel.HourlyCost, 0) {
			add(fmt.Sprintf("selections[%d]", i), "nodes %d and hourlyCost %v must be finite and not negative", sel.Nodes, sel.HourlyCost)
		}
		for it, n := range sel.InstanceTypes {
			if n < 1 {
				add(fmt.Sprintf("selections[%d].instanceTypes", i), "%s: %d nodes; a listed type has at least one", it, n)
			}
		}
	}
	if len(errs) == 0 && total != b.Runs {
		add("selections", "seen in %d runs in all, but runs is %d", total, b.Runs)
	}
	if b.SchemaVersion >= oldestSchema && b.SchemaVersion <= SchemaVersion {
		b.checkSamples(add) // a schema this build does not know is the one error
	}
	if r := b.Replaced; r != nil && (r.Min < 0 || r.Min > r.Max) {
		add("replaced", "min %g, max %g: a range of counts", r.Min, r.Max)
	}
	if len(b.Accepted) > b.Runs {
		add("accepted", "%d accepted runs, but runs is %d", len(b.Accepted), b.Runs)
	}
	seen := map[string]bool{}
	for i, a := range b.Accepted {
		switch {
		case a.Run == "":
			add(fmt.Sprintf("accepted[%d].run", i), "no run id")
		case seen[a.Run]:
			add(fmt.Sprintf("accepted[%d].run", i), "%s is listed twice: a run is accepted once", a.Run)
		case strings.TrimSpace(a.Reason) == "":
			add(fmt.Sprintf("accepted[%d].reason", i), "no reason: say why run %s was accepted", a.Run)
		}
		seen[a.Run] = true
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return b, nil
}
