package run

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/ptr"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/facts"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// FaultOption configures RunFault.
type FaultOption func(*faultOpts)

type faultOpts struct {
	onInject     func(faults.Injector)
	whileFaulted func(context.Context, *Result)
}

// OnInject is called with the injector before it injects, so a caller can
// register its Restore (Ginkgo's DeferCleanup). RunFault restores it too.
func OnInject(f func(faults.Injector)) FaultOption { return func(o *faultOpts) { o.onInject = f } }

// WhileFaulted is called once the faulted run has settled, with its
// result, while the fault is still injected and the run's objects exist:
// the moment an on-call engineer would run the runbook's commands. It is
// not called when the run fails before settling.
func WhileFaulted(f func(context.Context, *Result)) FaultOption {
	return func(o *faultOpts) { o.whileFaulted = f }
}

// FaultResult is a fault scenario's clean run, faulted run and verdict.
type FaultResult struct {
	Scenario *scenario.Scenario
	// Clean is the run without the fault, the faulted run's reference.
	Clean   *Result
	Faulted *Result
	// CleanFingerprint aggregates the clean run as a baseline.
	CleanFingerprint *fingerprint.Baseline
	Diff             *diff.Diff
	Verdict          *attribute.Verdict
}

// RunFault runs a fault scenario: once clean (its baseline), once with the
// fault injected, and classifies the faulted run against the clean one.
func (r *Runner) RunFault(ctx context.Context, s *scenario.Scenario, opts ...FaultOption) (*FaultResult, error) {
	if s.Spec.Fault == nil {
		return nil, fmt.Errorf("scenario %s has no fault block", s.Metadata.Name)
	}
	clean := *s
	clean.Spec.Fault = nil
	r.progress(fmt.Sprintf("scenario %s: baseline run (no fault)", s.Metadata.Name))
	base, err := r.run(ctx, &clean, hooks{})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: baseline run: %w", s.Metadata.Name, err)
	}
	bl, err := fingerprint.NewBaseline(s.Metadata.Name, fingerprint.Provenance{}, []*fingerprint.Fingerprint{base.Fingerprint})
	if err != nil {
		return nil, err
	}
	r.progress(fmt.Sprintf("scenario %s: faulted run (%s)", s.Metadata.Name, s.Spec.Fault.Name))
	faulted, err := r.run(ctx, s, hooksOf(opts))
	if err != nil {
		return nil, fmt.Errorf("scenario %s: faulted run: %w", s.Metadata.Name, err)
	}
	res := &FaultResult{Scenario: s, Clean: base, Faulted: faulted, CleanFingerprint: bl}
	res.Diff, res.Verdict, err = Attribute(s, faulted, bl, base.Inputs)
	if err != nil {
		return nil, err
	}
	r.progress(fmt.Sprintf("scenario %s: %s", s.Metadata.Name, res.Verdict.Summary()))
	return res, nil
}

// newInjector binds the scenario's fault to the run's objects.
func (r *Runner) newInjector(s *scenario.Scenario, id string, objs *Objects, cat *fit.Catalog) (faults.Injector, error) {
	cpu, mem := cat.Largest()
	t := &faults.Target{
		Client: r.client, Run: id, NodePool: objs.NodePool, NodeClass: objs.NodeClass,
		Deployments: objs.Deployments, Scenario: s, Largest: faults.Shape{CPU: cpu, Memory: mem},
	}
	if c, ok := r.catalogs.(faults.Cluster); ok {
		t.Cluster = c
	}
	inj, err := faults.New(s.Spec.Fault, t)
	if err != nil {
		return nil, fmt.Errorf("%s: spec.fault: %w", s.Path, err)
	}
	return inj, nil
}

// inputsOf records what a run applies, with the run's id taken out.
func (r *Runner) inputsOf(s *scenario.Scenario, objs *Objects, cat *catalog.Catalog) (*inputs.Inputs, error) {
	id := objs.Namespace.Name
	np, err := inputs.Object(objs.NodePool.Spec, id, observe.RunLabel)
	if err != nil {
		return nil, err
	}
	nc, err := inputs.Object(objs.NodeClass.Spec, id, observe.RunLabel)
	if err != nil {
		return nil, err
	}
	in := &inputs.Inputs{NodePool: np, NodeClass: nc, Workloads: map[string]inputs.Workload{},
		Catalog: inputs.Catalog{Name: s.Spec.Catalog, Digest: cat.Digest}, Karpenter: r.karpenter}
	if env := s.Spec.Karpenter.Env(); len(env) > 0 {
		in.Karpenter.Settings = env
	}
	for _, d := range objs.Deployments {
		tpl, err := inputs.Object(d.Spec.Template, id, observe.RunLabel)
		if err != nil {
			return nil, err
		}
		in.Workloads[d.Name] = inputs.Workload{Replicas: ptr.Deref(d.Spec.Replicas, 1), Template: tpl}
	}
	for _, h := range objs.HPAs {
		spec, err := inputs.Object(h.Spec, id, observe.RunLabel)
		if err != nil {
			return nil, err
		}
		w := in.Workloads[h.Spec.ScaleTargetRef.Name]
		w.HPA = spec
		in.Workloads[h.Spec.ScaleTargetRef.Name] = w
	}
	return in, nil
}

