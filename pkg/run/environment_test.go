package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"

	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// After an incident cleanup asks the API server what is left, and deletes
// a NodeClaim Karpenter launched for the deleted NodePool from its stale
// cache.
func TestLeftOnServerDeletesLateNodeClaims(t *testing.T) {
	s := load(t, "web-service")
	objs, err := Build(s, "web-service-abcde")
	if err != nil {
		t.Fatal(err)
	}
	late := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "web-service-abcde-x1",
		Labels: map[string]string{karpv1.NodePoolLabelKey: "web-service-abcde"}}}
	other := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "other-x1",
		Labels: map[string]string{karpv1.NodePoolLabelKey: "other"}}}
	orphan := poolNode("kwok-web-service-abcde-x1", "web-service-abcde")
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs.Namespace, late, other, orphan).Build()
	r := &Runner{client: c, progress: func(string) {}}
	left, err := r.deleteLeftovers(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(left, ","); got != "Namespace/web-service-abcde,NodeClaim/web-service-abcde-x1,Node/kwok-web-service-abcde-x1" {
		t.Fatalf("left = %s", got)
	}
	// The node waits while a NodeClaim of the NodePool exists: Karpenter
	// terminates its own nodes.
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(orphan), &corev1.Node{}); err != nil {
		t.Fatalf("the node was deleted while its NodeClaim existed: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(late), &karpv1.NodeClaim{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the late NodeClaim was not deleted: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(other), &karpv1.NodeClaim{}); err != nil {
		t.Fatalf("another NodePool's NodeClaim must be left alone: %v", err)
	}
	// Next pass: no NodeClaim left, so the node is an orphan.
	if left, err = r.deleteLeftovers(context.Background(), objs); err != nil || strings.Join(left, ",") != "Namespace/web-service-abcde,Node/kwok-web-service-abcde-x1" {
		t.Fatalf("left = %v, %v", left, err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(orphan), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the orphaned node was not deleted: %v", err)
	}
	if err := c.Delete(context.Background(), objs.Namespace); err != nil {
		t.Fatal(err)
	}
	if left, err = r.deleteLeftovers(context.Background(), objs); err != nil || len(left) != 0 {
		t.Fatalf("nothing is left now, got %v, %v", left, err)
	}
}

// poolNode is a node of a NodePool, as KWOK's provider creates it.
func poolNode(name, nodePool string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: nodePool}}}
}

// When a component dies while a run's step waits, the supervisor cancels
// the step's context (abortOnIncident) and the step fails with "context
// canceled". That cancellation is the incident's effect: the run's error
// must say what failed and what the step was doing, and must not carry
// context.Canceled, which the CLI would read as an interruption (exit 130
// instead of 3). Before the fix the EnvironmentError wrapped the step's
// error as it was, and errors.Is(err, context.Canceled) held.
func TestAnIncidentsCancellationIsNotAnInterruption(t *testing.T) {
	objs, err := Build(load(t, "web-service"), "web-service-abcde")
	if err != nil {
		t.Fatal(err)
	}
	src := &karpenterOnly{pid: 10}
	w, err := supervise.Start(context.Background(), src, supervise.WithInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Karpenter dies while the run creates its workloads; the create
	// waits until the supervisor cancels it.
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			src.set(0)
			<-ctx.Done()
			return ctx.Err()
		},
	}).Build()
	r := &Runner{client: c, watch: w, progress: func(string) {}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	since := time.Now()
	actx, stop := r.abortOnIncident(ctx, "web-service-abcde", since)
	defer stop()
	step := r.client.Create(actx, objs.Namespace)
	if !errors.Is(step, context.Canceled) || ctx.Err() != nil {
		t.Fatalf("the step must have been cancelled by the incident, not by the caller: %v (caller: %v)", step, ctx.Err())
	}
	got := r.environmentFailed(ctx, "web-service-abcde", since, fmt.Errorf("failed to create Namespace %s: %w", objs.Namespace.Name, step))
	if errors.Is(got, context.Canceled) {
		t.Fatalf("the run's error carries context.Canceled, so the CLI reads it as interrupted: %v", got)
	}
	var ee *EnvironmentError
	if !errors.As(got, &ee) {
		t.Fatalf("want an *EnvironmentError, got %T: %v", got, got)
	}
	for _, want := range []string{"karpenter exited (pid 10)", "failed to create Namespace web-service-abcde"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("the error %q does not say %q", got, want)
		}
	}
	// An error that already is the incident (the run's settle wait
	// returns it) is kept as it is.
	joined := errors.Join(ee, fmt.Errorf("cleanup: %w", context.Canceled))
	if again := r.environmentFailed(ctx, "web-service-abcde", since, joined); errors.Is(again, context.Canceled) || !errors.As(again, &ee) {
		t.Errorf("an incident joined with a cancelled cleanup: %v (is canceled: %v)", again, errors.Is(again, context.Canceled))
	}
}
