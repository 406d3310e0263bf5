package observe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func newTestObserver(want int32) *Observer {
	return newObserver(Target{Run: "r", Namespace: "r", NodePool: "r", Workloads: map[string]int32{"web": want}})
}

func TestEvaluate(t *testing.T) {
	s := Settle{Quiet: 5 * time.Second, Stall: 60 * time.Second, Timeout: time.Minute}
	now := time.Now()
	o := newTestObserver(2)
	o.lastChange, o.lastProgress = now, now
	o.ob.Pods["a"] = &PodRecord{Phase: "Running", Ready: now, Scheduled: now}
	o.ob.Pods["b"] = &PodRecord{Phase: "Pending"}
	o.ob.NodeClaims["c"] = &NodeClaimRecord{Initialized: now}
	if out, _, _ := o.evaluate(s); out != "" {
		t.Fatalf("a pending pod with recent progress: want no outcome, got %s", out)
	}
	o.lastProgress = now.Add(-61 * time.Second)
	if out, _, _ := o.evaluate(s); out != Stalled {
		t.Fatalf("no progress for the stall period: want stalled, got %q", out)
	}
	o.ob.Pods["b"] = &PodRecord{Phase: "Running", Ready: now, Scheduled: now}
	if out, _, _ := o.evaluate(s); out != "" {
		t.Fatalf("everything ready but not quiet yet: want no outcome, got %s", out)
	}
	o.lastChange = now.Add(-6 * time.Second)
	if out, _, _ := o.evaluate(s); out != Settled {
		t.Fatalf("ready and quiet: want settled, got %q", out)
	}
	o.ob.NodeClaims["d"] = &NodeClaimRecord{}
	if out, _, _ := o.evaluate(s); out != "" {
		t.Fatalf("a NodeClaim not initialised yet: want no outcome, got %s", out)
	}
	o.ob.NodeClaims["d"].Deleted = now
	o.ob.Pods["b"].Waiting = "CrashLoopBackOff"
	if out, _, _ := o.evaluate(s); out != "" {
		t.Fatalf("a crash-looping pod settles only after the stall period, got %s", out)
	}
	o.lastChange = now.Add(-61 * time.Second)
	if out, _, _ := o.evaluate(s); out != Settled {
		t.Fatalf("crash-looping and quiet for the stall period: want settled, got %q", out)
	}
}

// A scale-in (UntilGone) is not settled while a NodeClaim it deleted is
// still there, however quiet; once it is gone, or without UntilGone, the
// run settles.
func TestEvaluateUntilGone(t *testing.T) {
	now := time.Now()
	s := Settle{Quiet: 5 * time.Second, Stall: 60 * time.Second, Timeout: time.Minute, UntilGone: true}
	o := newTestObserver(1)
	o.lastChange, o.lastProgress = now.Add(-2*time.Minute), now.Add(-2*time.Minute)
	o.ob.Pods["a"] = &PodRecord{Phase: "Running", Ready: now, Scheduled: now}
	o.ob.NodeClaims["c"] = &NodeClaimRecord{Initialized: now}
	o.ob.NodeClaims["d"] = &NodeClaimRecord{Initialized: now, Deleted: now.Add(-time.Minute)}
	if out, status, _ := o.evaluate(s); out != "" || !strings.Contains(status, "1 NodeClaim(s) deleted and not gone") {
		t.Fatalf("a deleted NodeClaim still there: want no outcome and it named, got %q (%s)", out, status)
	}
	s.UntilGone = false
	if out, _, _ := o.evaluate(s); out != Settled {
		t.Fatalf("without UntilGone: want settled, got %q", out)
	}
	s.UntilGone = true
	o.ob.NodeClaims["d"].Gone = now
	if out, _, _ := o.evaluate(s); out != Settled {
		t.Fatalf("the deleted NodeClaim gone: want settled, got %q", out)
	}
}

