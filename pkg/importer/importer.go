// Package importer writes a scenario from a live cluster: each workload of
// the namespaces asked for (Deployments, StatefulSets, ReplicaSets that no
// Deployment owns, Jobs that no CronJob owns) with its current replicas and
// the HPA that targets it, and the NodePools, as the files a scenario names
// (policy.nodePoolFile, workloads[].manifest). It only reads, and never
// Secrets or ConfigMaps.
package importer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// ErrInput marks an import refused for what it was asked (no namespace, a
// NodePool that does not exist, nothing to import): the caller's to fix.
var ErrInput = errors.New("bad import request")

// Options say what to import.
type Options struct {
	// Name is the scenario's name (default "imported").
	Name string
	// Namespaces are read (at least one).
	Namespaces []string
	// NodePool is the NodePool the scenario runs under (default: the one
	// whose nodes run most of the workloads' pods, else the only one).
	NodePool string
}

// Files are what Import writes, by path relative to the directory it is
// given: the scenario, the NodePools, one manifest per workload.
type Files map[string][]byte

// Result is the import.
type Result struct {
	Files Files
	// Scenario is the scenario file's path in Files.
	Scenario string
	// Notes say what could not be carried.
	Notes []string
}

// Import reads the cluster and returns the files of the scenario.
func Import(ctx context.Context, c client.Reader, o Options) (*Result, error) {
	if o.Name == "" {
		o.Name = "imported"
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 || len(o.Name) > 40 {
		return nil, fmt.Errorf("%w: scenario name %q: use 1 to 40 lowercase letters, digits and '-'", ErrInput, o.Name)
	}
	if len(o.Namespaces) == 0 {
		return nil, fmt.Errorf("%w: name the namespaces to import (-n NAMESPACE)", ErrInput)
	}
	var pools karpv1.NodePoolList
	if err := c.List(ctx, &pools); err != nil {
		return nil, fmt.Errorf("failed to list NodePools (is Karpenter installed?): %w", err)
	}
	if len(pools.Items) == 0 {
		return nil, fmt.Errorf("the cluster has no NodePool")
	}
	res := &Result{Files: Files{}, Scenario: repo.TeamAt("").Scenario(o.Name)}
	var ws []workload
	for _, ns := range o.Namespaces {
		found, notes, err := readNamespace(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		ws, res.Notes = append(ws, found...), append(res.Notes, notes...)
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("%w: no Deployment, StatefulSet, ReplicaSet or Job in namespace(s) %s", ErrInput, strings.Join(o.Namespaces, ", "))
	}
	pool, notes, err := choosePool(ctx, c, o.NodePool, pools.Items, ws)
	if err != nil {
		return nil, err
	}
	res.Notes = append(res.Notes, notes...)
	if err := res.write(o, pools.Items, pool, ws); err != nil {
		return nil, err
	}
	return res, nil
}

// workload is one object that makes pods, the HPA targeting it and the
// PodDisruptionBudget selecting its pods.
type workload struct {
	namespace, kind, name string
	obj                   client.Object
	hpa                   *autoscalingv2.HorizontalPodAutoscaler
	selector              *metav1.LabelSelector
	pdb                   *policyv1.PodDisruptionBudget
}

// readNamespace lists what makes pods in the namespace and their HPAs.
func readNamespace(ctx context.Context, c client.Reader, ns string) ([]workload, []string, error) {
	in := client.InNamespace(ns)
	var out []workload
	var notes []string
	deps := &appsv1.DeploymentList{}
	sts := &appsv1.StatefulSetList{}
	rss := &appsv1.ReplicaSetList{}
	jobs := &batchv1.JobList{}
	hpas := &autoscalingv2.HorizontalPodAutoscalerList{}
	pdbs := &policyv1.PodDisruptionBudgetList{}
	for _, l := range []client.ObjectList{deps, sts, rss, jobs, hpas, pdbs} {
		if err := c.List(ctx, l, in); err != nil {
			return nil, nil, fmt.Errorf("failed to list %T in namespace %s: %w", l, ns, err)
		}
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		out = append(out, workload{namespace: ns, kind: "Deployment", name: d.Name, obj: d, selector: d.Spec.Selector})
	}
	for i := range sts.Items {
		s := &sts.Items[i]
		out = append(out, workload{namespace: ns, kind: "StatefulSet", name: s.Name, obj: s, selector: s.Spec.Selector})
	}
	for i := range rss.Items {
		if r := &rss.Items[i]; metav1.GetControllerOf(r) == nil {
			out = append(out, workload{namespace: ns, kind: "ReplicaSet", name: r.Name, obj: r, selector: r.Spec.Selector})
		}
	}
	for i := range jobs.Items {
		if j := &jobs.Items[i]; metav1.GetControllerOf(j) == nil {
			out = append(out, workload{namespace: ns, kind: "Job", name: j.Name, obj: j, selector: j.Spec.Selector})
		} else {
			notes = append(notes, fmt.Sprintf("%s/Job/%s: left out, it belongs to a %s", ns, j.Name, metav1.GetControllerOf(j).Kind))
		}
	}
	for i := range hpas.Items {
		h := &hpas.Items[i]
		for j := range out {
			if w := &out[j]; h.Spec.ScaleTargetRef.Kind == w.kind && h.Spec.ScaleTargetRef.Name == w.name {
				w.hpa = h
			}
		}
	}
	for j := range out {
		w := &out[j]
		pdbNotes, err := w.choosePDB(pdbs.Items)
		if err != nil {
			return nil, nil, err
		}
		notes = append(notes, pdbNotes...)
	}
	return out, notes, nil
}

// choosePDB takes the PodDisruptionBudget that selects the workload's
// pods (their template's labels), as the disruption controller matches
// them. A pod under several budgets cannot be evicted at all; the import
// keeps none of them and says so.
func (w *workload) choosePDB(pdbs []policyv1.PodDisruptionBudget) ([]string, error) {
	tpl := podTemplateOf(w.obj).Labels
	var match []*policyv1.PodDisruptionBudget
	for i := range pdbs {
		b := &pdbs[i]
		selects, err := kube.PDBSelects(b, tpl)
		if err != nil {
			return nil, err
		}
		if selects {
			match = append(match, b)
		}
	}
	switch len(match) {
	case 0:
		return nil, nil
	case 1:
		w.pdb = match[0]
		return nil, nil
	}
	var names []string
	for _, b := range match {
		names = append(names, b.Name)
	}
	return []string{fmt.Sprintf("%s/%s/%s: its pods match %d PodDisruptionBudgets (%s), under which the API server evicts none; none is written",
		w.namespace, w.kind, w.name, len(match), strings.Join(names, ", "))}, nil
}

// choosePool is the NodePool the scenario runs under: the one asked for,
// or the one whose nodes run most of the workloads' pods, or the only one.
func choosePool(ctx context.Context, c client.Reader, want string, pools []karpv1.NodePool, ws []workload) (*karpv1.NodePool, []string, error) {
	byName := map[string]*karpv1.NodePool{}
	var names []string
	for i := range pools {
		byName[pools[i].Name] = &pools[i]
		names = append(names, pools[i].Name)
	}
	sort.Strings(names)
	if want != "" {
		if p := byName[want]; p != nil {
			return p, nil, nil
		}
		return nil, nil, fmt.Errorf("%w: no NodePool %q (the cluster has: %s)", ErrInput, want, strings.Join(names, ", "))
	}
	count, err := podsPerPool(ctx, c, ws)
	if err != nil {
		return nil, nil, err
	}
	best := ""
	for _, n := range names {
		if count[n] > count[best] {
			best = n
		}
	}
	switch {
	case best == "" && len(names) == 1:
		best = names[0]
	case best == "":
		return nil, nil, fmt.Errorf("%w: none of the workloads' pods runs on a node of a NodePool and the cluster has %d (%s): choose one with --nodepool", ErrInput, len(names), strings.Join(names, ", "))
	}
	var notes []string
	for _, n := range names {
		if n != best && count[n] > 0 {
			notes = append(notes, fmt.Sprintf("%d pod(s) run on NodePool %s; the scenario runs every workload under %s (choose another with --nodepool)", count[n], n, best))
		}
	}
	return byName[best], notes, nil
}

// podsPerPool counts the workloads' pods by the NodePool of their node.
func podsPerPool(ctx context.Context, c client.Reader, ws []workload) (map[string]int, error) {
	count := map[string]int{}
	nodePool := map[string]string{}
	for _, w := range ws {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil || w.selector == nil {
			continue
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(w.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("failed to list the pods of %s/%s: %w", w.namespace, w.name, err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			np, ok := nodePool[p.Spec.NodeName]
			if !ok {
				n := &corev1.Node{}
				if err := c.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, n); err == nil {
					np = n.Labels[karpv1.NodePoolLabelKey]
				}
				nodePool[p.Spec.NodeName] = np
			}
			if np != "" {
				count[np]++
			}
		}
	}
	return count, nil
}

// write lays the files out: nodepools.yaml with every NodePool, one
// manifest per workload (with its HPA), the scenario naming them.
func (r *Result) write(o Options, pools []karpv1.NodePool, pool *karpv1.NodePool, ws []workload) error {
	var docs [][]byte
	for i := range pools {
		b, err := manifest(&pools[i], "karpenter.sh/v1", "NodePool")
		if err != nil {
			return err
		}
		docs = append(docs, b)
	}
	r.Files["nodepools.yaml"] = joinDocuments(docs)
	var sc strings.Builder
	fmt.Fprintf(&sc, `# Written by nodeprint import from namespace(s) %s. Record its baseline with
# nodeprint record before you change anything; the catalog is KWOK's generic one unless you
# give your region's (nodeprint catalog from-ec2, spec.catalogFile).
apiVersion: %s
kind: %s
metadata:
  name: %s
spec:
  policy:
    nodePoolFile: ../nodepools.yaml
    nodePoolName: %s
  workloads:
`, strings.Join(o.Namespaces, ", "), scenario.APIVersion, scenario.Kind, o.Name, pool.Name)
	names := workloadNames(ws)
	for i, w := range ws {
		file := filepath.ToSlash(filepath.Join("workloads", w.namespace, strings.ToLower(w.kind)+"-"+w.name+".yaml"))
		b, err := workloadManifest(w)
		if err != nil {
			return err
		}
		r.Files[file] = b
		if names[i] != w.name {
			fmt.Fprintf(&sc, "  - name: %s\n    manifest: ../%s\n", names[i], file)
		} else {
			fmt.Fprintf(&sc, "  - manifest: ../%s\n", file)
		}
		r.Notes = append(r.Notes, droppedNotes(w)...)
	}
	r.Files[r.Scenario] = []byte(sc.String())
	return nil
}

// workloadNames names the workloads in the scenario: their own names, or
// <namespace>-<name> where two namespaces use one name (a run puts every
// workload in one namespace).
func workloadNames(ws []workload) []string {
	seen := map[string]int{}
	for _, w := range ws {
		seen[w.name]++
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.name
		if seen[w.name] > 1 {
			out[i] = w.namespace + "-" + w.name
		}
	}
	return out
}

func workloadManifest(w workload) ([]byte, error) {
	api := "apps/v1"
	if w.kind == "Job" {
		api = "batch/v1"
	}
	// The pods' annotations go too: checksums and tools' bookkeeping, or
	// anything else.
	b, err := manifest(w.obj, api, w.kind, "spec", "template", "metadata", "annotations")
	if err != nil {
		return nil, err
	}
	docs := [][]byte{b}
	if w.hpa != nil {
		h, err := manifest(w.hpa, "autoscaling/v2", "HorizontalPodAutoscaler")
		if err != nil {
			return nil, err
		}
		docs = append(docs, h)
	}
	if w.pdb != nil {
		p, err := manifest(w.pdb, "policy/v1", "PodDisruptionBudget")
		if err != nil {
			return nil, err
		}
		docs = append(docs, p)
	}
	return joinDocuments(docs), nil
}

// manifest is the object as a team would commit it: its name, namespace
// and labels, and its spec without the field at drop (if given); no
// status, no server-set metadata, no annotations (they can hold anything,
// credentials included).
func manifest(obj client.Object, apiVersion, kind string, drop ...string) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to write %s %s: %w", kind, obj.GetName(), err)
	}
	meta := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	if l := obj.GetLabels(); len(l) > 0 {
		meta["labels"] = l
	}
	out := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta, "spec": u["spec"]}
	if len(drop) > 0 {
		unstructured.RemoveNestedField(out, drop...)
	}
	b, err := yaml.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("failed to write %s %s: %w", kind, obj.GetName(), err)
	}
	return b, nil
}

func joinDocuments(docs [][]byte) []byte {
	var out []byte
	for _, d := range docs {
		out = append(out, "---\n"...)
		out = append(out, d...)
	}
	return out
}

// droppedNotes say what of a workload was not written: annotations (they
// can hold anything), and what its pods get from Secrets and ConfigMaps,
// which import never reads (a run needs none: no container runs).
func droppedNotes(w workload) []string {
	var notes []string
	id := w.namespace + "/" + w.kind + "/" + w.name
	if len(w.obj.GetAnnotations()) > 0 {
		notes = append(notes, id+": annotations not written")
	}
	tpl := podTemplateOf(w.obj)
	refs := 0
	for _, c := range append(tpl.Spec.InitContainers, tpl.Spec.Containers...) {
		refs += len(c.EnvFrom)
		for _, e := range c.Env {
			if e.ValueFrom != nil && (e.ValueFrom.SecretKeyRef != nil || e.ValueFrom.ConfigMapKeyRef != nil) {
				refs++
			}
		}
	}
	if refs > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d reference(s) to Secrets or ConfigMaps kept as names; their content was not read", id, refs))
	}
	return notes
}

func podTemplateOf(obj client.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	}
	return &corev1.PodTemplateSpec{}
}
