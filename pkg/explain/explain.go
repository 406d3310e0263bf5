// Package explain applies the attribution rules, read-only, to a live
// cluster: for the workloads whose pods are pending, restarting or
// OOMKilled now, it observes their pods, their NodePool's NodeClaims and
// nodes and the events about them, and classifies each workload as a run
// would be classified (without a baseline, the rules that need one cannot
// fire). It creates, changes and deletes nothing.
package explain

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/facts"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/sop"
)

// systemNamespaces are left out unless asked for by name.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-public": true, "kube-node-lease": true, "karpenter": true}

type options struct {
	namespaces  []string
	catalogPath string
	health      func(context.Context) string
	timeout     time.Duration
}

// Option configures Explain.
type Option func(*options)

// InNamespaces limits Explain to these namespaces (default: every namespace
// but kube-system, kube-public, kube-node-lease and karpenter).
func InNamespaces(ns ...string) Option { return func(o *options) { o.namespaces = ns } }

// WithCatalog gives the instance catalog (a KWOK provider instance-types
// file), so that the fit signals (does a pending pod fit any instance, any
// the NodePool allows) and prices are available (default: none, and the
// rules that read them cannot fire).
func WithCatalog(path string) Option { return func(o *options) { o.catalogPath = path } }

// WithHealth checks the environment (as the runner does); default: none,
// the cluster is taken as healthy.
func WithHealth(f func(context.Context) string) Option { return func(o *options) { o.health = f } }

// WithTimeout bounds the whole read (default 60 s).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Workload is one troubled workload and its verdict.
type Workload struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	NodePool  string `json:"nodePool,omitempty"`
	// Pods are the workload's troubled pods, and Problems what is wrong
	// with them (pending, CrashLoopBackOff, OOMKilled, …) counted.
	Pods     []string       `json:"pods"`
	Problems map[string]int `json:"problems"`
	// Unadmitted says why no NodePool admits the workload's pods (their
	// node selector or required affinity asks for labels no NodePool's
	// nodes would carry); empty when one does or it is not known.
	Unadmitted string             `json:"unadmitted,omitempty"`
	Verdict    *attribute.Verdict `json:"verdict"`
	// Runbook is the deciding rule's runbook page; FirstCheck its first
	// command with this workload's names filled in.
	Runbook    string `json:"runbook,omitempty"`
	FirstCheck string `json:"firstCheck,omitempty"`
}

// Explain classifies every troubled workload.
func Explain(ctx context.Context, cfg *rest.Config, c client.Client, opts ...Option) ([]Workload, error) {
	o := &options{timeout: time.Minute}
	for _, f := range opts {
		f(o)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		return nil, fmt.Errorf("failed to list pods: %w", err)
	}
	var nodePools karpv1.NodePoolList
	if err := c.List(ctx, &nodePools); err != nil {
		return nil, fmt.Errorf("failed to list NodePools (is Karpenter installed?): %w", err)
	}
	byKey, templates := troubled(ctx, c, pods.Items, nodePools.Items, o.namespaces)
	var shapes *fit.Catalog
	var cat *catalog.Catalog
	if o.catalogPath != "" {
		var err error
		if shapes, err = fit.Load(ctx, o.catalogPath); err != nil {
			return nil, err
		}
		if cat, err = catalog.Load(o.catalogPath); err != nil {
			return nil, err
		}
	}
	rs, err := attribute.Rules()
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Workload, 0, len(keys))
	for _, k := range keys {
		w := byKey[k]
		if err := classify(ctx, cfg, c, w, templates[k], nodePools.Items, shapes, cat, rs, o); err != nil {
			return nil, err
		}
		out = append(out, *w)
	}
	return out, nil
}

