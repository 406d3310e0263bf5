package faults

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Application faults change the workload as a bad revision would: its pod
// template (usage annotations, requests, image, a fault label that a KWOK
// stage of the fault's own acts on). They are L3 by construction: nothing
// below the pod spec changes.

func init() {
	register(&Definition{
		Name: "memory-leak", Layer: L3,
		Summary: "The workload's memory grows from its usage at a fixed rate from each container start (KWOK usage CEL); " +
			"when it reaches the container's memory limit a KWOK stage of the fault's own marks the container OOMKilled " +
			"and restarts it, and the leak starts again from the restart. With an HPA on memory in the scenario, replicas and nodes grow.",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the leaking workload (default: the first)"},
			{Name: "rate", Kind: Quantity, Default: "20Mi", Help: "memory added per second"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newMemoryLeak(v, t) },
	})
	register(&Definition{
		Name: "cpu-spike", Layer: L3,
		Summary: "The workload's CPU usage jumps to a multiple of its requests for a period (KWOK usage CEL); " +
			"with an HPA on CPU in the scenario, replicas and nodes grow.",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the spiking workload (default: the first)"},
			{Name: "factor", Kind: Float, Default: "4", Help: "usage as a multiple of the CPU request"},
			{Name: "after", Kind: Duration, Default: "0s", Help: "pod age when the spike starts"},
			{Name: "for", Kind: Duration, Default: "10m", Help: "how long the spike lasts"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newCPUSpike(v, t) },
	})
	register(&Definition{
		Name: "oversized-requests", Layer: L3,
		Summary: "A workload revision asks for more CPU (or memory) than the largest instance of the catalog has.",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the workload (default: the first)"},
			{Name: "resource", Kind: String, Default: "cpu", Help: "cpu or memory"},
			{Name: "factor", Kind: Float, Default: "2", Help: "request as a multiple of the largest instance's capacity"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newOversized(v, t) },
	})
	register(&Definition{
		Name: "crash-loop", Layer: L3,
		Summary: "The workload's container exits with an error soon after it starts, again and again " +
			"(a KWOK pod stage of the fault's own: lastState terminated Error, restartCount up, CrashLoopBackOff).",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the crashing workload (default: the first)"},
			{Name: "interval", Kind: Duration, Default: "5s", Help: "time between crashes"},
		},
		new: func(v Values, t *Target) (Injector, error) {
			return newStagedWorkload("crash-loop", v, t, "crash-loop", "interval")
		},
	})
	register(&Definition{
		Name: "do-not-disrupt", Layer: L3,
		Summary: "A workload revision annotates its pods karpenter.sh/do-not-disrupt: Karpenter may not voluntarily disrupt " +
			"the nodes they run on, so a scale-in's drift, consolidation or expiry of those nodes waits (needs a scenario with scaleIn).",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the workload (default: the first)"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newDoNotDisrupt(v, t) },
	})
	register(&Definition{
		Name: "pdb-blocks-eviction", Layer: L3,
		Summary: "A workload revision ships a PodDisruptionBudget that allows no eviction (maxUnavailable 0, in place of the scenario's): " +
			"Karpenter may not voluntarily disrupt the nodes its pods run on, so a scale-in's drift, consolidation or expiry of those nodes waits " +
			"(needs a scenario with scaleIn).",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the workload (default: the first)"},
		},
		new: func(v Values, t *Target) (Injector, error) { return newBlockingPDB(v, t) },
	})
	register(&Definition{
		Name: "image-pull-failure", Layer: L3,
		Summary: "A workload revision names an image that cannot be pulled: containers stay waiting in " +
			"ErrImagePull/ImagePullBackOff (a KWOK pod stage of the fault's own, selecting the pods that name that image).",
		Params: []Param{
			{Name: "workload", Kind: String, Help: "the workload (default: the first)"},
			{Name: "image", Kind: String, Default: "registry.invalid/nodeprint/missing:v2", Help: "the unpullable image"},
		},
		new: func(v Values, t *Target) (Injector, error) {
			return newStagedWorkload("image-pull-failure", v, t, "image-pull", "")
		},
	})
}

