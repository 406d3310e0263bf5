package observe

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// RunLabel marks everything a run creates, and the nodes of its NodePool.
const RunLabel = "nodeprint.dev/run"

// WorkloadLabel names the workload a pod belongs to.
const WorkloadLabel = "nodeprint.dev/workload"

// Target says what to observe.
type Target struct {
	Run       string
	Namespace string
	NodePool  string
	// ExpectedPods is how many pods the run should end with.
	ExpectedPods func() int
}

// Observer records one run from informers.
type Observer struct {
	target  Target
	stop    chan struct{}
	stopped sync.Once

	mu sync.Mutex
	ob Observation
	// lastChange and lastProgress are local times: any recorded transition,
	// and the last provisioning transition (a NodeClaim or a pod scheduled).
	lastChange, lastProgress time.Time
}

var nodeClaimGVR = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// Start starts the informers and waits (bounded by ctx) for their caches.
func Start(ctx context.Context, cfg *rest.Config, t Target) (*Observer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create a dynamic client: %w", err)
	}
	now := time.Now()
	o := &Observer{target: t, stop: make(chan struct{}), lastChange: now, lastProgress: now, ob: Observation{
		Run: t.Run, Pods: map[string]*PodRecord{}, NodeClaims: map[string]*NodeClaimRecord{}, Nodes: map[string]*NodeRecord{},
	}}
	inNS := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(t.Namespace))
	runNodes := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = karpv1.NodePoolLabelKey + "=" + t.NodePool
	}))
	// Events about cluster-scoped objects (NodeClaims, Nodes) land in "default".
	clusterEvents := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(metav1.NamespaceDefault))
	claims := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "", func(lo *metav1.ListOptions) {
		lo.LabelSelector = karpv1.NodePoolLabelKey + "=" + t.NodePool
	})

	handlers := []struct {
		inf cache.SharedIndexInformer
		fn  func(obj any, deleted bool)
	}{
		{inNS.Core().V1().Pods().Informer(), o.onPod},
		{inNS.Core().V1().Events().Informer(), o.onEvent},
		{clusterEvents.Core().V1().Events().Informer(), o.onEvent},
		{runNodes.Core().V1().Nodes().Informer(), o.onNode},
		{claims.ForResource(nodeClaimGVR).Informer(), o.onNodeClaim},
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		fn := h.fn
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { fn(obj, false) },
			UpdateFunc: func(_, obj any) { fn(obj, false) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				fn(obj, true)
			},
		}); err != nil {
			return nil, fmt.Errorf("failed to register an event handler: %w", err)
		}
		synced = append(synced, h.inf.HasSynced)
	}
	inNS.Start(o.stop)
	runNodes.Start(o.stop)
	clusterEvents.Start(o.stop)
	claims.Start(o.stop)
	if !cache.WaitForCacheSync(ctxDone(ctx, o.stop), synced...) {
		o.Stop()
		return nil, fmt.Errorf("failed to sync the observer's informers for run %s: %w", t.Run, ctx.Err())
	}
	return o, nil
}

func ctxDone(ctx context.Context, stop chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		close(ch)
	}()
	return ch
}

// Stop stops the informers.
func (o *Observer) Stop() { o.stopped.Do(func() { close(o.stop) }) }

// MarkStart records when the workloads were applied.
func (o *Observer) MarkStart(t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ob.Start = t
}

func (o *Observer) changed(progress bool) {
	now := time.Now()
	o.lastChange = now
	if progress {
		o.lastProgress = now
	}
}

func setTime(dst *time.Time, t metav1.Time) bool {
	if t.IsZero() || !dst.IsZero() {
		return false
	}
	*dst = t.Time
	return true
}

// markDeleted records, once, when an object was deleted: the server's
// deletion timestamp, or now when the informer only saw it disappear.
func markDeleted(dst *time.Time, deleted bool, ts *metav1.Time) bool {
	if !dst.IsZero() || (!deleted && ts == nil) {
		return false
	}
	*dst = time.Now()
	if ts != nil {
		*dst = ts.Time
	}
	return true
}

