package observe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/redact"
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
	// OtherNodePools are the run's other NodePools (a scenario's
	// policy.allNodePools): their NodeClaims and nodes are the run's too.
	OtherNodePools []string
	// Workloads are the run's Deployments by name, with the replicas
	// applied. The run expects as many pods as their replicas on the API
	// server (an HPA may change them), the applied ones until a Deployment
	// is seen. None: the observer only records (explain).
	Workloads map[string]int32
	// Live says the observation begins on a cluster as it is, not at a
	// run's start (explain): a node first seen with its Ready condition
	// not True is NotReady then, whereas in a run a node not yet Ready is
	// one still booting.
	Live bool
	// Clock is the clock the observation's latencies are read from
	// (default ServerClock).
	Clock Clock
}

// nodePoolSelector selects the NodeClaims and nodes of the target's
// NodePools.
func (t Target) nodePoolSelector() string {
	if len(t.OtherNodePools) == 0 {
		return karpv1.NodePoolLabelKey + "=" + t.NodePool
	}
	return karpv1.NodePoolLabelKey + " in (" + strings.Join(append([]string{t.NodePool}, t.OtherNodePools...), ",") + ")"
}

// ownsNodePool says whether name is one of the target's NodePools.
func (t Target) ownsNodePool(name string) bool {
	return name == t.NodePool || slices.Contains(t.OtherNodePools, name)
}

// ownsNodeClaim says whether a NodeClaim of this name was launched for one
// of the target's NodePools (Karpenter names it <NodePool>-<suffix>). A
// NodeClaim of another NodePool that merely begins with the run's name
// (<run>-<other>-<suffix>) is the run's only when <run>-<other> is.
func (t Target) ownsNodeClaim(name string) bool {
	i := strings.LastIndex(name, "-")
	return i > 0 && t.ownsNodePool(name[:i])
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
	// replicas are the Deployments' replicas as the API server has them.
	replicas map[string]int32
	// claims are the NodeClaims of the run's NodePool that still exist
	// (being deleted or not); namespaceExists is whether the run's
	// namespace does. Cleanup waits on both.
	claims          map[string]bool
	namespaceExists bool
	// changes is closed and replaced on every change: waiters wake on it
	// instead of polling.
	changes chan struct{}
	// firstAllReady is the local time the run was first seen with every
	// expected pod Ready (zero until then): the benchmark's floor, finer
	// than the API server's one-second timestamps.
	firstAllReady time.Time
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
	o := newObserver(t)
	inNS := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(t.Namespace))
	runNodes := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = t.nodePoolSelector()
	}))
	// Events about cluster-scoped objects (NodeClaims, Nodes) land in "default".
	clusterEvents := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(metav1.NamespaceDefault))
	runNamespace := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = "metadata.name=" + t.Namespace
	}))
	claims := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "", func(lo *metav1.ListOptions) {
		lo.LabelSelector = t.nodePoolSelector()
	})

	// Each informer keeps only what the observation reads (transforms):
	// a 5,000-pod run holds 5,000 small pods, not 5,000 full ones.
	type watched struct {
		inf  cache.SharedIndexInformer
		trim cache.TransformFunc
		fn   func(obj any, deleted bool)
	}
	handlers := []watched{
		{inNS.Core().V1().Pods().Informer(), trimPod, o.onPod},
		{inNS.Core().V1().Events().Informer(), trimEvent, o.onEvent},
		{clusterEvents.Core().V1().Events().Informer(), trimEvent, o.onEvent},
		{runNodes.Core().V1().Nodes().Informer(), trimNode, o.onNode},
		{claims.ForResource(nodeClaimGVR).Informer(), trimNodeClaim, o.onNodeClaim},
		{runNamespace.Core().V1().Namespaces().Informer(), trimNamespace, o.onNamespace},
	}
	if len(t.Workloads) > 0 {
		handlers = append(handlers, watched{inNS.Apps().V1().Deployments().Informer(), trimDeployment, o.onDeployment})
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		if err := h.inf.SetTransform(h.trim); err != nil {
			return nil, fmt.Errorf("failed to set an informer transform: %w", err)
		}
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
	runNamespace.Start(o.stop)
	claims.Start(o.stop)
	if !cache.WaitForCacheSync(ctxDone(ctx, o.stop), synced...) {
		o.Stop()
		return nil, fmt.Errorf("failed to sync the observer's informers for run %s: %w", t.Run, ctx.Err())
	}
	return o, nil
}

