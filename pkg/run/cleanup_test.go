package run

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// karpenterOnly is a cluster of one component, Karpenter, whose pid the
// test changes: 0 is dead.
type karpenterOnly struct {
	mu  sync.Mutex
	pid int
}

func (k *karpenterOnly) set(pid int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pid = pid
}

func (k *karpenterOnly) Status(context.Context) (cluster.Status, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := cluster.ComponentStatus{Name: "karpenter", PID: k.pid, Healthy: k.pid > 0, Detail: "ok"}
	if k.pid == 0 {
		c.Detail = "not running"
	}
	return cluster.Status{Exists: true, Components: []cluster.ComponentStatus{c}}, nil
}

// stuckObserver is the observer of a run whose NodeClaims go only while
// Karpenter runs: the first wait for them calls fail and then waits until
// it is stopped, as it would for a dead Karpenter; later waits succeed.
type stuckObserver struct {
	fail  func()
	calls int
}

func (o *stuckObserver) WaitNodeClaimsGone(ctx context.Context, _ func(string)) error {
	o.calls++
	if o.calls == 1 {
		o.fail()
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (o *stuckObserver) WaitNamespaceGone(context.Context, func(string)) error { return nil }

// A component that fails under cleanup stops its waiting at once, as it
// stops a run's: cleanup either starts over once the component is back,
// or leaves the run's objects in place and says why, instead of waiting
// out its timeout for NodeClaims a dead Karpenter never removes.
func TestCleanupStopsWaitingWhenAComponentFails(t *testing.T) {
	for _, tc := range []struct {
		name      string
		after     int // Karpenter's pid after the failure: 0 dead
		grace     time.Duration
		wantErr   string
		wantCalls int
		wantLines []string
	}{
		{name: "Karpenter dies on a temporary cluster", after: 0, grace: 0, wantCalls: 1,
			wantErr: "left namespace web-service-abcde, NodePool web-service-abcde and node class web-service-abcde in place: karpenter still down"},
		{name: "Karpenter dies and stays down on a kept cluster", after: 0, grace: 200 * time.Millisecond, wantCalls: 1,
			wantErr: "karpenter still down", wantLines: []string{"karpenter down: waiting up to 200ms for it to come back"}},
		{name: "Karpenter restarts: cleanup starts over and sweeps", after: 11, grace: 30 * time.Second, wantCalls: 2,
			wantLines: []string{"stopped waiting: karpenter restarted (pid 10 → 11)", "a component failed since the run began: asking the API server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Build(load(t, "web-service"), "web-service-abcde")
			if err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs.Namespace, objs.NodePool, objs.NodeClass).Build()
			src := &karpenterOnly{pid: 10}
			w, err := supervise.Start(context.Background(), src, supervise.WithInterval(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var mu sync.Mutex
			var lines []string
			r := &Runner{client: c, watch: w, grace: tc.grace, sweepQuiet: 0, progress: func(s string) {
				mu.Lock()
				defer mu.Unlock()
				lines = append(lines, s)
			}}
			ob := &stuckObserver{fail: func() { src.set(tc.after) }}
			// The old behaviour waited out this timeout and then failed
			// with "context deadline exceeded".
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = r.cleanupRun(ctx, objs, ob, time.Now())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("cleanup: %v, want it to succeed", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("cleanup: %v, want an error saying %q", err, tc.wantErr)
			}
			if ob.calls != tc.wantCalls {
				t.Errorf("waited for the NodeClaims %d time(s), want %d", ob.calls, tc.wantCalls)
			}
			mu.Lock()
			defer mu.Unlock()
			all := strings.Join(lines, "\n")
			for _, want := range tc.wantLines {
				if !strings.Contains(all, want) {
					t.Errorf("progress:\n%s\nwant a line with %q", all, want)
				}
			}
		})
	}
}

// goneObserver is the observer of a run whose NodeClaims and namespace go
// as they should.
type goneObserver struct{}

func (goneObserver) WaitNodeClaimsGone(context.Context, func(string)) error { return nil }
func (goneObserver) WaitNamespaceGone(context.Context, func(string)) error  { return nil }

// A node KWOK's provider created after its NodeClaim was gone (a launch in
// flight when the NodePool was deleted) is the run's to remove: nothing of
// Karpenter's owns it, and it failed every later spec of a soak repetition.
func TestCleanupRemovesANodeThatOutlivedItsNodeClaim(t *testing.T) {
	objs, err := Build(load(t, "web-service"), "web-service-abcde")
	if err != nil {
		t.Fatal(err)
	}
	orphan := poolNode("kwok-web-service-abcde-x1", "web-service-abcde")
	other := poolNode("kwok-other-x1", "other")
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs.Namespace, objs.NodePool, objs.NodeClass, orphan, other).Build()
	var lines []string
	r := &Runner{client: c, progress: func(s string) { lines = append(lines, s) }}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.cleanupRun(ctx, objs, goneObserver{}, time.Now()); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(orphan), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the node that outlived its NodeClaim is still there: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Node{}); err != nil {
		t.Fatalf("another NodePool's node must be left alone: %v", err)
	}
	if all := strings.Join(lines, "\n"); !strings.Contains(all, "deleting node kwok-web-service-abcde-x1, whose NodeClaim is gone") {
		t.Fatalf("progress does not say which node it deleted:\n%s", all)
	}
}
