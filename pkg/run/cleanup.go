package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// cleanupRun deletes the run's objects and waits, on the observer's
// informers, until Karpenter has removed every NodeClaim of the run's
// NodePool and the namespace is gone. It waits no longer than Karpenter
// takes: a node's drain lasts at least Karpenter's minimum drain time (5 s).
// A component that fails under cleanup stops the waiting at once, as it
// stops a run's: a dead Karpenter removes no NodeClaim however long one
// waits. Cleanup then starts over once every component is up again, or
// leaves the objects in place when one stays down.
func (r *Runner) cleanupRun(ctx context.Context, objs *Objects, ob goneWaiter, since time.Time) error {
	r.progress("run " + objs.Namespace.Name + ": cleaning up")
	progress := func(msg string) { r.progress("run " + objs.Namespace.Name + ": cleaning up: " + msg) }
	for attempt := 1; ; attempt++ {
		if down := r.awaitRecovery(ctx, progress); len(down) > 0 {
			return fmt.Errorf("left namespace %s, NodePool %s and node class %s in place: %s still down (a temporary cluster is removed with them; "+
				"on a cluster you keep, `nodeprint cluster restart` the component and delete them)",
				objs.Namespace.Name, objs.NodePool.Name, objs.NodeClass.Name, strings.Join(down, ", "))
		}
		actx, stop := r.abortOnIncident(ctx, objs.Namespace.Name, time.Now())
		err := r.deleteRun(actx, objs, ob, progress)
		stop()
		var ee *EnvironmentError
		if ctx.Err() == nil && errors.As(context.Cause(actx), &ee) {
			if attempt < cleanupAttempts {
				progress("stopped waiting: " + supervise.Incidents(ee.Incidents))
				continue
			}
			return fmt.Errorf("gave up after %d attempts, a component failed under each: %s", attempt, supervise.Incidents(ee.Incidents))
		}
		if err != nil {
			return err
		}
		break
	}
	if r.watch != nil && len(r.watch.Since(since)) > 0 {
		return r.sweepAfterIncident(ctx, objs, progress)
	}
	return nil
}

// cleanupAttempts bounds how often cleanup starts over after a component
// failed under it and came back.
const cleanupAttempts = 3

// goneWaiter is what cleanup waits on: the run's observer.
type goneWaiter interface {
	WaitNodeClaimsGone(ctx context.Context, progress func(string)) error
	WaitNamespaceGone(ctx context.Context, progress func(string)) error
}