// troubled groups the pods that have a problem by workload (namespace/name;
// in the namespaces asked for, or all but the system ones), with the
// NodePool that serves each and, for pending pods no NodePool admits, why;
// templates holds a troubled pod's spec per workload, for workloads that
// are not Deployments (StatefulSets, Jobs, bare pods).
func troubled(ctx context.Context, c client.Client, pods []corev1.Pod, pools []karpv1.NodePool, namespaces []string) (byKey map[string]*Workload, templates map[string]*corev1.PodTemplateSpec) {
	wanted := map[string]bool{}
	for _, ns := range namespaces {
		wanted[ns] = true
	}
	byKey, templates = map[string]*Workload{}, map[string]*corev1.PodTemplateSpec{}
	for i := range pods {
		p := &pods[i]
		if (len(wanted) > 0 && !wanted[p.Namespace]) || (len(wanted) == 0 && systemNamespaces[p.Namespace]) {
			continue
		}
		problem := Problem(p)
		if problem == "" {
			continue
		}
		key := p.Namespace + "/" + observe.WorkloadOf(p)
		w := byKey[key]
		if w == nil {
			w = &Workload{Namespace: p.Namespace, Name: observe.WorkloadOf(p), Problems: map[string]int{}}
			byKey[key] = w
			templates[key] = &corev1.PodTemplateSpec{ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: *p.Spec.DeepCopy()}
		}
		w.Pods = append(w.Pods, p.Name)
		w.Problems[problem]++
		if np := nodePoolOf(ctx, c, p, pools); np != "" && w.NodePool == "" {
			w.NodePool = np
		}
		if problem == "Pending" && w.NodePool == "" && w.Unadmitted == "" {
			_, w.Unadmitted = admission(p, pools)
		}
	}
	for _, w := range byKey {
		sort.Strings(w.Pods)
		if w.NodePool != "" {
			w.Unadmitted = ""
		}
	}
	return byKey, templates
}

// Problem says what is wrong with a pod now, or "" when nothing is.
func Problem(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded {
		return ""
	}
	if p.Spec.NodeName == "" {
		return "Pending"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return w.Reason
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
			return "OOMKilled"
		}
		if cs.RestartCount > 0 && !cs.Ready {
			return "Restarting"
		}
	}
	return ""
}

// nodePoolOf finds the NodePool a pod runs or would run on: its node's
// label, its node selector or affinity naming one, or the one NodePool that
// admits it.
func nodePoolOf(ctx context.Context, c client.Client, p *corev1.Pod, pools []karpv1.NodePool) string {
	if p.Spec.NodeName != "" {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n); err == nil && n.Labels[karpv1.NodePoolLabelKey] != "" {
			return n.Labels[karpv1.NodePoolLabelKey]
		}
	}
	if np := p.Spec.NodeSelector[karpv1.NodePoolLabelKey]; np != "" {
		return np
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, e := range t.MatchExpressions {
				if e.Key == karpv1.NodePoolLabelKey && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
					return e.Values[0]
				}
			}
		}
	}
	if admitting, _ := admission(p, pools); len(admitting) == 1 {
		return admitting[0]
	}
	return ""
}

// admission names the NodePools whose nodes could carry the pod, by its
// node selector and required affinity against their requirements and
// template labels, and, when none does, why each refuses it.
func admission(p *corev1.Pod, pools []karpv1.NodePool) (admitting []string, refused string) {
	if len(pools) == 0 {
		return nil, "there is no NodePool"
	}
	tpl := &corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
	var why []string
	for i := range pools {
		if err := fit.Admits(&pools[i], tpl); err != nil {
			why = append(why, pools[i].Name+": "+err.Error())
		} else {
			admitting = append(admitting, pools[i].Name)
		}
	}
	if len(admitting) > 0 {
		return admitting, ""
	}
	return nil, strings.Join(why, "; ")
}

// fitAcross is the workload's fit with its NodePool, or, when it is not
// known which NodePool serves it, with the best of the NodePools that
// admit it (the pods may go to any). With none admitting it, no NodePool
// allows any type.
func fitAcross(shapes *fit.Catalog, tpl *corev1.PodTemplateSpec, np *karpv1.NodePool, pools []karpv1.NodePool) fit.Result {
	if np != nil {
		return shapes.Check(tpl, np)
	}
	others := make([]*karpv1.NodePool, len(pools))
	for i := range pools {
		others[i] = &pools[i]
	}
	return fit.Across(shapes, tpl, nil, others)
}