func (o *Observer) onPod(obj any, deleted bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.ob.Pods[p.Name]
	if r == nil {
		r = &PodRecord{Name: p.Name, Workload: WorkloadOf(p), Created: p.CreationTimestamp.Time}
		o.ob.Pods[p.Name] = r
		o.changed(false)
	}
	ch, progress := false, false
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			if setTime(&r.Scheduled, c.LastTransitionTime) {
				ch, progress = true, true
			}
		case corev1.PodReady:
			if setTime(&r.Ready, c.LastTransitionTime) {
				ch = true
			}
		}
	}
	if r.Node != p.Spec.NodeName {
		r.Node, ch = p.Spec.NodeName, true
	}
	if string(p.Status.Phase) != r.Phase {
		r.Phase, ch = string(p.Status.Phase), true
	}
	restarts, lastTerm, waiting := 0, "", ""
	for _, cs := range p.Status.ContainerStatuses {
		restarts += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			lastTerm = t.Reason
		}
		if w := cs.State.Waiting; w != nil {
			waiting = w.Reason
		}
	}
	if restarts != r.Restarts || lastTerm != r.LastTermination || waiting != r.Waiting {
		r.Restarts, r.LastTermination, r.Waiting, ch = restarts, lastTerm, waiting, true
	}
	if markDeleted(&r.Deleted, deleted, p.DeletionTimestamp) {
		ch = true
	}
	if ch {
		o.changed(progress)
	}
}

// WorkloadOf names the workload a pod belongs to: nodeprint's label on the
// pods it creates, else the controller that owns the pod (a ReplicaSet
// named for its Deployment: the template hash is taken off), else the pod.
func WorkloadOf(p *corev1.Pod) string {
	if w := p.Labels[WorkloadLabel]; w != "" {
		return w
	}
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if h := p.Labels["pod-template-hash"]; o.Kind == "ReplicaSet" && h != "" {
			return strings.TrimSuffix(o.Name, "-"+h)
		}
		return o.Name
	}
	return p.Name
}

func (o *Observer) onNode(obj any, deleted bool) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.ob.Nodes[n.Name]
	if r == nil {
		r = &NodeRecord{Name: n.Name, Created: n.CreationTimestamp.Time, InstanceType: n.Labels[corev1.LabelInstanceTypeStable],
			CapacityType: n.Labels[karpv1.CapacityTypeLabelKey], Zone: n.Labels[corev1.LabelTopologyZone]}
		o.ob.Nodes[n.Name] = r
		o.changed(true)
	}
	r.Labels = n.Labels
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			if setTime(&r.Ready, c.LastTransitionTime) {
				o.changed(true)
			}
			if r.NotReady {
				r.NotReady = false
				o.changed(false)
			}
		} else if !r.Ready.IsZero() && !r.NotReady {
			r.NotReady = true
			o.changed(false)
		}
	}
	if markDeleted(&r.Deleted, deleted, n.DeletionTimestamp) {
		o.changed(false)
	}
}

func (o *Observer) onNodeClaim(obj any, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	nc := &karpv1.NodeClaim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.ob.NodeClaims[nc.Name]
	if r == nil {
		r = &NodeClaimRecord{Name: nc.Name, Created: nc.CreationTimestamp.Time}
		o.ob.NodeClaims[nc.Name] = r
		o.changed(true)
	}
	ch := false
	for _, c := range nc.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		var dst *time.Time
		switch c.Type {
		case karpv1.ConditionTypeLaunched:
			dst = &r.Launched
		case karpv1.ConditionTypeRegistered:
			dst = &r.Registered
		case karpv1.ConditionTypeInitialized:
			dst = &r.Initialized
		case "Ready":
			dst = &r.Ready
		}
		if dst != nil && setTime(dst, c.LastTransitionTime) {
			ch = true
		}
	}
	it, ct, zone := nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[karpv1.CapacityTypeLabelKey], nc.Labels[corev1.LabelTopologyZone]
	if it != r.InstanceType || ct != r.CapacityType || zone != r.Zone || nc.Status.NodeName != r.Node {
		r.InstanceType, r.CapacityType, r.Zone, r.Node, ch = it, ct, zone, nc.Status.NodeName, true
	}
	if markDeleted(&r.Deleted, deleted, nc.DeletionTimestamp) {
		ch = true
	}
	if ch {
		o.changed(true)
	}
}

