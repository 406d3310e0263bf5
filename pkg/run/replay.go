package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// ErrReplay wraps why recorded inputs cannot be replayed.
var ErrReplay = errors.New("cannot replay the recorded inputs")

// Replay is an arm of a paired verification that applies recorded inputs
// (a baseline's) instead of the scenario's: the same NodePools, node
// class, workloads and Karpenter settings, with the run's own names. What
// a run does besides (its catalog, how long it observes and settles) is
// still the scenario's; the catalog must be the recorded one.
type Replay struct {
	r  *Runner
	in *inputs.Inputs
}

// Replaying is an arm that runs in's inputs on this runner's cluster and
// Karpenter build.
func (r *Runner) Replaying(in *inputs.Inputs) *Replay { return &Replay{r: r, in: in} }

// Run runs plain scenario s once with the recorded inputs applied in
// place of its own. It refuses a scenario with a fault (a fault edits what
// the scenario builds) and a catalog other than the recorded one.
func (p *Replay) Run(ctx context.Context, s *scenario.Scenario, opts ...FaultOption) (*Result, error) {
	if s.Spec.Fault != nil {
		return nil, fmt.Errorf("%w: scenario %s has a fault; only a plain scenario's inputs are replayed", ErrReplay, s.Metadata.Name)
	}
	return p.r.run(ctx, s, hooksOf(opts), p.in)
}

// Karpenter is the build the replayed runs record: the runner's.
func (p *Replay) Karpenter() inputs.Karpenter { return p.r.karpenter }

// ScenarioInputs are the inputs a run of s with Karpenter k records,
// computed without a cluster: what a verification compares with a
// baseline's before it decides how to judge the timings.
func ScenarioInputs(s *scenario.Scenario, k inputs.Karpenter) (*inputs.Inputs, error) {
	cat, err := catalog.Load(s.CatalogPath)
	if err != nil {
		return nil, err
	}
	id := NewID(s)
	objs, err := Build(s, id)
	if err != nil {
		return nil, err
	}
	return recordInputs(objs, id, k, inputs.Catalog{Name: s.Spec.Catalog, Digest: cat.Digest}, s.Spec.Karpenter.Env())
}

// CheckReplayable says why in cannot be replayed with scenario s (nil
// when it can): the recorded catalog must be the scenario's, by name and
// digest, since only the scenario's catalog file is here; and the
// recorded objects must decode.
func CheckReplayable(in *inputs.Inputs, s *scenario.Scenario) error {
	cat, err := catalog.Load(s.CatalogPath)
	if err != nil {
		return err
	}
	if in.Catalog.Name != s.Spec.Catalog || in.Catalog.Digest != cat.Digest {
		return fmt.Errorf("%w: they name catalog %s (sha256 %s) and this scenario's is %s (sha256 %s); the recorded catalog is not here to load", ErrReplay,
			in.Catalog.Name, short(in.Catalog.Digest), s.Spec.Catalog, short(cat.Digest))
	}
	_, err = BuildFrom(in, s, NewID(s))
	return err
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// BuildFrom materialises recorded inputs for the run id, as Build does a
// scenario: the run's names in place of the recorded RUN, the run label on
// the NodePools' nodes and on every pod and its node selector. Workloads
// are created in s's order where s names them, then by name (the first
// one's creation starts the run's clock).
func BuildFrom(in *inputs.Inputs, s *scenario.Scenario, id string) (*Objects, error) {
	runLabels := map[string]string{observe.RunLabel: id}
	o := &Objects{
		Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: runLabels}},
		NodeClass: &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: runLabels}},
	}
	if err := decode(in.NodeClass, id, &o.NodeClass.Spec); err != nil {
		return nil, fmt.Errorf("%w: nodeClass: %w", ErrReplay, err)
	}
	var np karpv1.NodePool
	if err := decode(in.NodePool, id, &np.Spec); err != nil {
		return nil, fmt.Errorf("%w: nodePool: %w", ErrReplay, err)
	}
	o.NodePool = runNodePool(&np, id, id)
	for _, name := range slices.Sorted(maps.Keys(in.OtherNodePools)) {
		var other karpv1.NodePool
		if err := decode(in.OtherNodePools[name], id, &other.Spec); err != nil {
			return nil, fmt.Errorf("%w: otherNodePools.%s: %w", ErrReplay, name, err)
		}
		o.OtherNodePools = append(o.OtherNodePools, runNodePool(&other, id+"-"+name, id))
	}
	for _, name := range workloadOrder(in, s) {
		w := in.Workloads[name]
		d, h, err := replayWorkload(name, w, id)
		if err != nil {
			return nil, fmt.Errorf("%w: workloads.%s: %w", ErrReplay, name, err)
		}
		o.Deployments = append(o.Deployments, d)
		if h != nil {
			o.HPAs = append(o.HPAs, h)
		}
		if w.PDB != nil {
			var spec policyv1.PodDisruptionBudgetSpec
			if err := decode(w.PDB, id, &spec); err != nil {
				return nil, fmt.Errorf("%w: workloads.%s.pdb: %w", ErrReplay, name, err)
			}
			o.SetPDB(d, spec)
		}
	}
	for i, st := range in.ScaleIn {
		var step scenario.Step
		if err := decode(st, id, &step); err != nil {
			return nil, fmt.Errorf("%w: scaleIn.steps[%d]: %w", ErrReplay, i, err)
		}
		o.ScaleIn = append(o.ScaleIn, step)
	}
	return o, nil
}