// deleteRun deletes the run's objects and waits until they are gone.
// Deleting again what is already being deleted is harmless, so cleanup
// can start it over.
func (r *Runner) deleteRun(ctx context.Context, objs *Objects, ob goneWaiter, progress func(string)) error {
	var errs []error
	del := func(o client.Object) {
		if err := r.client.Delete(ctx, o, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %T %s: %w", o, client.ObjectKeyFromObject(o), err))
		}
	}
	del(objs.Namespace)
	del(objs.NodePool)
	for _, np := range objs.OtherNodePools {
		del(np)
	}
	if err := ob.WaitNodeClaimsGone(ctx, progress); err != nil {
		errs = append(errs, fmt.Errorf("failed waiting for Karpenter to remove the NodeClaims of NodePool %s: %w", objs.NodePool.Name, err))
	}
	del(objs.NodeClass)
	// The namespace goes last: the namespace controller removes its pods
	// (KWOK deletes them) before it is gone. A run is cleaned up when none
	// of its objects is left.
	if err := ob.WaitNamespaceGone(ctx, progress); err != nil {
		errs = append(errs, fmt.Errorf("failed waiting for namespace %s to be deleted: %w", objs.Namespace.Name, err))
	}
	if len(errs) == 0 {
		if err := r.removeOrphanNodes(ctx, objs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeOrphanNodes deletes the nodes of the run's NodePool that outlived
// every NodeClaim, and waits until they are gone. KWOK's provider creates
// a launch's node itself: a launch still in flight when the NodePool was
// deleted (an HPA scaling up while cleanup began) can create its node after
// Karpenter removed the NodeClaim, and nothing of Karpenter's removes it.
// Seen once in a soak repetition, under memory-leak-hpa; every later spec
// of the suite then failed on that leftover.
func (r *Runner) removeOrphanNodes(ctx context.Context, objs *Objects) error {
	if err := r.untilNothingLeft(ctx, objs, 0); err != nil {
		return fmt.Errorf("failed to see the nodes of NodePool %s gone: %w", objs.NodePool.Name, err)
	}
	return nil
}

// quietAfterIncident is how long no NodeClaim or node of a run's deleted
// NodePool may appear before cleanup after an incident is done: longer
// than Karpenter's largest batch window (10 s).
const quietAfterIncident = 15 * time.Second

// sweepAfterIncident is cleanup's last step when a component failed
// during the run. The informers of the observer, of Karpenter and of the
// garbage collector were all cut off; what they saw gone is asked of the
// API server, and a NodeClaim that Karpenter launched for the deleted
// NodePool from its stale cache (seen once, in the spec that restarts the
// API server) is deleted, until none has appeared for quietAfterIncident.
func (r *Runner) sweepAfterIncident(ctx context.Context, objs *Objects, progress func(string)) error {
	progress(fmt.Sprintf("a component failed since the run began: asking the API server until namespace %s is gone and no NodeClaim or node of NodePool %s has appeared for %s",
		objs.Namespace.Name, objs.NodePool.Name, r.sweepQuiet))
	if err := r.untilNothingLeft(ctx, objs, r.sweepQuiet); err != nil {
		return fmt.Errorf("failed to see the run's objects gone after the incident: %w", err)
	}
	return nil
}

// untilNothingLeft asks the API server every second, deleting what
// deleteLeftovers deletes, until nothing of the run has been left for quiet
// (at once, for 0).
func (r *Runner) untilNothingLeft(ctx context.Context, objs *Objects, quiet time.Duration) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seen := time.Now()
	for {
		left, err := r.deleteLeftovers(ctx, objs)
		switch {
		case err != nil || len(left) > 0:
			seen = time.Now()
		case time.Since(seen) >= quiet:
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("left: %s", strings.Join(left, ", "))
			}
			return fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-tick.C:
		}
	}
}

// deleteLeftovers lists what of the run the API server still has (the
// list is what it returns), and deletes the NodeClaims of the run's NodePool that are not being deleted
// and, once none is left, the NodePool's nodes.
func (r *Runner) deleteLeftovers(ctx context.Context, objs *Objects) ([]string, error) {
	var left []string
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(objs.Namespace), &corev1.Namespace{}); err == nil {
		left = append(left, "Namespace/"+objs.Namespace.Name)
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	// remove deletes what is left and not being deleted yet.
	remove := func(o client.Object, kind, why string) error {
		if !o.GetDeletionTimestamp().IsZero() {
			return nil
		}
		r.progress(fmt.Sprintf("run %s: cleaning up: deleting %s %s, %s", objs.Namespace.Name, kind, o.GetName(), why))
		if err := r.client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete %s %s: %w", kind, o.GetName(), err)
		}
		return nil
	}
	// The NodeClaims and nodes of each of the run's NodePools; the nodes
	// once no NodeClaim of the run is left.
	var ncs []karpv1.NodeClaim
	var nodes []corev1.Node
	for _, np := range append([]*karpv1.NodePool{objs.NodePool}, objs.OtherNodePools...) {
		of := client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}
		nl := &karpv1.NodeClaimList{}
		if err := r.client.List(ctx, nl, of); err != nil {
			return nil, err
		}
		ncs = append(ncs, nl.Items...)
		nn := &corev1.NodeList{}
		if err := r.client.List(ctx, nn, of); err != nil {
			return nil, err
		}
		nodes = append(nodes, nn.Items...)
	}
	for i := range ncs {
		nc := &ncs[i]
		left = append(left, "NodeClaim/"+nc.Name)
		if err := remove(nc, "NodeClaim", "launched for the deleted NodePool"); err != nil {
			return nil, err
		}
	}
	for i := range nodes {
		n := &nodes[i]
		left = append(left, "Node/"+n.Name)
		// KWOK's provider creates the node of a launch; when the
		// NodeClaim was deleted first, nothing of Karpenter's owns the
		// node any more and it would stay Ready for good.
		if len(ncs) == 0 {
			if err := remove(n, "node", "whose NodeClaim is gone"); err != nil {
				return nil, err
			}
		}
	}
	return left, nil
}

// Leftovers lists the objects of any run that still exist: namespaces,
// NodePools and node classes with the run label, and the nodes and
// NodeClaims of run NodePools. After cleanup it must be empty.
func Leftovers(ctx context.Context, c client.Client) ([]string, error) {
	var out []string
	has := client.HasLabels{observe.RunLabel}
	nss := &corev1.NamespaceList{}
	if err := c.List(ctx, nss, has); err != nil {
		return nil, fmt.Errorf("failed to list namespaces: %w", err)
	}
	for _, n := range nss.Items {
		out = append(out, "Namespace/"+n.Name)
	}
	nps := &karpv1.NodePoolList{}
	if err := c.List(ctx, nps, has); err != nil {
		return nil, fmt.Errorf("failed to list NodePools: %w", err)
	}
	for _, n := range nps.Items {
		out = append(out, "NodePool/"+n.Name)
	}
	ncs := &karpv1.NodeClaimList{}
	if err := c.List(ctx, ncs); err != nil {
		return nil, fmt.Errorf("failed to list NodeClaims: %w", err)
	}
	for _, n := range ncs.Items {
		out = append(out, "NodeClaim/"+n.Name)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return nil, fmt.Errorf("failed to list nodes: %w", err)
	}
	for _, n := range nodes.Items {
		out = append(out, "Node/"+n.Name)
	}
	return out, nil
}