func (o *Observer) onEvent(obj any, deleted bool) {
	e, ok := obj.(*corev1.Event)
	if !ok || deleted {
		return
	}
	io := e.InvolvedObject
	switch {
	case e.Namespace == o.target.Namespace:
	case io.Kind == "NodeClaim" && strings.HasPrefix(io.Name, o.target.NodePool+"-"):
	case io.Kind == "NodePool" && io.Name == o.target.NodePool:
	case io.Kind == "Node" && o.knownNode(io.Name):
	default:
		return
	}
	t := e.LastTimestamp.Time
	if t.IsZero() {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// Events are updated in place when they repeat: keep one record per
	// event object, with its latest count.
	for i := range o.ob.Events {
		if o.ob.Events[i].Object == io.Kind+"/"+io.Name && o.ob.Events[i].Reason == e.Reason && o.ob.Events[i].Message == e.Message {
			o.ob.Events[i].Count, o.ob.Events[i].Time = e.Count, t
			return
		}
	}
	o.ob.Events = append(o.ob.Events, EventRecord{Time: t, Type: e.Type, Reason: e.Reason, Kind: io.Kind,
		Object: io.Kind + "/" + io.Name, Message: e.Message, Count: e.Count})
}

func (o *Observer) knownNode(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.ob.Nodes[name]
	return ok
}

// Snapshot returns a deep copy of what was observed so far.
func (o *Observer) Snapshot() *Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.ob
	out.Pods = make(map[string]*PodRecord, len(o.ob.Pods))
	for k, v := range o.ob.Pods {
		c := *v
		out.Pods[k] = &c
	}
	out.NodeClaims = make(map[string]*NodeClaimRecord, len(o.ob.NodeClaims))
	for k, v := range o.ob.NodeClaims {
		c := *v
		out.NodeClaims[k] = &c
	}
	out.Nodes = make(map[string]*NodeRecord, len(o.ob.Nodes))
	for k, v := range o.ob.Nodes {
		c := *v
		out.Nodes[k] = &c
	}
	out.Events = append([]EventRecord(nil), o.ob.Events...)
	sort.Slice(out.Events, func(i, j int) bool { return out.Events[i].Time.Before(out.Events[j].Time) })
	return &out
}

// Settle says when WaitSettled stops.
type Settle struct {
	Quiet, Stall, Timeout time.Duration
	// Min is how long WaitSettled observes at least, settled or not (a
	// fault needs time to show: a leak to reach its limit, a delay to pass).
	Min time.Duration
	// Progress, when set, is called about every 5 s with what is awaited.
	Progress func(string)
}

// WaitSettled waits until the run settles (every expected pod Ready, every
// NodeClaim initialised, nothing changed for Quiet), stalls (a pod pending
// with no provisioning progress for Stall) or times out, and records the outcome.
func (o *Observer) WaitSettled(ctx context.Context, s Settle) Outcome {
	deadline := time.NewTimer(s.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	lastReport := start
	for {
		outcome, status := o.evaluate(s)
		if outcome != "" && time.Since(start) >= s.Min {
			o.finish(outcome)
			return outcome
		}
		if s.Progress != nil && time.Since(lastReport) >= 5*time.Second {
			s.Progress(status)
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			o.finish(TimedOut)
			return TimedOut
		case <-deadline.C:
			o.finish(TimedOut)
			return TimedOut
		case <-tick.C:
		}
	}
}

func (o *Observer) finish(out Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ob.Outcome, o.ob.End = out, time.Now()
}

func (o *Observer) evaluate(s Settle) (Outcome, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	live, ready, pending := 0, 0, 0
	for _, p := range o.ob.Pods {
		if !p.Deleted.IsZero() {
			continue
		}
		live++
		if !p.Ready.IsZero() && p.Phase == string(corev1.PodRunning) && p.Waiting == "" {
			ready++
		}
		if p.Scheduled.IsZero() {
			pending++
		}
	}
	claims, initialised := 0, 0
	for _, c := range o.ob.NodeClaims {
		if !c.Deleted.IsZero() {
			continue
		}
		claims++
		if !c.Initialized.IsZero() {
			initialised++
		}
	}
	want := 0
	if o.target.ExpectedPods != nil {
		want = o.target.ExpectedPods()
	}
	quiet := time.Since(o.lastChange)
	status := fmt.Sprintf("%d/%d pods ready, %d pending, %d/%d NodeClaims initialised, quiet for %s",
		ready, want, pending, initialised, claims, quiet.Round(time.Second))
	if live >= want && ready == live && initialised == claims && quiet >= s.Quiet {
		return Settled, status
	}
	if pending > 0 && time.Since(o.lastProgress) >= s.Stall {
		return Stalled, status
	}
	// Pods that run but never become ready (crash loops, OOM kills) settle
	// too: nothing more will happen without a change.
	if live >= want && pending == 0 && initialised == claims && quiet >= s.Stall {
		return Settled, status
	}
	return "", status
}