func TestWaitSettledTimesOut(t *testing.T) {
	o := newTestObserver(1)
	o.lastChange, o.lastProgress = time.Now(), time.Now()
	start := time.Now()
	if out := o.WaitSettled(context.Background(), Settle{Quiet: time.Second, Stall: time.Hour, Timeout: 300 * time.Millisecond}); out != TimedOut {
		t.Fatalf("want timed-out, got %s", out)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("WaitSettled overran its timeout")
	}
	if o.Snapshot().Outcome != TimedOut {
		t.Fatal("the outcome is recorded in the observation")
	}
}

func TestMarkDeleted(t *testing.T) {
	var d time.Time
	if markDeleted(&d, false, nil) || !d.IsZero() {
		t.Fatal("a live object is not deleted")
	}
	ts := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if !markDeleted(&d, false, &ts) || !d.Equal(ts.Time) {
		t.Fatalf("the server's deletion timestamp is recorded, got %v", d)
	}
	later := metav1.NewTime(ts.Add(time.Hour))
	if markDeleted(&d, true, &later) || !d.Equal(ts.Time) {
		t.Fatal("a deletion is recorded once")
	}
	var gone time.Time
	if !markDeleted(&gone, true, nil) || gone.IsZero() {
		t.Fatal("an object that vanished without a timestamp is deleted now")
	}
}

func TestExpectedFollowsTheDeployments(t *testing.T) {
	o := newObserver(Target{Workloads: map[string]int32{"web": 3, "api": 2}})
	if got := o.expected(); got != 5 {
		t.Fatalf("before the Deployments are seen the applied replicas count: want 5, got %d", got)
	}
	// An HPA scaled web to 7.
	o.onDeployment(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](7)}}, false)
	if got := o.expected(); got != 9 {
		t.Fatalf("after a scale-up: want 9, got %d", got)
	}
	// A scale-in removed api: its pods are no longer expected.
	o.onDeployment(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api"}}, true)
	if got := o.expected(); got != 7 {
		t.Fatalf("after api was removed: want 7, got %d", got)
	}
}

func TestNodeClaimGone(t *testing.T) {
	o := newObserver(Target{})
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", CreationTimestamp: metav1.Now()}}
	o.onNodeClaim(nc, false)
	del := metav1.Now()
	nc.DeletionTimestamp = &del
	o.onNodeClaim(nc, false)
	if r := o.ob.NodeClaims["c1"]; r.Deleted.IsZero() || !r.Gone.IsZero() {
		t.Fatalf("a NodeClaim being deleted is deleted, not gone: %+v", r)
	}
	o.onNodeClaim(nc, true)
	if r := o.ob.NodeClaims["c1"]; r.Gone.IsZero() {
		t.Fatalf("a NodeClaim that disappeared is gone: %+v", r)
	}
}

// A Node's finalizers are kept as last seen while it exists: what holds a
// deleted Node back. Once it is gone, nothing does.
func TestNodeFinalizers(t *testing.T) {
	o := newObserver(Target{})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.Now(), Finalizers: []string{"karpenter.sh/termination"}}}
	o.onNode(n, false)
	del := metav1.Now()
	n = n.DeepCopy()
	n.DeletionTimestamp, n.Finalizers = &del, []string{"storage.example.com/detach"}
	o.onNode(n, false)
	if diff := cmp.Diff([]string{"storage.example.com/detach"}, o.ob.Nodes["n1"].Finalizers); diff != "" {
		t.Fatalf("a Node being deleted (-want +got):\n%s", diff)
	}
	o.onNode(n, true)
	if f := o.ob.Nodes["n1"].Finalizers; f != nil {
		t.Fatalf("a Node that disappeared is held by nothing, got %v", f)
	}
}

func readyPod(name string, ready bool) *corev1.Pod {
	now := metav1.Now()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{WorkloadLabel: "web"}},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}}}
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	return p
}

