package run

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// scaleIn runs the scenario's scale-in after a settled scale-out: its
// steps, then a wait until Karpenter has nothing left to remove (every
// remaining pod Ready, nothing changed for the quiet period); what it
// removed on the way is the run's disruption fingerprint. The scale-out's
// fingerprint was taken before, so the scale-in changes nothing of it.
func (r *Runner) scaleIn(ctx context.Context, a *attempt, res *Result) error {
	si := a.s.Spec.ScaleIn
	if si == nil {
		return nil
	}
	if a.outcome != observe.Settled {
		res.Fingerprint.Disruption = &fingerprint.Disruption{Skipped: fmt.Sprintf("the scale-out %s: a scale-in compares what Karpenter removes from a settled cluster", a.outcome)}
		r.progress(fmt.Sprintf("run %s: scale-in skipped: the scale-out %s", a.id, a.outcome))
		return nil
	}
	// The scenario's steps, or the recorded ones of a replay.
	steps := a.objs.ScaleIn
	before, readable := r.readKarpenter(ctx)
	start := time.Now()
	applied := make([]time.Time, 0, len(steps))
	nodePools := fingerprint.NeverEdited(a.objs.NodePool.DeepCopy())
	for i, st := range steps {
		if err := wait(a.actx, st.After.Duration); err != nil {
			return r.scaleInStopped(ctx, a, err)
		}
		r.progress(fmt.Sprintf("run %s: scale-in step %d of %d: %s", a.id, i+1, len(steps), describeStep(st)))
		applied = append(applied, time.Now())
		if err := r.applyStep(a, st); err != nil {
			return fmt.Errorf("run %s: scale-in step %d (%s): %w", a.id, i+1, describeStep(st), err)
		}
		if st.NodePool != nil {
			nodePools = append(nodePools, fingerprint.NodePoolVersion{Since: applied[i], NodePool: a.objs.NodePool.DeepCopy()})
		}
	}
	// Stall at least Quiet: pods that stay as they are while Karpenter has
	// not yet noticed a lost instance must not end the wait before Quiet.
	a.ob.WaitSettled(a.actx, observe.Settle{
		Quiet: si.Settle.Quiet.Duration, Stall: max(a.s.Spec.Settle.Stall.Duration, si.Settle.Quiet.Duration), Timeout: max(si.Settle.Timeout.Duration-time.Since(start), time.Second),
		UntilGone: true,
		Progress:  func(msg string) { r.progress("run " + a.id + ": scale-in: " + msg) },
	})
	if err := r.scaleInStopped(ctx, a, nil); err != nil {
		return err
	}
	d, err := fingerprint.ComputeDisruption(a.ob.Snapshot(), a.cat, nodePools, start, applied)
	if err != nil {
		return fmt.Errorf("run %s: scale-in: %w", a.id, err)
	}
	if after, ok := r.readKarpenter(ctx); ok && readable {
		d.KarpenterRemoved = after.RemovedSince(before, a.objs.NodePool.Name)
		if len(res.Facts.SharedKarpenter) == 0 {
			d.KarpenterDecisions = after.DecisionsSince(before)
		}
	}
	res.Fingerprint.Disruption = d
	r.progress(fmt.Sprintf("run %s: scale-in %s: %d → %d node(s), $%.4f → $%.4f/h, %d decision(s)",
		a.id, d.Ending(), d.Before.Nodes, d.After.Nodes, d.Before.HourlyCost, d.After.HourlyCost, len(d.Decisions)))
	return nil
}

// scaleInStopped is the error that ended a scale-in early: an interrupt,
// an incident of the environment, else err (nil: none).
func (r *Runner) scaleInStopped(ctx context.Context, a *attempt, err error) error {
	return cmp.Or(r.waitEnded(ctx, a, " during its scale-in"), err)
}

// readKarpenter samples Karpenter's metrics; false where they cannot be read.
func (r *Runner) readKarpenter(ctx context.Context) (usage.Sample, bool) {
	url := r.karpenterMetrics()
	if url == "" {
		return usage.Sample{}, false
	}
	s, err := usage.Read(ctx, url)
	return s, err == nil
}

// wait waits d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func describeStep(st scenario.Step) string {
	switch {
	case st.Scale != nil:
		return fmt.Sprintf("scale %s to %d replica(s)", st.Scale.Workload, ptr.Deref(st.Scale.Replicas, 0))
	case st.NodePool != nil:
		b, _ := json.Marshal(st.NodePool)
		return "edit the NodePool: " + string(b)
	case st.Interrupt != nil:
		return fmt.Sprintf("terminate %d node(s) under Karpenter", st.Interrupt.Nodes)
	}
	return "remove " + st.Remove
}

// applyStep scales or removes one of the run's Deployments, or edits its
// NodePool.
func (r *Runner) applyStep(a *attempt, st scenario.Step) error {
	switch {
	case st.NodePool != nil:
		return r.editNodePool(a, st.NodePool)
	case st.Interrupt != nil:
		return r.interrupt(a, st.Interrupt.Nodes)
	}
	name := st.Remove
	if st.Scale != nil {
		name = st.Scale.Workload
	}
	var d *appsv1.Deployment
	for _, x := range a.objs.Deployments {
		if x.Name == name {
			d = x
		}
	}
	if d == nil {
		return fmt.Errorf("the run has no workload %q", name)
	}
	ctx, cancel := context.WithTimeout(a.actx, r.requestTimeout)
	defer cancel()
	if st.Remove != "" {
		return client.IgnoreNotFound(r.client.Delete(ctx, d, client.PropagationPolicy("Background")))
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(*st.Scale.Replicas)
	return r.client.Patch(ctx, d, patch)
}

// editNodePool applies a nodePool step's merge patch to the run's NodePool.
func (r *Runner) editNodePool(a *attempt, patch map[string]any) error {
	b, err := json.Marshal(map[string]any{"spec": patch})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(a.actx, r.requestTimeout)
	defer cancel()
	if err := r.client.Patch(ctx, a.objs.NodePool, client.RawPatch(types.MergePatchType, b)); err != nil {
		return fmt.Errorf("failed to edit NodePool %s: %w", a.objs.NodePool.Name, err)
	}
	return nil
}

// interrupt terminates n of the run's nodes, the first by name that are
// not being deleted: their finalizers are taken off (Karpenter's drain
// never runs) and the Node objects, which are the instances on KWOK, are
// deleted.
func (r *Runner) interrupt(a *attempt, n int) error {
	ctx, cancel := context.WithTimeout(a.actx, r.requestTimeout)
	defer cancel()
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.MatchingLabels{observe.RunLabel: a.id}); err != nil {
		return fmt.Errorf("failed to list the run's nodes: %w", err)
	}
	var live []corev1.Node
	for _, node := range nodes.Items {
		if node.DeletionTimestamp == nil {
			live = append(live, node)
		}
	}
	if len(live) < n {
		return fmt.Errorf("the run has %d node(s), fewer than the %d to terminate", len(live), n)
	}
	slices.SortFunc(live, func(x, y corev1.Node) int { return strings.Compare(x.Name, y.Name) })
	for i := range live[:n] {
		node := &live[i]
		if err := r.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			return fmt.Errorf("failed to take node %s's finalizers off: %w", node.Name, err)
		}
		if err := client.IgnoreNotFound(r.client.Delete(ctx, node, client.GracePeriodSeconds(0))); err != nil {
			return fmt.Errorf("failed to terminate node %s: %w", node.Name, err)
		}
	}
	return nil
}
