// Package inputs records what a run applies, normalised so that two runs of
// one scenario compare equal unless an input changed: the NodePool and node
// class specs, each workload's pod template, HPA and PodDisruptionBudget, the instance catalog,
// and the Karpenter that ran them. Baselines store it; verification diffs
// the run's inputs against the baseline's path by path, so that a change
// (a NodePool edit, new requests, another Karpenter) is named beside the
// fingerprint diff and can be attributed to the layer that owns it.
package inputs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Inputs are a run's inputs as applied, with the run's own names taken out.
type Inputs struct {
	// NodePool and NodeClass are the specs as JSON objects.
	NodePool  map[string]any `json:"nodePool"`
	NodeClass map[string]any `json:"nodeClass"`
	// OtherNodePools are the specs of a scenario's other NodePools
	// (policy.allNodePools) by their name in the scenario's file.
	OtherNodePools map[string]map[string]any `json:"otherNodePools,omitempty"`
	// Workloads are by name.
	Workloads map[string]Workload `json:"workloads"`
	// Catalog is the instance catalog's name and sha256.
	Catalog Catalog `json:"catalog"`
	// Karpenter is the build and settings that ran.
	Karpenter Karpenter `json:"karpenter"`
	// ScaleIn are the scale-in's steps (scenario.Step as JSON objects), in
	// order; none for a scenario without one.
	ScaleIn []map[string]any `json:"scaleIn,omitempty"`
}

// Workload is one workload's pod template, replicas, HPA and
// PodDisruptionBudget (its spec without the selector, which is the
// workload's own).
type Workload struct {
	Replicas int32          `json:"replicas"`
	Template map[string]any `json:"template"`
	HPA      map[string]any `json:"hpa,omitempty"`
	PDB      map[string]any `json:"pdb,omitempty"`
}