func newObserver(t Target) *Observer {
	now := time.Now()
	return &Observer{target: t, stop: make(chan struct{}), lastChange: now, lastProgress: now,
		replicas: map[string]int32{}, claims: map[string]bool{}, changes: make(chan struct{}),
		ob: Observation{Run: t.Run, Clock: cmp.Or(t.Clock, ServerClock), Pods: map[string]*PodRecord{}, NodeClaims: map[string]*NodeClaimRecord{}, Nodes: map[string]*NodeRecord{}}}
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

// changed records a transition; the caller holds o.mu.
func (o *Observer) changed(progress bool) {
	now := time.Now()
	o.lastChange = now
	if progress {
		o.lastProgress = now
	}
	o.wake()
}

// wake wakes every waiter; the caller holds o.mu.
func (o *Observer) wake() {
	close(o.changes)
	o.changes = make(chan struct{})
}

// setTime records a transition the first time it is seen: the server's
// timestamp in dst, and now, when it was received, in received.
func setTime(dst *time.Time, t metav1.Time, received *time.Time, now time.Time) bool {
	if t.IsZero() || !dst.IsZero() {
		return false
	}
	*dst = t.Time
	*received = now
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
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.ob.Pods[p.Name]
	if r == nil {
		r = &PodRecord{Name: p.Name, Workload: WorkloadOf(p), Created: p.CreationTimestamp.Time, Received: Received{Created: now}}
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
			if setTime(&r.Scheduled, c.LastTransitionTime, &r.Received.Scheduled, now) {
				ch, progress = true, true
			}
		case corev1.PodReady:
			if setTime(&r.Ready, c.LastTransitionTime, &r.Received.Ready, now) {
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
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.ob.Nodes[n.Name]
	if r == nil {
		r = &NodeRecord{Name: n.Name, Created: n.CreationTimestamp.Time, Received: Received{Created: now}, InstanceType: n.Labels[corev1.LabelInstanceTypeStable],
			CapacityType: n.Labels[karpv1.CapacityTypeLabelKey], Zone: n.Labels[corev1.LabelTopologyZone]}
		o.ob.Nodes[n.Name] = r
		o.changed(true)
		if o.target.Live {
			r.NotReady = notReadyNow(n)
		}
	}
	r.Labels = n.Labels
	r.Finalizers = n.Finalizers
	if deleted {
		r.Finalizers = nil
	}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			if setTime(&r.Ready, c.LastTransitionTime, &r.Received.Ready, now) {
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

// notReadyNow: the node reports a Ready condition that is not True.
func notReadyNow(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}

func (o *Observer) onNodeClaim(obj any, deleted bool) {
	nc, ok := obj.(*karpv1.NodeClaim)
	if !ok {
		// Not trimmed: the transform failed to convert it.
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if deleted {
		delete(o.claims, nc.Name)
		o.wake()
	} else {
		o.claims[nc.Name] = true
	}
	r := o.ob.NodeClaims[nc.Name]
	if r == nil {
		r = &NodeClaimRecord{Name: nc.Name, Created: nc.CreationTimestamp.Time, Received: Received{Created: now}}
		o.ob.NodeClaims[nc.Name] = r
		o.changed(true)
	}
	ch := false
	for _, c := range nc.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		var dst, rcv *time.Time
		switch c.Type {
		case karpv1.ConditionTypeLaunched:
			dst, rcv = &r.Launched, &r.Received.Launched
		case karpv1.ConditionTypeRegistered:
			dst, rcv = &r.Registered, &r.Received.Registered
		case karpv1.ConditionTypeInitialized:
			dst, rcv = &r.Initialized, &r.Received.Initialized
		case "Ready":
			dst, rcv = &r.Ready, &r.Received.Ready
		}
		if dst != nil && setTime(dst, c.LastTransitionTime, rcv, now) {
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
	if deleted && r.Gone.IsZero() {
		r.Gone, ch = now, true
	}
	if ch {
		o.changed(true)
	}
}

func (o *Observer) onNamespace(_ any, deleted bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.namespaceExists != !deleted {
		o.namespaceExists = !deleted
		o.wake()
	}
}

func (o *Observer) onDeployment(obj any, deleted bool) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || (!deleted && d.Spec.Replicas == nil) {
		return
	}
	want := int32(0) // a deleted workload expects no pods (a scale-in's remove)
	if !deleted {
		want = *d.Spec.Replicas
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, seen := o.replicas[d.Name]; !seen || cur != want {
		o.replicas[d.Name] = want
		o.changed(false)
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
	case io.Kind == "NodeClaim" && o.target.ownsNodeClaim(io.Name):
	case io.Kind == "NodePool" && o.target.ownsNodePool(io.Name):
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
	// Masked as it is recorded: an event may quote a token or an
	// environment value, and the observation ends up in reports.
	msg := redact.String(e.Message)
	o.mu.Lock()
	defer o.mu.Unlock()
	// Events are updated in place when they repeat: keep one record per
	// event object, with its latest count.
	for i := range o.ob.Events {
		if o.ob.Events[i].Object == io.Kind+"/"+io.Name && o.ob.Events[i].Reason == e.Reason && o.ob.Events[i].Message == msg {
			o.ob.Events[i].Count, o.ob.Events[i].Time = e.Count, t
			return
		}
	}
	o.ob.Events = append(o.ob.Events, EventRecord{Time: t, Type: e.Type, Reason: e.Reason, Kind: io.Kind,
		Object: io.Kind + "/" + io.Name, Message: msg, Count: e.Count})
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
	// MinFromReady counts Min from when every expected pod was first seen
	// Ready instead of from the call (a fault on the pods' own clock);
	// until then Min has not passed, and only the Timeout ends the wait
	// early.
	MinFromReady bool
	// UntilGone keeps the run from settling while a NodeClaim it deleted
	// is still there (its instance not yet terminated): a scale-in has not
	// reached its steady state until what it removes is gone. Without it
	// a NodeClaim being deleted is not waited for.
	UntilGone bool
	// Progress, when set, is called about every 5 s with what is awaited.
	Progress func(string)
}

// progressEvery is how often WaitSettled reports what it waits for.
const progressEvery = 5 * time.Second

// WaitSettled waits until the run settles (every expected pod Ready, every
// NodeClaim initialised, nothing changed for Quiet), stalls (a pod pending
// with no provisioning progress for Stall) or times out, and records the
// outcome. It evaluates on every change the informers deliver and when a
// period can have run out, never on a polling interval.
func (o *Observer) WaitSettled(ctx context.Context, s Settle) Outcome {
	deadline := time.NewTimer(s.Timeout)
	defer deadline.Stop()
	recheck := time.NewTimer(time.Hour)
	defer recheck.Stop()
	start := time.Now()
	lastReport := start
	for {
		o.mu.Lock()
		changes := o.changes
		o.mu.Unlock()
		outcome, status, next := o.evaluate(s)
		observed := o.observedFor(s, start)
		if outcome != "" {
			if observed >= s.Min {
				o.finish(outcome)
				return outcome
			}
			next = s.Min - observed
		}
		if s.Progress != nil {
			if since := time.Since(lastReport); since >= progressEvery {
				s.Progress(status)
				lastReport = time.Now()
				next = minPositive(next, progressEvery)
			} else {
				next = minPositive(next, progressEvery-since)
			}
		}
		if next <= 0 {
			next = time.Hour // only a change or the deadline can end the wait
		}
		recheck.Reset(next)
		select {
		case <-ctx.Done():
			o.finish(TimedOut)
			return TimedOut
		case <-deadline.C:
			o.finish(TimedOut)
			return TimedOut
		case <-changes:
		case <-recheck.C:
		}
		if !recheck.Stop() {
			select {
			case <-recheck.C:
			default:
			}
		}
	}
}

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

func (o *Observer) finish(out Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ob.Outcome, o.ob.End = out, time.Now()
}

// expected is how many pods the run should end with; the caller holds o.mu.
func (o *Observer) expected() int {
	n := 0
	for name, applied := range o.target.Workloads {
		if cur, seen := o.replicas[name]; seen {
			n += int(cur)
		} else {
			n += int(applied)
		}
	}
	return n
}

// evaluate returns the outcome reached, if any, what is awaited, and how
// long until a period can run out with no further change (0: none can).
//
// Settled is a proof, not a guess: once every expected pod is bound and
// Ready and every live NodeClaim is initialised (its node Ready), no pod is
// left for Karpenter's provisioner, so the selection and every timing the
// fingerprint reads are final. What Karpenter may still do later
// (consolidation validates for 15 s first, expiry) is not part of a
// baseline's settle. The quiet period only covers notifications still in
// flight; its default is short for that reason.
func (o *Observer) evaluate(s Settle) (Outcome, string, time.Duration) {
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
	claims, initialised, terminating := 0, 0, 0
	for _, c := range o.ob.NodeClaims {
		if !c.Deleted.IsZero() {
			if c.Gone.IsZero() && s.UntilGone {
				terminating++
			}
			continue
		}
		claims++
		if !c.Initialized.IsZero() {
			initialised++
		}
	}
	want := o.expected()
	quiet := time.Since(o.lastChange)
	status := fmt.Sprintf("%d/%d pods ready, %d pending, %d/%d NodeClaims initialised, quiet for %s",
		ready, want, pending, initialised, claims, quiet.Round(time.Second))
	if terminating > 0 {
		status += fmt.Sprintf(", %d NodeClaim(s) deleted and not gone", terminating)
	}
	allReady := live >= want && ready == live && initialised == claims && terminating == 0
	if allReady && want > 0 && o.firstAllReady.IsZero() {
		o.firstAllReady = time.Now()
	}
	if allReady && quiet >= s.Quiet {
		return Settled, status, 0
	}
	var next time.Duration
	if allReady {
		next = s.Quiet - quiet
	}
	if pending > 0 {
		sinceProgress := time.Since(o.lastProgress)
		if sinceProgress >= s.Stall {
			return Stalled, status, 0
		}
		next = minPositive(next, s.Stall-sinceProgress)
	}
	// Pods that run but never become ready (crash loops, OOM kills) settle
	// too: nothing more will happen without a change.
	if live >= want && pending == 0 && initialised == claims && terminating == 0 {
		if quiet >= s.Stall {
			return Settled, status, 0
		}
		next = minPositive(next, s.Stall-quiet)
	}
	return "", status, next
}

// observedFor is how long the run has been observed towards s.Min: since
// start, or since every pod was first Ready (s.MinFromReady; 0 before).
func (o *Observer) observedFor(s Settle, start time.Time) time.Duration {
	if !s.MinFromReady {
		return time.Since(start)
	}
	if fr := o.FirstAllReady(); !fr.IsZero() {
		return time.Since(fr)
	}
	return 0
}

// FirstAllReady is the local time the observer first saw every expected
// pod Ready and every NodeClaim initialised (zero if it never did).
func (o *Observer) FirstAllReady() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.firstAllReady
}

// WaitNodeClaimsGone waits until the run's NodePool has no NodeClaim left,
// as the informers see it; progress, when set, is called about every 10 s
// with what is left.
func (o *Observer) WaitNodeClaimsGone(ctx context.Context, progress func(string)) error {
	return o.waitGone(ctx, true, false, progress)
}

// WaitNamespaceGone waits until the run's namespace is gone, as the
// informers see it.
func (o *Observer) WaitNamespaceGone(ctx context.Context, progress func(string)) error {
	return o.waitGone(ctx, false, true, progress)
}

func (o *Observer) waitGone(ctx context.Context, forClaims, forNamespace bool, progress func(string)) error {
	started := time.Now()
	report := time.NewTicker(10 * time.Second)
	defer report.Stop()
	for {
		o.mu.Lock()
		changes, claims, ns := o.changes, len(o.claims), o.namespaceExists
		o.mu.Unlock()
		if !forClaims {
			claims = 0
		}
		if !forNamespace {
			ns = false
		}
		if claims == 0 && !ns {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("failed to see the run cleaned up (%s): %w", left(claims, ns), ctx.Err())
		case <-o.stop:
			return fmt.Errorf("failed to see the run cleaned up (%s): the observer was stopped", left(claims, ns))
		case <-changes:
		case <-report.C:
			if progress != nil {
				progress(fmt.Sprintf("waiting for %s (%s so far)", left(claims, ns), time.Since(started).Round(time.Second)))
			}
		}
	}
}

func left(claims int, ns bool) string {
	var parts []string
	if claims > 0 {
		parts = append(parts, fmt.Sprintf("Karpenter to remove %d NodeClaim(s)", claims))
	}
	if ns {
		parts = append(parts, "the namespace to be deleted")
	}
	return strings.Join(parts, " and ")
}
