package sensitivity

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
)

// An Injection is a regression of exactly Factor put into the candidate
// arm of an A/A pool after the fact: every candidate run's stage and the
// latencies that contain it grow by the same seconds, (Factor − 1) times
// the reference arm's geometric mean of the stage's target over the pool.
// A lever build realizes a factor near the one asked (a delay sized on a
// few runs, then the machine's noise); an injection realizes it on the
// pool's own noise, the machine's and the harness's as they were, which
// a lever cannot. What it cannot show is a build's side effects (a slower
// decision that also changes the batch it makes): levers stay the
// measurement, injections say what the test does with an exact factor.
type Injection struct {
	Stage  Stage
	Factor float64
}

// Stage is where an injected delay goes: the latencies that contain it
// (every percentile of each shifts by the delay, as a constant delay of
// every pod or NodeClaim would shift them) and the target it is sized on.
type Stage struct {
	Name   string
	Target string
	delays func(*fingerprint.Timing) []*fingerprint.Percentiles
}

// Stages are the injectable stages, as the levers name them.
var Stages = []Stage{
	{Name: "decide", Target: "timing.podReady.p50", delays: func(t *fingerprint.Timing) []*fingerprint.Percentiles {
		// A slower decision: pods wait longer for their NodeClaim, so
		// their scheduling and readiness too; the NodeClaims do not.
		return []*fingerprint.Percentiles{&t.PodDecision, &t.PodScheduled, &t.PodReady}
	}},
	{Name: "launch", Target: "timing.nodeClaimReady.p50", delays: func(t *fingerprint.Timing) []*fingerprint.Percentiles {
		// A slower launch: NodeClaims launch later, so they and the pods
		// waiting for them are ready later; the decision is unchanged.
		return []*fingerprint.Percentiles{&t.NodeClaimLaunch, &t.NodeClaimReady, &t.PodScheduled, &t.PodReady}
	}},
}

// ParseInjection reads "decide:1.25" or "launch:1.5".
func ParseInjection(spec string) (Injection, error) {
	name, f, ok := strings.Cut(strings.TrimSpace(spec), ":")
	v, err := strconv.ParseFloat(f, 64)
	if !ok || err != nil || !(v > 1) || v > 10 {
		return Injection{}, fmt.Errorf("%q: want STAGE:FACTOR with a factor above 1 and at most 10, e.g. decide:1.25", spec)
	}
	for _, s := range Stages {
		if s.Name == name {
			return Injection{Stage: s, Factor: v}, nil
		}
	}
	var names []string
	for _, s := range Stages {
		names = append(names, s.Name)
	}
	return Injection{}, fmt.Errorf("%q: no stage %q, want one of %v", spec, name, names)
}

// ParseInjections reads a comma-separated list of ParseInjection's
// specs ("decide:1.25,launch:1.25"); empty items are skipped, so "" is
// none.
func ParseInjections(list string) ([]Injection, error) {
	var out []Injection
	for _, spec := range strings.Split(list, ",") {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		in, err := ParseInjection(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// Inject is p with in put into its candidate arm, as a lever condition of
// its own ("decide ×1.25, injected into unchanged"); p must be an A/A
// pool. The pool's fingerprints are copied, not changed.
func Inject(p Pool, in Injection) (Pool, error) {
	if p.Condition.Target != "" {
		return Pool{}, fmt.Errorf("%s, %s: an injection goes into an A/A pool, this one has a lever", p.Scenario, p.Condition.Name)
	}
	m, ok := RunMetric(in.Stage.Target)
	if !ok {
		return Pool{}, fmt.Errorf("stage %s: no per-run metric %s", in.Stage.Name, in.Stage.Target)
	}
	sum, n := 0.0, 0
	for _, b := range p.Pairs {
		if v, ok := m.Of(b.Ref); ok && v > 0 {
			sum += math.Log(v)
			n++
		}
	}
	if n == 0 {
		return Pool{}, fmt.Errorf("%s, %s: no reference run has %s to size the injection on", p.Scenario, p.Condition.Name, in.Stage.Target)
	}
	delay := (in.Factor - 1) * math.Exp(sum/float64(n))
	out := Pool{Scenario: p.Scenario, Condition: Condition{
		Name:   fmt.Sprintf("%s ×%.2f, injected into %s", in.Stage.Name, in.Factor, p.Condition.Name),
		Load:   p.Condition.Load,
		Target: in.Stage.Target, Factor: in.Factor,
	}}
	for _, b := range p.Pairs {
		b.Cand = delayed(b.Cand, in.Stage, delay)
		out.Pairs = append(out.Pairs, b)
	}
	return out, nil
}

// delayed is a copy of f whose stage's latencies are later by delay
// seconds; a latency the run has none of stays none. Only Timing, a
// value, changes: the copy shares nothing it changes with f.
func delayed(f *fingerprint.Fingerprint, s Stage, delay float64) *fingerprint.Fingerprint {
	c := *f
	for _, p := range s.delays(&c.Timing) {
		if p.Count > 0 {
			p.P50, p.P90, p.P99, p.Max = p.P50+delay, p.P90+delay, p.P99+delay, p.Max+delay
		}
	}
	return &c
}

// InjectAll is every injection put into every A/A pool of pools, in that
// order; pools with a lever are left out.
func InjectAll(pools []Pool, ins []Injection) ([]Pool, error) {
	var out []Pool
	for _, p := range pools {
		if p.Condition.Target != "" {
			continue
		}
		for _, in := range ins {
			q, err := Inject(p, in)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	return out, nil
}
