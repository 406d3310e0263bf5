package faults

import (
	"context"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Orchestration faults edit the run's NodePool, as a bad policy change would.

func init() {
	register(&Definition{
		Name: "nodepool-mismatch", Layer: L2,
		Summary: "The NodePool gains a requirement that excludes every instance the pods fit on, although the catalog has such instances.",
		Params: []Param{
			{Name: "key", Kind: String, Default: kwokv1alpha1.InstanceCPULabelKey, Help: "requirement key"},
			{Name: "operator", Kind: String, Default: "Lt", Help: "In, NotIn, Lt or Gt"},
			{Name: "values", Kind: List, Help: "values (default for instance-cpu Lt: the largest pod's CPU request, rounded up)"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newMismatch(v, t) },
	})
	register(&Definition{
		Name: "nodepool-limits", Layer: L2,
		Summary: "The NodePool's limits are below what the workload needs: Karpenter stops launching at the limit and the rest of the pods stay Pending.",
		Params: []Param{
			{Name: "cpu", Kind: Quantity, Help: "spec.limits.cpu (default: a quarter of the CPU the workloads request, at least 1)"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newLimits(v, t) },
	})
	register(&Definition{
		Name: "missing-nodeclass", Layer: L2,
		Summary: "The NodePool points at a node class that does not exist (the KWOK provider reports it as insufficient capacity).",
		Params: []Param{
			{Name: "name", Kind: String, Help: "the missing KWOKNodeClass (default: <run>-missing)"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newPolicy(v, t, "missing-nodeclass") },
	})
	register(&Definition{
		Name: "consolidation-churn", Layer: L2,
		Summary: "A disruption policy that replaces nodes in a loop: nodes expire shortly after they start (template expireAfter), " +
			"Karpenter drains and replaces them, and the replacements expire again.",
		Params: []Param{
			{Name: "expireAfter", Kind: Duration, Default: "20s", Help: "node lifetime"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newPolicy(v, t, "consolidation-churn") },
	})
}

type policy struct {
	base
	edit func()
	min  time.Duration
}

func (p *policy) Inject(context.Context) error  { p.edit(); return nil }
func (p *policy) Restore(context.Context) error { return nil }
func (p *policy) MinObserve() time.Duration     { return p.min }

func newPolicy(v Values, t *Target, name string) (Injector, error) {
	def, _ := Lookup(name)
	p := &policy{base: base{def, v, t}, min: 15 * time.Second}
	np := &t.NodePool.Spec
	switch name {
	case "missing-nodeclass":
		n := v["name"]
		if n == "" {
			n = t.Run + "-missing"
		}
		p.edit = func() { np.Template.Spec.NodeClassRef.Name = n }
	case "consolidation-churn":
		d := v.Duration("expireAfter")
		if d < 5*time.Second {
			return nil, fmt.Errorf("params.expireAfter: %s is too short for nodes to start; use at least 5s", d)
		}
		p.min = 3*d + 15*time.Second
		p.edit = func() {
			np.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration(d.String())
			np.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
		}
	}
	return p, nil
}

func newMismatch(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("nodepool-mismatch")
	op := corev1.NodeSelectorOperator(v["operator"])
	switch op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpLt, corev1.NodeSelectorOpGt:
	default:
		return nil, fmt.Errorf("params.operator: want In, NotIn, Lt or Gt, got %q", op)
	}
	values := v.List("values")
	if len(values) == 0 {
		if v["key"] != kwokv1alpha1.InstanceCPULabelKey || op != corev1.NodeSelectorOpLt {
			return nil, fmt.Errorf("params.values: set the values for %s %s", v["key"], op)
		}
		largest := int64(0)
		for _, d := range t.Deployments {
			if q, ok := d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; ok {
				largest = max(largest, int64(math.Ceil(float64(q.MilliValue())/1000)))
			}
		}
		values = []string{fmt.Sprint(max(largest, 1))}
	}
	p := &policy{base: base{def, v, t}, min: 15 * time.Second}
	p.edit = func() {
		reqs := t.NodePool.Spec.Template.Spec.Requirements[:0]
		for _, r := range t.NodePool.Spec.Template.Spec.Requirements {
			if r.Key != v["key"] {
				reqs = append(reqs, r)
			}
		}
		t.NodePool.Spec.Template.Spec.Requirements = append(reqs, karpv1.NodeSelectorRequirementWithMinValues{
			Key: v["key"], Operator: op, Values: values,
		})
	}
	return p, nil
}

func newLimits(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("nodepool-limits")
	limit, ok := v.Quantity("cpu")
	if !ok {
		total := int64(0)
		for _, d := range t.Deployments {
			if q, ok := d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; ok && d.Spec.Replicas != nil {
				total += q.MilliValue() * int64(*d.Spec.Replicas)
			}
		}
		limit = *resource.NewQuantity(max(total/4000, 1), resource.DecimalSI)
	}
	p := &policy{base: base{def, v, t}, min: 15 * time.Second}
	p.edit = func() {
		t.NodePool.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: limit}
	}
	return p, nil
}
