package run

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/facts"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// FaultOption configures RunFault.
type FaultOption func(*faultOpts)

type faultOpts struct {
	onInject     func(faults.Injector)
	whileFaulted func(context.Context, *Result)
	whileClean   func(context.Context, *Result)
}

// OnInject is called with the injector before it injects, so a caller can
// register its Restore (Ginkgo's DeferCleanup). RunFault restores it too.
func OnInject(f func(faults.Injector)) FaultOption { return func(o *faultOpts) { o.onInject = f } }

// WhileFaulted is called once the faulted run has settled, and its
// scale-in has ended where it has one, with its result, while the fault
// is still injected and the run's objects exist: the moment an on-call
// engineer would run the runbook's commands. It is not called when the
// run fails before then.
func WhileFaulted(f func(context.Context, *Result)) FaultOption {
	return func(o *faultOpts) { o.whileFaulted = f }
}

// WhileClean is called once a run without a fault has settled and its
// scale-in has ended (the clean run of a fault scenario), with its
// result, while its objects exist: the
// moment to run the runbook's evidence commands where they must not show
// the pattern. It is not called when the run fails before settling.
func WhileClean(f func(context.Context, *Result)) FaultOption {
	return func(o *faultOpts) { o.whileClean = f }
}

// newInjector binds the scenario's fault to the run's objects on the
// runner's cluster.
func (r *Runner) newInjector(s *scenario.Scenario, objs *Objects, cat *fit.Catalog) (faults.Injector, error) {
	c, _ := r.cluster.(cluster.KarpenterRerouter)
	return BindFault(s, objs, cat, r.client, c)
}

// BindFault binds the scenario's fault to a run's objects: the check of
// verify.Preflight without a cluster (c and cl nil), the injector of a run
// with one. cl is the cluster's capability the infrastructure faults need
// (nil where the provider has none).
func BindFault(s *scenario.Scenario, objs *Objects, cat *fit.Catalog, c client.Client, cl cluster.KarpenterRerouter) (faults.Injector, error) {
	cpu, mem := cat.Largest()
	t := &faults.Target{
		Client: c, Run: objs.Namespace.Name, NodePool: objs.NodePool, NodeClass: objs.NodeClass,
		Deployments: objs.Deployments, SetPDB: objs.SetPDB, Scenario: s, Largest: faults.Shape{CPU: cpu, Memory: mem}, Cluster: cl,
	}
	inj, err := faults.New(s.Spec.Fault, t)
	if err != nil {
		return nil, fmt.Errorf("%s: spec.fault: %w", s.Path, err)
	}
	return inj, nil
}

// recordInputs records what run id applies: its objects, the catalog and
// Karpenter k with the run's settings.
func recordInputs(objs *Objects, id string, k inputs.Karpenter, cat inputs.Catalog, settings map[string]string) (*inputs.Inputs, error) {
	np, err := inputs.Object(objs.NodePool.Spec, id, observe.RunLabel)
	if err != nil {
		return nil, err
	}
	nc, err := inputs.Object(objs.NodeClass.Spec, id, observe.RunLabel)
	if err != nil {
		return nil, err
	}
	in := &inputs.Inputs{NodePool: np, NodeClass: nc, Workloads: map[string]inputs.Workload{}, Catalog: cat, Karpenter: k}
	for _, other := range objs.OtherNodePools {
		spec, err := inputs.Object(other.Spec, id, observe.RunLabel)
		if err != nil {
			return nil, err
		}
		if in.OtherNodePools == nil {
			in.OtherNodePools = map[string]map[string]any{}
		}
		in.OtherNodePools[strings.TrimPrefix(other.Name, id+"-")] = spec
	}
	if len(settings) > 0 {
		in.Karpenter.Settings = maps.Clone(settings)
	}
	for _, st := range objs.ScaleIn {
		step, err := inputs.Object(st, id)
		if err != nil {
			return nil, err
		}
		in.ScaleIn = append(in.ScaleIn, step)
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
	for _, b := range objs.PDBs {
		spec := b.Spec.DeepCopy()
		spec.Selector = nil // the workload's own, by construction (SetPDB)
		rec, err := inputs.Object(spec, id, observe.RunLabel)
		if err != nil {
			return nil, err
		}
		w := in.Workloads[b.Name]
		w.PDB = rec
		in.Workloads[b.Name] = w
	}
	return in, nil
}

// facts reads what the classifier needs from the cluster at the end of a
// run, within r.factsTimeout and only while the cluster has no incident: a
// read that did not finish would leave a fact at its fallback and the
// verdict unsaid, so the run fails, saying what it waited for.
func (r *Runner) facts(ctx context.Context, a *attempt) (attribute.Facts, error) {
	hctx, cancel := context.WithTimeout(ctx, r.factsTimeout)
	defer cancel()
	f := facts.New()
	f.Health = r.healthSince(hctx, a.since)
	if f.Health != "" {
		return f, nil
	}
	fctx, cancel := context.WithTimeout(a.actx, r.factsTimeout)
	defer cancel()
	r.readFacts(fctx, a, &f)
	if ctx.Err() != nil {
		return f, fmt.Errorf("run %s interrupted: %w", a.id, ctx.Err())
	}
	if fctx.Err() == context.DeadlineExceeded {
		return f, fmt.Errorf("run %s: the end-of-run reads (the NodePool, replicas, pod metrics, Karpenter's metrics) did not finish within %s: the API server did not answer", a.id, r.factsTimeout)
	}
	if err := context.Cause(fctx); err != nil {
		// An incident stopped the reads: the environment's failure.
		return f, err
	}
	return f, nil
}

// readFacts fills f from the cluster.
func (r *Runner) readFacts(ctx context.Context, a *attempt, f *attribute.Facts) {
	objs := a.objs
	facts.ReadNodePool(ctx, r.client, f, objs.NodePool.Name, objs.NodePool)
	for _, d := range objs.Deployments {
		f.Replicas[d.Name], _, _ = facts.ReadReplicas(ctx, r.client, d.Namespace, d.Name, ptr.To(ptr.Deref(d.Spec.Replicas, 0)))
	}
	workloadFacts(f, objs, a.shapes)
	f.PodUsage = facts.PodUsage(ctx, r.client, objs.Namespace.Name)
	f.KarpenterErrors, f.KarpenterLatencyMs = usageFacts(a.used)
	// After the counters were read: a run that started before the read
	// added to them.
	f.SharedKarpenter = r.tenancy.Sharers(a.id, a.apiAt, time.Now())
}

// workloadFacts sets what the run's objects and catalog say without the
// cluster: each workload's pod template as applied, which instance types
// of the catalog and of f.NodePool hold its pod, and the catalog's
// allocatable. The benchmark of the verdict step computes them the same way.
func workloadFacts(f *attribute.Facts, objs *Objects, cat *fit.Catalog) {
	for _, d := range objs.Deployments {
		tpl := d.Spec.Template.DeepCopy()
		f.Workloads[d.Name] = tpl
		f.Fit[d.Name] = fit.Across(cat, tpl, f.NodePool, objs.OtherNodePools)
	}
	f.Allocatable = cat.Allocatable()
}

// usageFacts are Karpenter's failed API requests and their mean latency
// over the run, from its usage; nil where it is unknown.
func usageFacts(u *usage.Usage) (failed, latencyMs *float64) {
	if u == nil {
		return nil, nil
	}
	n := float64(u.Failed)
	failed = &n
	if u.RequestsTotal > 0 {
		ms := u.MeanLatencyMs
		latencyMs = &ms
	}
	return failed, latencyMs
}
