package observe

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newTestObserver(want int) *Observer {
	return &Observer{target: Target{ExpectedPods: func() int { return want }}, stop: make(chan struct{}), ob: Observation{
		Pods: map[string]*PodRecord{}, NodeClaims: map[string]*NodeClaimRecord{}, Nodes: map[string]*NodeRecord{},
	}}
}

func TestEvaluate(t *testing.T) {
	s := Settle{Quiet: 5 * time.Second, Stall: 60 * time.Second, Timeout: time.Minute}
	now := time.Now()
	o := newTestObserver(2)
	o.lastChange, o.lastProgress = now, now
	o.ob.Pods["a"] = &PodRecord{Phase: "Running", Ready: now, Scheduled: now}
	o.ob.Pods["b"] = &PodRecord{Phase: "Pending"}
	o.ob.NodeClaims["c"] = &NodeClaimRecord{Initialized: now}
	if out, _ := o.evaluate(s); out != "" {
		t.Fatalf("a pending pod with recent progress: want no outcome, got %s", out)
	}
	o.lastProgress = now.Add(-61 * time.Second)
	if out, _ := o.evaluate(s); out != Stalled {
		t.Fatalf("no progress for the stall period: want stalled, got %q", out)
	}
	o.ob.Pods["b"] = &PodRecord{Phase: "Running", Ready: now, Scheduled: now}
	if out, _ := o.evaluate(s); out != "" {
		t.Fatalf("everything ready but not quiet yet: want no outcome, got %s", out)
	}
	o.lastChange = now.Add(-6 * time.Second)
	if out, _ := o.evaluate(s); out != Settled {
		t.Fatalf("ready and quiet: want settled, got %q", out)
	}
	o.ob.NodeClaims["d"] = &NodeClaimRecord{}
	if out, _ := o.evaluate(s); out != "" {
		t.Fatalf("a NodeClaim not initialised yet: want no outcome, got %s", out)
	}
	o.ob.NodeClaims["d"].Deleted = now
	o.ob.Pods["b"].Waiting = "CrashLoopBackOff"
	if out, _ := o.evaluate(s); out != "" {
		t.Fatalf("a crash-looping pod settles only after the stall period, got %s", out)
	}
	o.lastChange = now.Add(-61 * time.Second)
	if out, _ := o.evaluate(s); out != Settled {
		t.Fatalf("crash-looping and quiet for the stall period: want settled, got %q", out)
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
