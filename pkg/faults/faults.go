// Package faults holds the fault catalog: named, parameterised injectors
// that break one layer of the provisioning stack through the mechanism that
// layer really has (a KWOK stage, an admission policy, a cloud-provider
// capacity rule, a NodePool edit, a workload revision). Each injector is
// bound to one run: Inject before the run's workloads are applied, Restore
// afterwards (also on failure); Restore is idempotent.
package faults

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/observe"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// The layers a fault breaks (pkg/layer), as the catalog names them.
const (
	L1 = layer.L1
	L2 = layer.L2
	L3 = layer.L3
)

// Label marks every object a fault creates, with the fault's name; the
// run label (observe.RunLabel) names the run.
const Label = "nodeprint.dev/fault"

// Target is the run a fault is injected into. The objects are the run's,
// not yet created when Inject is called: policy and workload faults edit
// them; infrastructure faults create objects of their own.
type Target struct {
	Client      client.Client
	Run         string
	NodePool    *karpv1.NodePool
	NodeClass   *kwokv1alpha1.KWOKNodeClass
	Deployments []*appsv1.Deployment
	// SetPDB gives a workload of Deployments a PodDisruptionBudget with
	// spec's bounds, in place of the one the scenario gave it (the run
	// names it and selects the workload's pods).
	SetPDB func(d *appsv1.Deployment, spec policyv1.PodDisruptionBudgetSpec)
	// Scenario is the scenario being run (its workloads as written).
	Scenario *scenario.Scenario
	// Largest is the largest instance of the run's catalog (cpu, memory), for
	// faults that size themselves against it.
	Largest Shape
	// Cluster gives faults that need it access to the harness's processes;
	// nil where the provider has none (such faults then refuse to inject).
	Cluster cluster.KarpenterRerouter
}

// Shape is an instance's size.
type Shape struct {
	CPU, Memory resource.Quantity
}

// Injector is one fault bound to one run.
type Injector interface {
	Definition() *Definition
	// Inject applies the fault. The run's objects are not created yet.
	Inject(ctx context.Context) error
	// Restore undoes what Inject created outside the run's own objects.
	// It is safe to call more than once, and before or without Inject.
	Restore(ctx context.Context) error
	// MinObserve is how long the faulted run must be observed after its
	// workloads are applied for the fault to show (an OOM kill needs the
	// leak to reach the limit, slow boot the delay to pass).
	MinObserve() time.Duration
}

// PodClocked is an injector whose fault runs on the pods' own clock (a CPU
// spike `after` seconds into each pod's life): its MinObserve counts from
// when the run's pods were first all Ready, not from the apply, so a
// machine that starts pods late still gives the fault its whole time (on a
// loaded machine metrics-server had not sampled the spike twice within 75
// s of the apply, and no usage signal was available).
type PodClocked interface {
	Injector
	PodClocked()
}

// ParamKind is how a parameter value is parsed.
type ParamKind string

// The parameter kinds.
const (
	Quantity ParamKind = "quantity"
	Duration ParamKind = "duration"
	Int      ParamKind = "int"
	Float    ParamKind = "float"
	// Share is a proportion from 0 (none) up to, but not including, 1
	// (all): a fault that acted on everything would stop the run itself.
	Share  ParamKind = "share"
	String ParamKind = "string"
	List   ParamKind = "list"
)

// Param documents one parameter.
type Param struct {
	Name string
	Kind ParamKind
	// Default is the value used when the scenario sets none; "" means
	// derived from the run (Help says how) or optional.
	Default string
	Help    string
}

// Definition is an entry of the fault catalog.
type Definition struct {
	Name  string
	Layer layer.Layer
	// Summary says what the fault does and through which mechanism.
	Summary string
	Params  []Param
	// Exclusive faults act on the whole cluster, so no other scenario may
	// run beside them (nodeprint run --parallel schedules them alone).
	Exclusive bool
	// KarpenterProcess faults act on Karpenter as a process of this
	// machine (its API traffic rerouted through a proxy of the harness): a
	// cluster that runs Karpenter in a pod refuses them.
	KarpenterProcess bool
	new              func(v Values, t *Target) (Injector, error)
}

// Values are a fault's parsed parameters, defaults applied.
type Values map[string]string