// WaitSettled is woken by the informers' changes: a pod turning Ready ends
// the wait after the quiet period, with no polling interval in between.
func TestWaitSettledWakesOnChange(t *testing.T) {
	o := newTestObserver(1)
	o.onPod(readyPod("a", false), false)
	done := make(chan Outcome, 1)
	go func() {
		done <- o.WaitSettled(context.Background(), Settle{Quiet: 50 * time.Millisecond, Stall: time.Hour, Timeout: time.Minute})
	}()
	select {
	case out := <-done:
		t.Fatalf("a pending pod: want no outcome yet, got %s", out)
	case <-time.After(200 * time.Millisecond):
	}
	o.onPod(readyPod("a", true), false)
	select {
	case out := <-done:
		if out != Settled {
			t.Fatalf("want settled, got %s", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitSettled did not end after the pod turned Ready")
	}
	if o.FirstAllReady().IsZero() {
		t.Fatal("the moment every pod was first seen Ready is recorded")
	}
}

// Min holds a settled run open: a fault needs its time to show.
func TestWaitSettledObservesAtLeastMin(t *testing.T) {
	o := newTestObserver(1)
	o.onPod(readyPod("a", true), false)
	start := time.Now()
	if out := o.WaitSettled(context.Background(), Settle{Quiet: time.Millisecond, Stall: time.Hour, Timeout: time.Minute, Min: 300 * time.Millisecond}); out != Settled {
		t.Fatalf("want settled, got %s", out)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("settled after %s, before the minimum observation of 300ms", d)
	}
}

// MinFromReady counts Min from when every pod was first Ready: pods that
// start late still get the whole minimum (a fault on the pods' own clock).
func TestWaitSettledCountsMinFromReady(t *testing.T) {
	o := newTestObserver(1)
	o.onPod(readyPod("a", false), false)
	done := make(chan time.Time, 1)
	go func() {
		o.WaitSettled(context.Background(), Settle{Quiet: time.Millisecond, Stall: time.Hour, Timeout: time.Minute, Min: 300 * time.Millisecond, MinFromReady: true})
		done <- time.Now()
	}()
	time.Sleep(400 * time.Millisecond) // longer than Min, pod not Ready
	o.onPod(readyPod("a", true), false)
	ready := time.Now()
	select {
	case end := <-done:
		if d := end.Sub(ready); d < 300*time.Millisecond {
			t.Fatalf("settled %s after the pod was Ready, before the minimum of 300ms counted from then", d)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitSettled did not end")
	}
}

func TestWaitGone(t *testing.T) {
	o := newTestObserver(1)
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "r-abc"}}
	o.onNodeClaim(claim, false)
	o.onNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := o.WaitNodeClaimsGone(ctx, nil)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "remove 1 NodeClaim(s)") {
		t.Fatalf("a NodeClaim is left: want an error naming it, got %v", err)
	}
	done := make(chan error, 2)
	go func() {
		done <- o.WaitNodeClaimsGone(context.Background(), nil)
		done <- o.WaitNamespaceGone(context.Background(), nil)
	}()
	o.onNodeClaim(claim, true)
	if err := <-done; err != nil {
		t.Fatalf("the NodeClaim is gone: %v", err)
	}
	o.onNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the namespace is gone: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitNamespaceGone did not see the namespace go")
	}
	o.Stop()
	o.onNodeClaim(claim, false)
	if err := o.WaitNodeClaimsGone(context.Background(), nil); err == nil {
		t.Fatal("a stopped observer cannot see anything go: want an error, not a hang")
	}
}

// An event that quotes a secret is recorded masked: the observation ends
// up in reports, anomalies and runbooks.
func TestEventsAreRecordedRedacted(t *testing.T) {
	o := newTestObserver(1)
	for i := 0; i < 2; i++ {
		o.onEvent(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "r"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1", Namespace: "r"},
			Reason:         "Failed", Message: "pull: Authorization: Bearer abcdefghijklmnopqrstuvwxyz, DB_PASSWORD=hunter22", Count: int32(i + 1)}, false)
	}
	evs := o.Snapshot().Events
	if len(evs) != 1 {
		t.Fatalf("a repeated event is one record, got %d", len(evs))
	}
	if got := evs[0].Message; got != "pull: Authorization: Bearer [REDACTED], DB_PASSWORD=[REDACTED]" || evs[0].Count != 2 {
		t.Fatalf("recorded %q (count %d)", got, evs[0].Count)
	}
}

