package faults

import (
	"context"
	"errors"
	"fmt"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// stages creates cluster objects for a fault and deletes them on Restore.
type stages struct {
	b       *base
	created []client.Object
}

func (s *stages) create(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range s.b.labels() {
			l[k] = v
		}
		o.SetLabels(l)
		if err := s.b.t.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("failed to create %s %s for fault %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), s.b.def.Name, err)
		}
		s.created = append(s.created, o)
	}
	return nil
}

// Restore deletes what create made, newest first.
func (s *stages) Restore(ctx context.Context) error {
	var errs []error
	for i := len(s.created) - 1; i >= 0; i-- {
		o := s.created[i]
		if err := s.b.t.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s %s of fault %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), s.b.def.Name, err))
			continue
		}
	}
	s.created = nil
	return errors.Join(errs...)
}

func stage(name string, spec map[string]any) client.Object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
	return u
}

func expr(key, op string, values ...string) map[string]any {
	m := map[string]any{"key": key, "operator": op}
	if len(values) > 0 {
		vs := make([]any, len(values))
		for i, v := range values {
			vs[i] = v
		}
		m["values"] = vs
	}
	return m
}

// podSelector selects the fault's pods of one workload of one run.
func podSelector(run, workload, fault string, phase string, more ...map[string]any) map[string]any {
	exprs := []any{
		expr(`.metadata.labels["`+observe.RunLabel+`"]`, "In", run),
		expr(`.metadata.labels["nodeprint.dev/workload"]`, "In", workload),
		expr(`.metadata.labels["`+Label+`"]`, "In", fault),
		expr(".metadata.deletionTimestamp", "DoesNotExist"),
		expr(".status.phase", "In", phase),
	}
	for _, m := range more {
		exprs = append(exprs, m)
	}
	return map[string]any{"matchExpressions": exprs}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// A weight above zero makes KWOK prefer the stage over its own, which have none.
const faultWeight = 10000

// oomStage restarts a leaking workload's containers as OOMKilled every
// period: the time the leak takes to fill the memory limit.
func oomStage(run, workload string, period time.Duration) client.Object {
	return podStage("nodeprint-oom-"+run, podSelector(run, workload, "memory-leak", "Running"), period, `{{ $now := Now }}
containerStatuses:
{{ range $index, $item := .status.containerStatuses }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: true
  started: true
  restartCount: {{ add (or $item.restartCount 0) 1 }}
  lastState:
    terminated:
      exitCode: 137
      reason: OOMKilled
      message: "memory limit reached (nodeprint fault memory-leak)"
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
`)
}

// notReadyPod starts a pod status template: scheduled and initialised, its
// containers not ready (the stage's template goes on with containerStatuses).
const notReadyPod = `{{ $now := Now }}
conditions:
- type: Initialized
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "False"
  reason: ContainersNotReady
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "False"
  reason: ContainersNotReady
  lastTransitionTime: {{ $now | Quote }}
- type: PodScheduled
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
`

// podStage is a pod stage of a fault: it wins over KWOK's own pod stages
// (see faultWeight) and applies template after delay, again while the pod
// still matches.
func podStage(name string, selector map[string]any, delay time.Duration, template string) client.Object {
	return stage(name, map[string]any{
		"resourceRef": map[string]any{"apiGroup": "v1", "kind": "Pod"},
		"selector":    selector,
		"weight":      int64(faultWeight),
		"delay":       map[string]any{"durationMilliseconds": ms(delay)},
		"next":        map[string]any{"statusTemplate": template},
	})
}

// crashLoopStage makes a workload's running containers exit with an error
// every interval and wait in CrashLoopBackOff.
func crashLoopStage(run, workload string, v Values) client.Object {
	return crashLoop(run, workload, v.Duration("interval"))
}

// imagePullStage keeps a workload's scheduled pods waiting for their image.
func imagePullStage(run, workload string, v Values) client.Object {
	return imagePull(run, workload, v["image"])
}

func crashLoop(run, workload string, interval time.Duration) client.Object {
	return podStage("nodeprint-crash-loop-"+run, podSelector(run, workload, "crash-loop", "Running"), interval, notReadyPod+`containerStatuses:
{{ range $index, $item := .status.containerStatuses }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: false
  started: false
  restartCount: {{ add (or $item.restartCount 0) 1 }}
  lastState:
    terminated:
      exitCode: 1
      reason: Error
      message: "container exited (nodeprint fault crash-loop)"
      startedAt: {{ $now | Quote }}
      finishedAt: {{ $now | Quote }}
  state:
    waiting:
      reason: CrashLoopBackOff
      message: "back-off restarting failed container (nodeprint fault crash-loop)"
{{ end }}
`)
}

func imagePull(run, workload, image string) client.Object {
	return podStage("nodeprint-image-pull-"+run,
		podSelector(run, workload, "image-pull-failure", "Pending", expr(".spec.nodeName", "Exists")), 5*time.Second, notReadyPod+`containerStatuses:
{{ range $index, $item := .spec.containers }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    waiting:
      reason: ImagePullBackOff
      message: {{ printf "Back-off pulling image %q (nodeprint fault image-pull-failure)" $item.image | Quote }}
{{ end }}
`)
}

// nodeNotReady turns the run's nodes NotReady some time after they became
// Ready (and keeps them so), as KWOK's own node chaos stage does.
func nodeNotReady(run string, after time.Duration) client.Object {
	return stage("nodeprint-node-not-ready-"+run, map[string]any{
		"resourceRef": map[string]any{"apiGroup": "v1", "kind": "Node"},
		"selector": map[string]any{"matchExpressions": []any{
			expr(`.metadata.labels["karpenter.sh/nodepool"]`, "In", run),
			// Selecting on the phase, not on Ready=True, keeps the stage
			// matching once the node is NotReady: KWOK's node-initialize
			// stage (no weight) would otherwise heal it at once.
			expr(".status.phase", "In", "Running"),
		}},
		"weight": int64(faultWeight),
		"delay":  map[string]any{"durationMilliseconds": ms(after)},
		"next": map[string]any{"statusTemplate": `{{ $now := Now }}
conditions:
{{ range NodeConditions }}
{{ if eq .type "Ready" }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: "kubelet stopped posting node status (nodeprint fault node-not-ready)"
  reason: NodeStatusUnknown
  status: "False"
  type: Ready
{{ else }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
{{ end }}
`},
	})
}