// Catalog names the instance catalog.
type Catalog struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// Karpenter is the Karpenter build and its non-default settings.
type Karpenter struct {
	Version string `json:"version"`
	// Binary is the sha256 of the binary that ran ("" where unknown, as
	// on a cluster nodeprint did not start).
	Binary   string            `json:"binary,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
}

// Object turns a typed spec into the JSON object inputs store, with every
// occurrence of the run id replaced by RUN and the keys in removeLabels
// dropped from every map (the run label on selectors and templates).
func Object(v any, runID string, removeLabels ...string) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("failed to encode input: %w", err)
	}
	if runID != "" {
		b = []byte(strings.ReplaceAll(string(b), runID, "RUN"))
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("failed to decode input: %w", err)
	}
	drop := map[string]bool{}
	for _, k := range removeLabels {
		drop[k] = true
	}
	prune(out, drop)
	return out, nil
}

// prune removes the dropped keys and what is left empty by it, and the
// zero values encoding/json keeps (creationTimestamp: null, resources: {}).
func prune(v any, drop map[string]bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if drop[k] || prune(e, drop) {
				delete(x, k)
			}
		}
		return len(x) == 0
	case []any:
		for _, e := range x {
			prune(e, drop)
		}
		return len(x) == 0
	case nil:
		return true
	}
	return false
}

// Change is one input that differs, by path.
type Change struct {
	// Path names the input: nodePool.requirements[topology.kubernetes.io/zone],
	// workloads.api.containers[api].resources.requests.cpu, karpenter.version.
	Path string `json:"path"`
	// Was and Now are the values ("" : absent).
	Was string `json:"was"`
	Now string `json:"now"`
}

func (c Change) String() string {
	return fmt.Sprintf("%s: %s → %s", c.Path, orAbsent(c.Was), orAbsent(c.Now))
}

func orAbsent(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Kind is what a change touches, each owned by a layer.
type Kind string

// The kinds of input, in the decision order of their layers.
const (
	KindCatalog   Kind = "catalog"   // what the cloud offers: L1
	KindPolicy    Kind = "policy"    // the NodePool or node class: L2
	KindKarpenter Kind = "karpenter" // Karpenter's version, binary or settings: L2
	KindWorkload  Kind = "workload"  // a pod template, replicas, HPA or PDB: L3
)

// Kind says what the change touches.
func (c Change) Kind() Kind {
	switch {
	case strings.HasPrefix(c.Path, "catalog."):
		return KindCatalog
	case strings.HasPrefix(c.Path, "karpenter."):
		return KindKarpenter
	case strings.HasPrefix(c.Path, "workloads."), strings.HasPrefix(c.Path, "scaleIn."):
		// How the load goes away (a scale-in's steps) is the workloads'.
		return KindWorkload
	default:
		return KindPolicy
	}
}

// Diff lists what changed from was to now, by path in order. A nil side
// has nothing to compare: Diff returns nil.
func Diff(was, now *Inputs) []Change {
	if was == nil || now == nil {
		return nil
	}
	a, b := map[string]string{}, map[string]string{}
	was.flatten(a)
	now.flatten(b)
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	var out []Change
	for p := range paths {
		if a[p] != b[p] {
			out = append(out, Change{Path: p, Was: a[p], Now: b[p]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Of keeps the changes of one kind.
func Of(changes []Change, k Kind) []Change {
	var out []Change
	for _, c := range changes {
		if c.Kind() == k {
			out = append(out, c)
		}
	}
	return out
}

func (in *Inputs) flatten(out map[string]string) {
	flatten("nodePool", hoistTemplate(in.NodePool), out)
	flatten("nodeClass", in.NodeClass, out)
	for name, np := range in.OtherNodePools {
		flatten("otherNodePools."+name, hoistTemplate(np), out)
	}
	for name, w := range in.Workloads {
		prefix := "workloads." + name
		out[prefix+".replicas"] = fmt.Sprint(w.Replicas)
		// The pod spec is what matters: template.spec.containers[x] reads
		// as workloads.<name>.containers[x].
		tpl := map[string]any{}
		for k, v := range w.Template {
			tpl[k] = v
		}
		if spec, ok := tpl["spec"].(map[string]any); ok {
			delete(tpl, "spec")
			for k, v := range spec {
				tpl[k] = v
			}
		}
		flatten(prefix, tpl, out)
		if w.HPA != nil {
			flatten(prefix+".hpa", w.HPA, out)
		}
		if w.PDB != nil {
			flatten(prefix+".pdb", w.PDB, out)
		}
	}
	for i, st := range in.ScaleIn {
		flatten(fmt.Sprintf("scaleIn.steps[%d]", i), st, out)
	}
	out["catalog.name"] = in.Catalog.Name
	out["catalog.digest"] = in.Catalog.Digest
	out["karpenter.version"] = in.Karpenter.Version
	if in.Karpenter.Binary != "" {
		out["karpenter.binary"] = in.Karpenter.Binary
	}
	for k, v := range in.Karpenter.Settings {
		out["karpenter.settings."+k] = v
	}
}

// hoistTemplate reads a NodePool spec with its template's spec and
// metadata at the top (nodePool.requirements[…], nodePool.labels.team),
// as people name them.
func hoistTemplate(np map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range np {
		out[k] = v
	}
	tpl, ok := out["template"].(map[string]any)
	if !ok {
		return out
	}
	delete(out, "template")
	for k, v := range tpl {
		switch k {
		case "spec":
			if spec, ok := v.(map[string]any); ok {
				for sk, sv := range spec {
					out[sk] = sv
				}
			}
		case "metadata":
			if md, ok := v.(map[string]any); ok {
				for mk, mv := range md {
					out[mk] = mv
				}
			}
		default:
			out["template."+k] = v
		}
	}
	return out
}

// flatten writes v's leaves by path. Lists of objects with a key or name
// are indexed by it (requirements[topology.kubernetes.io/zone],
// containers[api]), and a requirement reads "In [a b c]"; lists of
// scalars read as one value.
func flatten(path string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			flatten(path+"."+k, e, out)
		}
	case []any:
		if scalars(x) {
			out[path] = scalarList(x)
			return
		}
		for i, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				flatten(fmt.Sprintf("%s[%d]", path, i), e, out)
				continue
			}
			id := fmt.Sprintf("%d", i)
			if k, ok := m["key"].(string); ok {
				id = k
			} else if n, ok := m["name"].(string); ok {
				id = n
			}
			if op, ok := m["operator"].(string); ok && len(m) <= 4 {
				// A requirement: key, operator, values (and minValues).
				val := op
				if vs, ok := m["values"].([]any); ok {
					val += " " + scalarList(vs)
				}
				if mv, ok := m["minValues"]; ok {
					val += fmt.Sprintf(" (minValues %v)", mv)
				}
				out[fmt.Sprintf("%s[%s]", path, id)] = val
				continue
			}
			rest := map[string]any{}
			for k, e := range m {
				if k != "key" && k != "name" || id == fmt.Sprintf("%d", i) {
					rest[k] = e
				}
			}
			flatten(fmt.Sprintf("%s[%s]", path, id), rest, out)
		}
	case nil:
	default:
		out[path] = fmt.Sprint(x)
	}
}

func scalars(xs []any) bool {
	for _, x := range xs {
		switch x.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func scalarList(xs []any) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Summary is the changes in one line, at most n of them named.
func Summary(changes []Change, n int) string {
	if len(changes) == 0 {
		return "no input changed"
	}
	parts := []string{}
	for i, c := range changes {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(changes)-n))
			break
		}
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}