// Quantity returns a quantity parameter; ok is false when unset.
func (v Values) Quantity(name string) (resource.Quantity, bool) {
	s, ok := v[name]
	if !ok || s == "" {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

// Duration returns a duration parameter (validated by Validate).
func (v Values) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(v[name])
	return d
}

// Float returns a number parameter (validated by Validate).
func (v Values) Float(name string) float64 {
	f, _ := strconv.ParseFloat(v[name], 64)
	return f
}

// Int returns an integer parameter (validated by Validate).
func (v Values) Int(name string) int {
	i, _ := strconv.Atoi(v[name])
	return i
}

// List returns a comma-separated list parameter.
func (v Values) List(name string) []string {
	var out []string
	for _, s := range strings.Split(v[name], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var catalog = map[string]*Definition{}

func register(d *Definition) { catalog[d.Name] = d }

// Catalog lists every fault, by layer then name.
func Catalog() []*Definition {
	out := make([]*Definition, 0, len(catalog))
	for _, d := range catalog {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Layer != out[j].Layer {
			return out[i].Layer < out[j].Layer
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Lookup returns a fault's definition.
func Lookup(name string) (*Definition, bool) {
	d, ok := catalog[name]
	return d, ok
}

// Validate checks a scenario's fault block against the catalog; it has the
// signature scenario.Loader.ValidateFault wants.
func Validate(f *scenario.Fault, add func(field, msg string, args ...any)) {
	d, ok := catalog[f.Name]
	if !ok {
		add("spec.fault.name", "unknown fault %q; the catalog has %s", f.Name, strings.Join(names(), ", "))
		return
	}
	if _, err := values(d, f.Params, func(p, msg string) { add("spec.fault.params."+p, "%s", msg) }); err != nil {
		return
	}
	if e := f.Expect; e != nil && e.Layer != "" && e.Layer != d.Layer {
		add("spec.fault.expect.layer", "fault %s is a %s fault; a scenario expecting %s needs another fault", f.Name, d.Layer, e.Layer)
	}
}

func names() []string {
	var out []string
	for _, d := range Catalog() {
		out = append(out, d.Name)
	}
	return out
}

// values applies defaults and checks every parameter's kind.
func values(d *Definition, given scenario.Params, bad func(param, msg string)) (Values, error) {
	known := map[string]Param{}
	for _, p := range d.Params {
		known[p.Name] = p
	}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	nbad := 0
	fail := func(p, msg string) { nbad++; bad(p, msg) }
	for _, k := range keys {
		if _, ok := known[k]; !ok {
			var want []string
			for _, p := range d.Params {
				want = append(want, p.Name)
			}
			fail(k, fmt.Sprintf("fault %s has no parameter %q (it has: %s)", d.Name, k, strings.Join(want, ", ")))
		}
	}
	out := Values{}
	for _, p := range d.Params {
		s, ok := given[p.Name]
		if !ok {
			s = p.Default
		}
		out[p.Name] = s
		if s == "" {
			continue
		}
		switch p.Kind {
		case Quantity:
			q, err := resource.ParseQuantity(s)
			if err != nil || q.Sign() <= 0 {
				fail(p.Name, fmt.Sprintf("%q is not a positive quantity (write 500m, 2, 1Gi, 20Mi)", s))
			}
		case Duration:
			v, err := time.ParseDuration(s)
			if err != nil || v < 0 || v > time.Hour {
				fail(p.Name, fmt.Sprintf("%q is not a duration between 0s and 1h such as \"30s\"", s))
			}
		case Int:
			if v, err := strconv.Atoi(s); err != nil || v < 0 {
				fail(p.Name, fmt.Sprintf("%q is not a non-negative integer", s))
			}
		case Float:
			if v, err := strconv.ParseFloat(s, 64); err != nil || v <= 0 {
				fail(p.Name, fmt.Sprintf("%q is not a positive number", s))
			}
		case Share:
			if v, err := strconv.ParseFloat(s, 64); err != nil || v < 0 || v >= 1 {
				fail(p.Name, fmt.Sprintf("%q is not a share from 0 up to, but not including, 1 (such as 0.5)", s))
			}
		}
	}
	if nbad > 0 {
		return nil, fmt.Errorf("fault %s: %d bad parameter(s)", d.Name, nbad)
	}
	return out, nil
}

// New binds the scenario's fault to a run.
func New(f *scenario.Fault, t *Target) (Injector, error) {
	d, ok := catalog[f.Name]
	if !ok {
		return nil, fmt.Errorf("unknown fault %q", f.Name)
	}
	var msgs []string
	v, err := values(d, f.Params, func(p, msg string) { msgs = append(msgs, "params."+p+": "+msg) })
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.Join(msgs, "; "))
	}
	return d.new(v, t)
}

// needScaleIn refuses a scenario without scaleIn for a fault whose effect
// shows only when Karpenter removes nodes: what says so ("… only shows"),
// steps names the scaleIn steps that would show it.
func needScaleIn(t *Target, what, steps string) error {
	if t.Scenario == nil || t.Scenario.Spec.ScaleIn == nil {
		return fmt.Errorf("the scenario has no scaleIn: %s when Karpenter removes nodes (add scaleIn steps that %s)", what, steps)
	}
	return nil
}

// base carries what every injector has.
type base struct {
	def *Definition
	v   Values
	t   *Target
}

func (b *base) Definition() *Definition { return b.def }

func (b *base) labels() map[string]string {
	return map[string]string{Label: b.def.Name, observe.RunLabel: b.t.Run}
}

// Leftovers lists what faults created that still exists: KWOK stages,
// admission policies and bindings labelled with the fault label, the
// capacity ConfigMap and Nodes that carry the node-finalizer fault's
// finalizer. After every restore it must be empty.
func Leftovers(ctx context.Context, c client.Client) ([]string, error) {
	var out []string
	has := client.HasLabels{Label}
	lists := []struct {
		kind string
		list client.ObjectList
	}{
		{"ValidatingAdmissionPolicy", &admissionv1.ValidatingAdmissionPolicyList{}},
		{"ValidatingAdmissionPolicyBinding", &admissionv1.ValidatingAdmissionPolicyBindingList{}},
	}
	stages := &unstructured.UnstructuredList{}
	stages.SetAPIVersion("kwok.x-k8s.io/v1alpha1")
	stages.SetKind("StageList")
	lists = append(lists, struct {
		kind string
		list client.ObjectList
	}{"Stage", stages})
	for _, l := range lists {
		if err := c.List(ctx, l.list, has); err != nil {
			return nil, fmt.Errorf("failed to list %ss: %w", l.kind, err)
		}
		items, err := meta.ExtractList(l.list)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				out = append(out, l.kind+"/"+o.GetName())
			}
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("failed to list Nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if slices.Contains(n.Finalizers, NodeFinalizer) {
			out = append(out, "Node/"+n.Name+" (finalizer "+NodeFinalizer+")")
		}
	}
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: KarpenterNS, Name: CapacityConfigMap}, cm)
	switch {
	case err == nil:
		out = append(out, "ConfigMap/"+KarpenterNS+"/"+CapacityConfigMap)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("failed to read ConfigMap %s/%s: %w", KarpenterNS, CapacityConfigMap, err)
	}
	return out, nil
}
