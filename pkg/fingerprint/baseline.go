package fingerprint

import (
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
	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// SchemaVersion is the version of the baseline file format: 2 records the
// inputs. A baseline of schema 1 still loads, without inputs, so that its
// fingerprint is still verified; a change cannot be attributed against it
// (NoInputs says so).
const SchemaVersion = 2

// oldestSchema is the oldest baseline schema this build reads.
const oldestSchema = 1

// TimingSlack is added to every timing limit: server timestamps have a
// one-second resolution, so a latency can move by up to two seconds
// without anything having changed.
const TimingSlack = 2.0

// MADFactor scales the median absolute deviation into a robust standard
// deviation; TimingSigmas is how many of those a latency may exceed the
// baseline median by. See Limit.
const (
	MADFactor    = 1.4826
	TimingSigmas = 4.0
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
	Timing      BaselineTiming  `json:"timing"`
	Outcomes    Outcomes        `json:"outcomes"`
	// Note explains, for a non-deterministic scenario, where its spread comes from.
	Note string `json:"note,omitempty"`
	// Accepted are the runs among Runs that were added from a report
	// (nodeprint accept) rather than recorded.
	Accepted []AcceptedRun `json:"accepted,omitempty"`
	// Inputs are what the recorded runs applied (the NodePool, node
	// class, workloads, catalog and Karpenter), for change attribution;
	// nil in a baseline of schema 1.
	Inputs *inputs.Inputs `json:"inputs,omitempty"`
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
	PodReadyP50       Samples `json:"podReadyP50"`
	PodReadyP90       Samples `json:"podReadyP90"`
	NodeClaimReadyP50 Samples `json:"nodeClaimReadyP50"`
	NodeClaimReadyP90 Samples `json:"nodeClaimReadyP90"`
}

// Samples are one statistic over the baseline's runs, in seconds.
type Samples struct {
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	MAD    float64   `json:"mad"`
	// Limit is the largest value verification accepts (see limit()).
	Limit float64 `json:"limit"`
}

// newSamples computes the robust rule: a value regresses when it exceeds
//
//	max(largest value seen, median + TimingSigmas × MADFactor × MAD) + TimingSlack
//
// The median and the median absolute deviation ignore one odd run out of
// five; the largest seen value keeps a noisy-but-normal run from failing;
// the slack covers the timestamps' one-second resolution.
func newSamples(vals []float64) Samples {
	s := Samples{Values: vals}
	if len(vals) == 0 {
		return s
	}
	s.Median = median(vals)
	dev := make([]float64, len(vals))
	for i, v := range vals {
		dev[i] = math.Abs(v - s.Median)
	}
	s.MAD = median(dev)
	s.Limit = math.Max(maxOf(vals), s.Median+TimingSigmas*MADFactor*s.MAD) + TimingSlack
	s.Limit = math.Round(s.Limit*100) / 100
	return s
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// NewBaseline aggregates the fingerprints of repeated runs.
func NewBaseline(scenario string, env Provenance, fps []*Fingerprint) (*Baseline, error) {
	if len(fps) == 0 {
		return nil, errors.New("a baseline needs at least one run")
	}
	b := &Baseline{SchemaVersion: SchemaVersion, Scenario: scenario, Provenance: env, Outcomes: fps[0].Outcomes}
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
	if b.Inputs != nil {
		if d := inputs.Diff(b.Inputs, o.Inputs); len(d) > 0 {
			return nil, fmt.Errorf("the new runs applied other inputs than the recorded ones (%s): record afresh", inputs.Summary(d, 3))
		}
	}
	nb := b.clone()
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
	t, ot := &nb.Timing, o.Timing
	nb.Timing = BaselineTiming{PodReadyP50: newSamples(append(t.PodReadyP50.Values, ot.PodReadyP50.Values...)),
		PodReadyP90:       newSamples(append(t.PodReadyP90.Values, ot.PodReadyP90.Values...)),
		NodeClaimReadyP50: newSamples(append(t.NodeClaimReadyP50.Values, ot.NodeClaimReadyP50.Values...)),
		NodeClaimReadyP90: newSamples(append(t.NodeClaimReadyP90.Values, ot.NodeClaimReadyP90.Values...))}
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
	for _, s := range []*Samples{&nb.Timing.PodReadyP50, &nb.Timing.PodReadyP90, &nb.Timing.NodeClaimReadyP50, &nb.Timing.NodeClaimReadyP90} {
		s.Values = slices.Clone(s.Values)
	}
	return &nb
}

// add folds runs into b, which holds b.Runs runs already (none for a new one).
func (b *Baseline) add(fps []*Fingerprint) error {
	bySel := map[string]int{}
	for i, s := range b.Selections {
		bySel[s.Key()] = i
	}
	t := &b.Timing
	p50, p90, c50, c90 := t.PodReadyP50.Values, t.PodReadyP90.Values, t.NodeClaimReadyP50.Values, t.NodeClaimReadyP90.Values
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
		p50, p90 = append(p50, fp.Timing.PodReady.P50), append(p90, fp.Timing.PodReady.P90)
		c50, c90 = append(c50, fp.Timing.NodeClaimReady.P50), append(c90, fp.Timing.NodeClaimReady.P90)
	}
	sort.SliceStable(b.Selections, func(i, j int) bool {
		if b.Selections[i].Runs != b.Selections[j].Runs {
			return b.Selections[i].Runs > b.Selections[j].Runs
		}
		return b.Selections[i].Key() < b.Selections[j].Key()
	})
	b.Timing = BaselineTiming{PodReadyP50: newSamples(p50), PodReadyP90: newSamples(p90), NodeClaimReadyP50: newSamples(c50), NodeClaimReadyP90: newSamples(c90)}
	b.Note = ""
	if len(b.Selections) > 1 {
		b.Note = fmt.Sprintf("non-deterministic: %d distinct selections in %d runs", len(b.Selections), b.Runs)
	}
	return nil
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
