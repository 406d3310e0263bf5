package scenario

import (
	"fmt"
	"sort"
	"strings"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// loadNodePoolFile reads the NodePool called name (or the file's only one)
// from a manifest as a team commits it. Its nodeClassRef is replaced by the
// run's KWOKNodeClass when the run is built; notes say what of the node
// class it names does not carry over.
func loadNodePoolFile(path, name string) (*karpv1.NodePool, []string, error) {
	docs, err := readManifest(path)
	if err != nil {
		return nil, nil, err
	}
	d, err := pick(path, docs, map[string]string{"NodePool": "karpenter.sh/v1"}, name, "karpenter.sh/v1 NodePool", "policy.nodePoolName")
	if err != nil {
		return nil, nil, err
	}
	np := &karpv1.NodePool{}
	if err := d.decode(path, np); err != nil {
		return nil, nil, err
	}
	return np, nodeClassNotes(docs, np), nil
}

// loadNodePools reads every NodePool of a manifest, sorted by name, and
// refuses two of one name (the API server would keep the last).
func loadNodePools(path string) ([]*karpv1.NodePool, []string, error) {
	docs, err := readManifest(path)
	if err != nil {
		return nil, nil, err
	}
	var out []*karpv1.NodePool
	var notes []string
	seen := map[string]bool{}
	for _, d := range docs {
		if d.Kind != "NodePool" || d.APIVersion != "karpenter.sh/v1" {
			continue
		}
		np := &karpv1.NodePool{}
		if err := d.decode(path, np); err != nil {
			return nil, nil, err
		}
		if seen[np.Name] {
			return nil, nil, fmt.Errorf("%s holds two NodePools called %q", path, np.Name)
		}
		seen[np.Name] = true
		out = append(out, np)
		notes = append(notes, nodeClassNotes(docs, np)...)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s holds no karpenter.sh/v1 NodePool (it holds: %s)", path, listDocs(docs))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, dedupe(notes), nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// nodeClassNotes says what becomes of the node class the NodePool names:
// on KWOK every run gets a KWOKNodeClass of its own, and none of an
// EC2NodeClass's fields (AMIs, subnets, security groups, the role, user
// data, block devices, kubelet settings) has a KWOK equivalent.
func nodeClassNotes(docs []*document, np *karpv1.NodePool) []string {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return nil
	}
	notes := []string{fmt.Sprintf("nodeClassRef %s/%s is replaced by the run's KWOKNodeClass", ref.Kind, ref.Name)}
	for _, d := range docs {
		if d.Kind != ref.Kind || d.Name != ref.Name {
			continue
		}
		var obj struct {
			Spec map[string]any `json:"spec"`
		}
		if err := d.decodeLoose(&obj); err != nil || len(obj.Spec) == 0 {
			return notes
		}
		fields := make([]string, 0, len(obj.Spec))
		for k := range obj.Spec {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		return append(notes, fmt.Sprintf("%s %s: ignored, no KWOK equivalent: %s", d.Kind, d.Name, strings.Join(fields, ", ")))
	}
	return notes
}

// LoadNodePools reads every karpenter.sh/v1 NodePool of a manifest (a file
// of one or more YAML documents, as a team commits them), strictly, sorted
// by name: what nodeprint forecast drift compares with the cluster.
func LoadNodePools(path string) ([]*karpv1.NodePool, error) {
	nps, _, err := loadNodePools(path)
	return nps, err
}