// classify observes the workload's pods as they are now, reads the facts
// a run would read at its end, and classifies them without a baseline.
func classify(ctx context.Context, cfg *rest.Config, c client.Client, w *Workload, podTemplate *corev1.PodTemplateSpec, pools []karpv1.NodePool, shapes *fit.Catalog, cat *catalog.Catalog, rs *attribute.RuleSet, o *options) error {
	snap, err := observeNow(ctx, cfg, w)
	if err != nil {
		return err
	}
	fp, err := fingerprint.Compute(snap, cat)
	if err != nil {
		return fmt.Errorf("failed to fingerprint %s/%s: %w", w.Namespace, w.Name, err)
	}
	f, err := liveFacts(ctx, c, w, podTemplate, pools, shapes, snap, o)
	if err != nil {
		return err
	}
	v, err := attribute.Classify(rs, &attribute.Input{Scenario: w.Namespace + "/" + w.Name, Observed: fp, Observation: snap, Facts: f})
	if err != nil {
		return err
	}
	w.Verdict = v
	if v.Rule != "" {
		w.Runbook = report.RunbookPage(v.Rule)
		w.FirstCheck = firstCheck(rs, v.Rule, w, snap)
	}
	return nil
}

// observeNow is the workload's pods, nodes and NodeClaims as they are,
// with the observation's window from its oldest pod to now.
func observeNow(ctx context.Context, cfg *rest.Config, w *Workload) (*observe.Observation, error) {
	ob, err := observe.Start(ctx, cfg, observe.Target{Run: w.Namespace, Namespace: w.Namespace, NodePool: w.NodePool, Live: true})
	if err != nil {
		return nil, fmt.Errorf("failed to observe %s/%s: %w", w.Namespace, w.Name, err)
	}
	snap := ob.Snapshot()
	ob.Stop()
	// Only this workload's pods: the namespace may hold others.
	for name, p := range snap.Pods {
		if p.Workload != w.Name {
			delete(snap.Pods, name)
		}
	}
	for _, p := range snap.Pods {
		if snap.Start.IsZero() || p.Created.Before(snap.Start) {
			snap.Start = p.Created
		}
	}
	snap.End = time.Now()
	return snap, nil
}

// liveFacts reads the workload's facts through the calls a run reads its
// own with (pkg/facts). What was applied is not known on a live cluster:
// the replicas show no growth.
func liveFacts(ctx context.Context, c client.Client, w *Workload, podTemplate *corev1.PodTemplateSpec, pools []karpv1.NodePool, shapes *fit.Catalog,
	snap *observe.Observation, o *options) (attribute.Facts, error) {
	f := facts.New()
	if o.health != nil {
		f.Health = o.health(ctx)
	}
	if w.NodePool != "" {
		facts.ReadNodePool(ctx, c, &f, w.NodePool, nil)
	}
	tpl := podTemplate
	if r, dtpl, found := facts.ReadReplicas(ctx, c, w.Namespace, w.Name, nil); found {
		tpl, f.Replicas[w.Name] = dtpl, r
	}
	f.Unadmitted = map[string]string{}
	if w.Unadmitted != "" {
		f.Unadmitted[w.Name] = w.Unadmitted
	}
	if tpl != nil {
		f.Workloads[w.Name] = tpl
		if shapes != nil {
			f.Fit[w.Name] = fitAcross(shapes, tpl, f.NodePool, pools)
		}
	}
	var err error
	if shapes != nil {
		f.Allocatable = shapes.Allocatable()
	} else if f.Allocatable, err = facts.NodeAllocatable(ctx, c, snap); err != nil {
		return f, err
	}
	f.PodUsage = facts.PodUsage(ctx, c, w.Namespace)
	return f, nil
}

// firstCheck is the rule's first command with the workload's names filled
// in: its namespace, a NotReady-first node as for a run, and its own
// NodePool (not one named after the namespace).
func firstCheck(rs *attribute.RuleSet, rule string, w *Workload, snap *observe.Observation) string {
	r, ok := rs.Rule(rule)
	if !ok || len(r.Checks) == 0 {
		return ""
	}
	vars := sop.VarsFor(w.Namespace, snap)
	vars.NodePool = w.NodePool
	if cmd, err := sop.Expand(r.Checks[0].Command, vars); err == nil {
		return cmd
	}
	return r.Checks[0].Command
}