// deployment finds the fault's workload.
func deployment(v Values, t *Target) (*appsv1.Deployment, error) {
	if len(t.Deployments) == 0 {
		return nil, fmt.Errorf("the scenario has no workload")
	}
	name := v["workload"]
	if name == "" {
		return t.Deployments[0], nil
	}
	for _, d := range t.Deployments {
		if d.Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("params.workload: the scenario has no workload %q", name)
}

// markPods labels the workload's pods with the fault, for the fault's stage.
func (b *base) markPods(d *appsv1.Deployment) {
	tpl := &d.Spec.Template
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	tpl.Labels[Label] = b.def.Name
	if tpl.Annotations == nil {
		tpl.Annotations = map[string]string{}
	}
}

type memoryLeak struct {
	base
	stages
	d      *appsv1.Deployment
	period time.Duration
}

func newMemoryLeak(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("memory-leak")
	d, err := deployment(v, t)
	if err != nil {
		return nil, err
	}
	c := d.Spec.Template.Spec.Containers[0]
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return nil, fmt.Errorf("workload %s has no memory limit: an OOM kill needs one (set limits.memory in the scenario)", d.Name)
	}
	used := resource.MustParse("1Mi")
	if s, ok := d.Spec.Template.Annotations["kwok.x-k8s.io/usage-memory"]; ok {
		used = resource.MustParse(s)
	}
	rate, _ := v.Quantity("rate")
	headroom := limit.Value() - used.Value()
	if headroom <= 0 {
		return nil, fmt.Errorf("workload %s already uses %s of its %s limit: there is nothing for a leak to fill", d.Name, used.String(), limit.String())
	}
	secs := int(math.Ceil(float64(headroom) / float64(rate.Value())))
	if secs < 5 {
		return nil, fmt.Errorf("params.rate: %s/s fills the %s of headroom in %ds; use a rate that takes at least 5s", rate.String(), resource.NewQuantity(headroom, resource.BinarySI), secs)
	}
	m := &memoryLeak{base: base{def, v, t}, d: d, period: time.Duration(secs) * time.Second}
	m.stages = stages{b: &m.base}
	return m, nil
}

func (m *memoryLeak) Inject(ctx context.Context) error {
	m.markPods(m.d)
	a := m.d.Spec.Template.Annotations
	rate, _ := m.v.Quantity("rate")
	a["nodeprint.dev/leak-memory-per-second"] = rate.String()
	a["nodeprint.dev/leak-period-seconds"] = strconv.Itoa(int(m.period.Seconds()))
	st, err := newStage("oom", stageParams{Run: m.t.Run, Workload: m.d.Name, Delay: &m.period})
	if err != nil {
		return err
	}
	return m.create(ctx, st)
}

// MinObserve covers two OOM kills.
func (m *memoryLeak) MinObserve() time.Duration { return 2*m.period + 10*time.Second }

type cpuSpike struct {
	base
	d *appsv1.Deployment
}

func newCPUSpike(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("cpu-spike")
	d, err := deployment(v, t)
	if err != nil {
		return nil, err
	}
	if _, ok := d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; !ok {
		return nil, fmt.Errorf("workload %s has no CPU request to multiply", d.Name)
	}
	return &cpuSpike{base: base{def, v, t}, d: d}, nil
}

func (c *cpuSpike) Inject(context.Context) error {
	c.markPods(c.d)
	req := c.d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	spike := resource.NewMilliQuantity(int64(float64(req.MilliValue())*c.v.Float("factor")), resource.DecimalSI)
	a := c.d.Spec.Template.Annotations
	a["nodeprint.dev/spike-cpu"] = spike.String()
	a["nodeprint.dev/spike-after-seconds"] = strconv.Itoa(int(c.v.Duration("after").Seconds()))
	a["nodeprint.dev/spike-for-seconds"] = strconv.Itoa(int(c.v.Duration("for").Seconds()))
	return nil
}

func (c *cpuSpike) Restore(context.Context) error { return nil }

// MinObserve lets metrics-server take two samples of the spike (its
// resolution is 15 s, and KWOK reports CPU as a counter), counted from
// the pods' start (PodClocked).
func (c *cpuSpike) MinObserve() time.Duration { return c.v.Duration("after") + 75*time.Second }

// PodClocked: the spike starts `after` seconds into each pod's life.
func (c *cpuSpike) PodClocked() {}

type oversized struct {
	base
	d *appsv1.Deployment
}

func newOversized(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("oversized-requests")
	d, err := deployment(v, t)
	if err != nil {
		return nil, err
	}
	if r := v["resource"]; r != "cpu" && r != "memory" {
		return nil, fmt.Errorf("params.resource: want cpu or memory, got %q", r)
	}
	if t.Largest.CPU.IsZero() {
		return nil, fmt.Errorf("the run's catalog has no instance sizes")
	}
	return &oversized{base: base{def, v, t}, d: d}, nil
}