// workloadOrder is the recorded workloads in s's order, then the others
// by name.
func workloadOrder(in *inputs.Inputs, s *scenario.Scenario) []string {
	var out []string
	for _, w := range s.Spec.Workloads {
		if _, ok := in.Workloads[w.Name]; ok {
			out = append(out, w.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.Workloads)) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// replayWorkload is a recorded workload as the run id applies it, as
// buildDeployment and buildHPA make a scenario's: the run label, which the
// record dropped, goes back on the pods, their node selector, and the
// spread constraints that select the workload's pods by its label.
func replayWorkload(name string, w inputs.Workload, id string) (*appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler, error) {
	runLabels := map[string]string{observe.RunLabel: id}
	var tpl corev1.PodTemplateSpec
	if err := decode(w.Template, id, &tpl); err != nil {
		return nil, nil, err
	}
	tpl.Labels = merge(tpl.Labels, runLabels)
	tpl.Spec.NodeSelector = merge(tpl.Spec.NodeSelector, runLabels)
	for i := range tpl.Spec.TopologySpreadConstraints {
		if sel := tpl.Spec.TopologySpreadConstraints[i].LabelSelector; sel != nil && sel.MatchLabels[observe.WorkloadLabel] == name {
			sel.MatchLabels = merge(sel.MatchLabels, runLabels)
		}
	}
	replicas := w.Replicas
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: id, Labels: runLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{observe.WorkloadLabel: name}},
			Template: tpl,
		},
	}
	if w.HPA == nil {
		return d, nil, nil
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: id}}
	if err := decode(w.HPA, id, &h.Spec); err != nil {
		return nil, nil, fmt.Errorf("hpa: %w", err)
	}
	return d, h, nil
}

// decode turns a recorded object back into its type, strictly, with the
// recorded RUN (the run's name) and RUN-<name> (a NodePool of the run)
// replaced by id.
func decode(obj map[string]any, id string, into any) error {
	b, err := json.Marshal(unRUN(obj, id))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// unRUN copies v with the run's placeholder replaced in every string.
func unRUN(v any, id string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = unRUN(e, id)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = unRUN(e, id)
		}
		return out
	case string:
		if x == "RUN" {
			return id
		}
		if rest, ok := strings.CutPrefix(x, "RUN-"); ok {
			return id + "-" + rest
		}
	}
	return v
}
