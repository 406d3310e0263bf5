// Package sensitivity measures how small a regression verification
// catches, and how often it cries wolf: known slowdowns of pod-ready and
// NodeClaim-ready are injected into an unchanged stack, and the shipping
// verification (diff.Compare, with its statistical test) is applied to
// resamples of the measured runs (make sensitivity, docs/performance.md).
package sensitivity

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
)

// Target is what a slowdown slows.
type Target string

// The targets, each with the lever that slows it.
const (
	// PodReady slows pods from scheduled to Ready: KWOK's pod-ready stage
	// with a delay (stages/pod-ready-delay.yaml). NodeClaims are not slowed.
	PodReady Target = "podReady"
	// NodeClaimReady slows every launch: Karpenter's cloud provider waits
	// before it answers (the capacity decorator's launchDelay). Pods wait
	// for their nodes, so pod-ready grows too.
	NodeClaimReady Target = "nodeClaimReady"
	// NodeReady slows NodeClaim-ready the other way: Karpenter's nodes
	// become Ready later (KWOK's node-initialize stage with a delay,
	// stages/node-ready-delay.yaml), an instance that boots slower.
	NodeReady Target = "nodeReady"
)

// Targets are every target, in the order tables list them.
var Targets = []Target{PodReady, NodeClaimReady, NodeReady}

// Metric is the latency a target slows: pod-ready, or NodeClaim-ready.
func (t Target) Metric(tm fingerprint.Timing) float64 {
	if t == PodReady {
		return tm.PodReady.P50
	}
	return tm.NodeClaimReady.P50
}

// Slowdown is one injected slowdown: the target's median made Factor
// times what the unchanged stack measured, by adding Delay.
type Slowdown struct {
	Target Target        `json:"target"`
	Factor float64       `json:"factor"`
	Delay  time.Duration `json:"delay"`
}

// Name is the slowdown as tables name it: "nodeClaimReady ×1.25".
func (s Slowdown) Name() string { return fmt.Sprintf("%s ×%g", s.Target, s.Factor) }

// For is the slowdown of target by factor, given the target's median in
// seconds on the unchanged stack.
func For(target Target, factor, median float64) Slowdown {
	d := time.Duration((factor - 1) * median * float64(time.Second)).Round(time.Millisecond)
	return Slowdown{Target: target, Factor: factor, Delay: d}
}

//go:embed stages/*.yaml
var stages embed.FS

// stage is stages/<name>.yaml with delay d.
func stage(name string, d time.Duration) (*unstructured.Unstructured, error) {
	path := "stages/" + name + ".yaml"
	u, err := faults.DecodeStage(stages, path)
	if err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedField(u.Object, d.Milliseconds(), "spec", "delay", "durationMilliseconds"); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// decoratorCache is how long Karpenter's capacity decorator keeps the
// rules it read (tools/karpenter/capacity): a new delay holds after it.
const decoratorCache = 2 * time.Second

// Apply injects the slowdown on the cluster behind c and returns how to
// remove it. The objects it creates are the cluster's, not a run's: every
// run until restore is slowed.
func Apply(ctx context.Context, c client.Client, s Slowdown) (restore func(context.Context) error, err error) {
	var obj client.Object
	switch s.Target {
	case PodReady, NodeReady:
		name := map[Target]string{PodReady: "pod-ready-delay", NodeReady: "node-ready-delay"}[s.Target]
		u, err := stage(name, s.Delay)
		if err != nil {
			return nil, err
		}
		obj = u
	case NodeClaimReady:
		obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: faults.KarpenterNS, Name: faults.CapacityConfigMap},
			Data: map[string]string{"launchDelay": s.Delay.String()}}
	default:
		return nil, fmt.Errorf("unknown slowdown target %q (want %s, %s or %s)", s.Target, PodReady, NodeClaimReady, NodeReady)
	}
	if err := c.Create(ctx, obj); err != nil {
		return nil, fmt.Errorf("failed to create %T %s for the slowdown %s: %w", obj, obj.GetName(), s.Name(), err)
	}
	restore = func(ctx context.Context) error {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to remove the slowdown %s (%s): %w", s.Name(), obj.GetName(), err)
		}
		return wait(ctx, decoratorCache)
	}
	if err := wait(ctx, decoratorCache); err != nil {
		return nil, errors.Join(err, restore(context.WithoutCancel(ctx)))
	}
	return restore, nil
}

func wait(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