func (o *oversized) Inject(context.Context) error {
	o.markPods(o.d)
	c := &o.d.Spec.Template.Spec.Containers[0]
	f := o.v.Float("factor")
	switch o.v["resource"] {
	case "cpu":
		q := resource.NewMilliQuantity(int64(float64(o.t.Largest.CPU.MilliValue())*f), resource.DecimalSI)
		c.Resources.Requests[corev1.ResourceCPU] = *q
		if l, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && l.Cmp(*q) < 0 {
			c.Resources.Limits[corev1.ResourceCPU] = *q
		}
	case "memory":
		q := resource.NewQuantity(int64(float64(o.t.Largest.Memory.Value())*f), resource.BinarySI)
		c.Resources.Requests[corev1.ResourceMemory] = *q
		if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && l.Cmp(*q) < 0 {
			c.Resources.Limits[corev1.ResourceMemory] = *q
		}
	}
	return nil
}

func (o *oversized) Restore(context.Context) error { return nil }
func (o *oversized) MinObserve() time.Duration     { return 15 * time.Second }

type doNotDisrupt struct {
	base
	d *appsv1.Deployment
}

func newDoNotDisrupt(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("do-not-disrupt")
	if err := needScaleIn(t, "pods that may not be disrupted only show", "drift, consolidate or expire them"); err != nil {
		return nil, err
	}
	d, err := deployment(v, t)
	if err != nil {
		return nil, err
	}
	return &doNotDisrupt{base: base{def, v, t}, d: d}, nil
}

func (n *doNotDisrupt) Inject(context.Context) error {
	n.markPods(n.d)
	// Karpenter's pod-level opt-out of voluntary disruption.
	n.d.Spec.Template.Annotations[karpv1.DoNotDisruptAnnotationKey] = "true"
	return nil
}

func (n *doNotDisrupt) Restore(context.Context) error { return nil }

// MinObserve: the hold shows in the scale-in, which waits for its own
// quiet period after the scale-out.
func (n *doNotDisrupt) MinObserve() time.Duration { return 15 * time.Second }

type blockingPDB struct {
	base
	d *appsv1.Deployment
}

func newBlockingPDB(v Values, t *Target) (Injector, error) {
	def, _ := Lookup("pdb-blocks-eviction")
	if err := needScaleIn(t, "a budget that allows no eviction only shows", "drift, consolidate or expire the nodes"); err != nil {
		return nil, err
	}
	if t.SetPDB == nil {
		return nil, fmt.Errorf("this run cannot give a workload a PodDisruptionBudget")
	}
	d, err := deployment(v, t)
	if err != nil {
		return nil, err
	}
	return &blockingPDB{base: base{def, v, t}, d: d}, nil
}

func (b *blockingPDB) Inject(context.Context) error {
	b.markPods(b.d)
	zero := intstr.FromInt32(0)
	b.t.SetPDB(b.d, policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero})
	return nil
}

// Restore: the budget is one of the run's objects, deleted with them.
func (b *blockingPDB) Restore(context.Context) error { return nil }

// MinObserve: the hold shows in the scale-in, as do-not-disrupt's.
func (b *blockingPDB) MinObserve() time.Duration { return 15 * time.Second }

// stagedWorkload marks a workload's pods for a pod stage of the fault's own.
type stagedWorkload struct {
	base
	stages
	d *appsv1.Deployment
	// stage is the file in stages/; delay the parameter that sets its
	// delay ("": the file's).
	stage, delay string
}

func newStagedWorkload(name string, v Values, t *Target, stage, delay string) (Injector, error) {
	d, err := deployment(v, t)
	if err != nil {
		return nil, err
	}
	def, _ := Lookup(name)
	s := &stagedWorkload{base: base{def, v, t}, d: d, stage: stage, delay: delay}
	s.stages = stages{b: &s.base}
	return s, nil
}

func (s *stagedWorkload) Inject(ctx context.Context) error {
	s.markPods(s.d)
	if img := s.v["image"]; img != "" {
		s.d.Spec.Template.Spec.Containers[0].Image = img
	}
	p := stageParams{Run: s.t.Run, Workload: s.d.Name, Image: s.v["image"]}
	if s.delay != "" {
		d := s.v.Duration(s.delay)
		p.Delay = &d
	}
	st, err := newStage(s.stage, p)
	if err != nil {
		return err
	}
	return s.create(ctx, st)
}

func (s *stagedWorkload) MinObserve() time.Duration {
	if d := s.v.Duration("interval"); d > 0 {
		return 3*d + 10*time.Second
	}
	return 20 * time.Second
}