// In a run a node not yet Ready is still booting; on a live cluster
// (explain) a node first seen with Ready False or Unknown is NotReady
// now. Before, explain counted such a node as neither Ready nor NotReady.
func TestANodeNotReadyWhenALiveObservationBeginsIsNotReady(t *testing.T) {
	node := func(status corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.Now()}}
		return n
	}
	for _, tc := range []struct {
		name   string
		live   bool
		status corev1.ConditionStatus
		want   bool
	}{
		{"live, Ready False", true, corev1.ConditionFalse, true},
		{"live, Ready Unknown (kubelet stopped posting)", true, corev1.ConditionUnknown, true},
		{"live, Ready True", true, corev1.ConditionTrue, false},
		{"run, not yet Ready: booting", false, corev1.ConditionFalse, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newTestObserver(1)
			o.target.Live = tc.live
			o.onNode(node(tc.status), false)
			if got := o.Snapshot().Nodes["n1"].NotReady; got != tc.want {
				t.Errorf("NotReady = %v, want %v", got, tc.want)
			}
		})
	}
}

// A transition carries the server's timestamp and the local time it was
// received, once; a latency reads the clock the observation names.
func TestReceivedTimes(t *testing.T) {
	o := newObserver(Target{Run: "r", Namespace: "r", NodePool: "r", Clock: ReceivedClock})
	created := metav1.NewTime(time.Now().Add(-3 * time.Second).Truncate(time.Second))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: created}}
	o.onPod(pod, false)
	time.Sleep(20 * time.Millisecond)
	ready := pod.DeepCopy()
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(time.Second))}}
	o.onPod(ready, false)
	first := o.Snapshot().Pods["p"].Received.Ready
	o.onPod(ready, false) // seen again: the first time stays
	ob := o.Snapshot()
	r := ob.Pods["p"]
	if ob.Clock != ReceivedClock || r.Received.Created.IsZero() || r.Received.Ready != first {
		t.Fatalf("clock %s, received %+v: want both times, the first one kept", ob.Clock, r.Received)
	}
	got, ok := Latency(ob.Clock, r.Created, r.Ready, r.Received.Created, r.Received.Ready)
	if !ok || got < 0.02 || got > 0.5 {
		t.Errorf("received-clock latency %vs, want about 0.02s (the server's says 1s)", got)
	}
	if got, _ := Latency(ServerClock, r.Created, r.Ready, r.Received.Created, r.Received.Ready); got != 1 {
		t.Errorf("server-clock latency %vs, want 1s", got)
	}
	// A transition received before the observer started has no receive
	// time: the server's timestamps stand in.
	if got, _ := Latency(ReceivedClock, r.Created, r.Ready, time.Time{}, r.Received.Ready); got != 1 {
		t.Errorf("without a receive time: %vs, want the server's 1s", got)
	}
	if newObserver(Target{}).Snapshot().Clock != ServerClock {
		t.Error("the default clock is the server's")
	}
}

// A run with several NodePools (a scenario's policy.allNodePools) observes
// the NodeClaims and nodes of each, and the events of their NodeClaims,
// and no other run's: run r-ab's NodeClaims are not r-a's.
func TestTargetWithOtherNodePools(t *testing.T) {
	one := Target{NodePool: "r-a"}
	if got := one.nodePoolSelector(); got != "karpenter.sh/nodepool=r-a" {
		t.Errorf("one NodePool: selector %q", got)
	}
	many := Target{NodePool: "r-a", OtherNodePools: []string{"r-a-general-01", "r-a-general-02"}}
	if got, want := many.nodePoolSelector(), "karpenter.sh/nodepool in (r-a,r-a-general-01,r-a-general-02)"; got != want {
		t.Errorf("selector: got %q, want %q", got, want)
	}
	for name, want := range map[string]bool{
		"r-a-x7k2p": true, "r-a-general-01-q2w3e": true, "r-a-general-02-zzzzz": true,
		"r-ab-x7k2p": false, "r-a-general-03-q2w3e": false, "r-a": false, "x7k2p": false,
	} {
		if got := many.ownsNodeClaim(name); got != want {
			t.Errorf("NodeClaim %s: owned %v, want %v", name, got, want)
		}
	}
}