// facts reads what the classifier needs from the cluster at the end of a run.
func (r *Runner) facts(ctx context.Context, objs *Objects, cat *fit.Catalog, before *apiStats, since time.Time) attribute.Facts {
	f := facts.New()
	f.Health = r.healthSince(ctx, since)
	facts.ReadNodePool(ctx, r.client, &f, objs.NodePool.Name, objs.NodePool)
	for _, d := range objs.Deployments {
		tpl := d.Spec.Template.DeepCopy()
		f.Workloads[d.Name] = tpl
		f.Fit[d.Name] = cat.Check(tpl, f.NodePool)
		f.Replicas[d.Name], _, _ = facts.ReadReplicas(ctx, r.client, d.Namespace, d.Name, ptr.To(ptr.Deref(d.Spec.Replicas, 0)))
	}
	f.Allocatable = cat.Allocatable()
	f.PodUsage = facts.PodUsage(ctx, r.client, objs.Namespace.Name)
	f.KarpenterErrors, f.KarpenterLatencyMs = r.apiFacts(ctx, before)
	return f
}

// apiFacts are Karpenter's failed API requests and their mean latency
// since before; nil where Karpenter's metrics cannot be read.
func (r *Runner) apiFacts(ctx context.Context, before *apiStats) (failed, latencyMs *float64) {
	if before == nil {
		return nil, nil
	}
	after, err := readAPIStats(ctx, r.metricsURL())
	if err != nil {
		return nil, nil
	}
	d := after.since(*before)
	failed = &d.errors
	if d.requests > 0 {
		ms := float64(int(d.seconds/d.requests*1e5)) / 100
		latencyMs = &ms
	}
	return failed, latencyMs
}

// metricsURL is Karpenter's metrics endpoint, where the provider knows it.
func (r *Runner) metricsURL() string {
	if c, ok := r.catalogs.(faults.Cluster); ok {
		return c.KarpenterMetrics()
	}
	return ""
}

// apiStatsNow reads Karpenter's API counters; nil where they cannot be read.
func (r *Runner) apiStatsNow(ctx context.Context) *apiStats {
	if r.metricsURL() == "" {
		return nil
	}
	s, err := readAPIStats(ctx, r.metricsURL())
	if err != nil {
		return nil
	}
	return &s
}

// Preflight checks, without a cluster, that the scenario's objects build
// and its fault binds to them (a memory leak needs a memory limit, a named
// workload must exist), so bad input fails before anything is applied.
func Preflight(ctx context.Context, s *scenario.Scenario) error {
	objs, err := Build(s, s.Metadata.Name+"-preflight")
	if err != nil {
		return err
	}
	if s.Spec.Fault == nil {
		return nil
	}
	shapes, err := fit.Load(ctx, s.CatalogPath)
	if err != nil {
		return err
	}
	r := &Runner{}
	_, err = r.newInjector(s, objs.Namespace.Name, objs, shapes)
	return err
}

// Attribute classifies a finished run against a baseline (a recorded one
// for a plain scenario; the clean run for a fault scenario).
func Attribute(s *scenario.Scenario, res *Result, bl *fingerprint.Baseline, baselineInputs *inputs.Inputs) (*diff.Diff, *attribute.Verdict, error) {
	d := diff.Compare(bl, res.Fingerprint, diff.RulesFor(s))
	rs, err := attribute.Rules()
	if err != nil {
		return nil, nil, err
	}
	v, err := attribute.Classify(rs, &attribute.Input{
		Scenario: s.Metadata.Name, Baseline: bl, Observed: res.Fingerprint, Observation: res.Observation,
		Diff: d, Facts: res.Facts, Inputs: res.Inputs, BaselineInputs: baselineInputs,
	})
	return d, v, err
}
