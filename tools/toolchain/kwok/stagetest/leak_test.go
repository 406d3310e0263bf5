package stagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/kwok/metrics"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
	sigsyaml "sigs.k8s.io/yaml"
)

// usageFile is the cluster's simulated usage, the leak's ramp among it.
const usageFile = "../../../../fixtures/kwok-stages/base/usage.yaml"

// A memory-leak pod as the injector annotates it: 100Mi used, 20Mi more a
// second, against a 700Mi limit, so the leak fills it in 30 s, the period
// the injector gives the OOM stage as its delay (the stage file's own
// default, which this test reads).
const (
	used, rate, limit = 100 << 20, 20 << 20, 700 << 20
	period            = 30 * time.Second
	// pending is how long the pod waited for its node before it ran.
	pending = 12 * time.Second
)

// The OOM kill and the usage it stands for are one clock: the pinned
// KWOK's OOM stage kills a period after the container (re)started, and
// the usage the pinned KWOK's CEL computes reaches the limit then, stays
// at it if the kill is late, and starts again from the constant usage at
// the restart. The usage used to ramp with the pod's age (SinceSecond()
// modulo the period), which started before the container ran and never
// restarted with it, so at a kill it stood anywhere between the two
// (330Mi of 700Mi in the first case here).
func TestMemoryLeakIsKilledAtItsLimit(t *testing.T) {
	usage := memoryUsage(t)
	cases := []struct {
		name string
		// started is how long before now KWOK's pod-ready stage started
		// the container; kills are when the OOM stage killed it, before now.
		started time.Duration
		kills   []time.Duration
		lo, hi  float64
	}{
		{"just before the first kill", period - 500*time.Millisecond, nil, limit - rate, limit},
		{"a first kill 10 s late (a busy machine)", period + 10*time.Second, nil, limit, limit + rate},
		{"a second after the first kill", period + time.Second, []time.Duration{time.Second}, used, used + 2*rate},
		{"just before the second kill", 2*period - 500*time.Millisecond, []time.Duration{period - 500*time.Millisecond}, limit - rate, limit},
	}
	for _, c := range cases {
		pod := leakingPod(t, c.started, c.kills...)
		got, err := usage.EvaluateFloat64(context.Background(), metrics.Data{Pod: pod, Container: &pod.Spec.Containers[0]})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got < c.lo || got > c.hi {
			t.Errorf("%s: usage %.0fMi, want %.0fMi to %.0fMi", c.name, got/(1<<20), c.lo/(1<<20), c.hi/(1<<20))
		}
	}
	// A pod not running yet leaks nothing.
	pod := leakingPod(t, -1)
	if got, err := usage.EvaluateFloat64(context.Background(), metrics.Data{Pod: pod, Container: &pod.Spec.Containers[0]}); err != nil || got != used {
		t.Errorf("a pending pod: usage %v (%v), want %d", got, err, used)
	}
}

// memoryUsage compiles usage.yaml's memory expression as KWOK's metrics
// server does (the real clock: SinceSecond() reads it whatever Now says).
func memoryUsage(t *testing.T) *metrics.Evaluator {
	t.Helper()
	b, err := os.ReadFile(usageFile)
	if err != nil {
		t.Fatal(err)
	}
	var cru v1alpha1.ClusterResourceUsage
	if err := sigsyaml.UnmarshalStrict(b, &cru); err != nil {
		t.Fatalf("%s: %v", usageFile, err)
	}
	if len(cru.Spec.Usages) != 1 || cru.Spec.Usages[0].Usage["memory"].Expression == nil {
		t.Fatalf("%s: want one usage with a memory expression", usageFile)
	}
	env, err := metrics.NewEnvironment(metrics.EnvironmentConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := env.Compile(*cru.Spec.Usages[0].Usage["memory"].Expression)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// leakingPod is a pod of the memory-leak fault now: created, started by
// KWOK's pod-ready stage started ago (a negative duration: not yet) and
// killed by the fault's OOM stage at each of kills ago, each stage
// chosen and rendered by the pinned KWOK's lifecycle with its clock at
// that moment.
func leakingPod(t *testing.T, started time.Duration, kills ...time.Duration) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	created := now.Add(-max(started, 0) - pending)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": "api-1", "namespace": "RUN", "uid": "u1", "creationTimestamp": created.UTC().Format(time.RFC3339),
			"labels": map[string]any{"nodeprint.dev/run": "RUN", "nodeprint.dev/workload": "WORKLOAD", "nodeprint.dev/fault": "memory-leak"},
			"annotations": map[string]any{
				"kwok.x-k8s.io/usage-memory":           fmt.Sprintf("%dMi", used>>20),
				"nodeprint.dev/leak-memory-per-second": fmt.Sprintf("%dMi", rate>>20),
				"nodeprint.dev/leak-period-seconds":    fmt.Sprint(int(period.Seconds())),
			},
		},
		"spec":   map[string]any{"nodeName": "RUN-node-1", "containers": []any{map[string]any{"name": "app", "image": "registry.k8s.io/pause:3.10"}}},
		"status": map[string]any{"phase": "Pending"},
	}}
	if started >= 0 {
		obj = next(t, ctx, obj, "pod-ready", now.Add(-started), 0)
		for _, k := range kills {
			obj = next(t, ctx, obj, "nodeprint-oom", now.Add(-k), period)
		}
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// next is obj after the stage KWOK chooses for it, which must be want
// (with its delay, when delay is set), done at the time at.
func next(t *testing.T, ctx context.Context, obj *unstructured.Unstructured, want string, at time.Time, delay time.Duration) *unstructured.Unstructured {
	t.Helper()
	stages, err := loadStages(ctx, filepath.Join(stagesDir, "oom.yaml"), obj)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := lifecycle.NewLifecycle(stages)
	if err != nil {
		t.Fatal(err)
	}
	event := &lifecycle.Event{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Data: obj}
	st, err := lc.Match(ctx, event)
	if err != nil || st == nil || st.Name() != want {
		t.Fatalf("KWOK chooses stage %v (%v) for the pod, want %s", st, err, want)
	}
	if delay > 0 {
		if d, ok, err := st.Delay(ctx, event, at); err != nil || !ok || d != delay {
			t.Fatalf("stage %s: delay %s (%v, %v), want %s", want, d, ok, err, delay)
		}
	}
	fm := gotpl.FuncMap{"Now": func() string { return at.UTC().Format(time.RFC3339Nano) }}
	for _, name := range []string{"NodeIP", "NodeName", "NodePort", "PodIP", "NodeIPWith", "PodIPWith", "now", "Version"} {
		fm[name] = placeholder(name)
	}
	for _, name := range []string{"NodeIPsWith", "PodIPsWith"} {
		fm[name] = func(args ...any) any { return []any{placeholder(name)(args...)} }
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.DoSteps(0, obj.GetFinalizers(), obj, gotpl.NewRenderer(fm),
		func(*internalversion.StageEvent) error { return nil },
		func() error { return fmt.Errorf("stage %s deletes the pod", want) },
		func(p *lifecycle.Patch) error {
			if p.Type != types.MergePatchType {
				return fmt.Errorf("stage %s: patch type %s, this test applies merge patches", want, p.Type)
			}
			doc, err = jsonpatch.MergePatch(doc, p.Data)
			return err
		},
		func(*lifecycle.Apply) error { return fmt.Errorf("stage %s applies an object", want) },
	)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(doc); err != nil {
		t.Fatal(err)
	}
	return out
}
