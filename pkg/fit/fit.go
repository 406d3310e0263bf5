// Package fit answers, with Karpenter's own instance-type model (the KWOK
// provider's catalog parser and Karpenter's requirement algebra), whether a
// pod fits some instance of a catalog at all, and whether it fits one that a
// NodePool allows. The difference is the line between an application that
// asks for too much (L3) and a policy that excludes what exists (L2).
package fit

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kwokcloudprovider "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/kwok/options"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/utils/resources"

	"github.com/nodeprint/nodeprint/pkg/filecache"
)

// Catalog is a catalog's instance types as Karpenter sees them.
type Catalog struct {
	types []*cloudprovider.InstanceType
}

// loaded caches parsed catalogs. The KWOK provider's parser writes to a
// package-level map, so two parses at once crash the process (seen with
// nodeprint run --parallel): the cache serialises parses, and a file parsed
// once is not parsed again while it is unchanged.
var loaded filecache.Cache[*Catalog]

// Load parses a catalog file as the KWOK provider does. The result is
// shared: a Catalog is read-only.
func Load(ctx context.Context, path string) (*Catalog, error) {
	return loaded.Load(path, func(path string) (*Catalog, error) {
		its, err := kwokcloudprovider.ConstructInstanceTypes(options.ToContext(ctx, &options.Options{InstanceTypesFilePath: path}))
		if err != nil {
			return nil, fmt.Errorf("failed to read catalog %s: %w", path, err)
		}
		return &Catalog{types: its}, nil
	})
}

// Largest is the largest CPU and memory capacity of any instance type.
func (c *Catalog) Largest() (cpu, memory resource.Quantity) {
	for _, it := range c.types {
		if q := it.Capacity[corev1.ResourceCPU]; q.Cmp(cpu) > 0 {
			cpu = q
		}
		if q := it.Capacity[corev1.ResourceMemory]; q.Cmp(memory) > 0 {
			memory = q
		}
	}
	return cpu, memory
}

// Result says how many instance types can hold one pod.
type Result struct {
	// Catalog counts the types whose allocatable resources hold the pod's
	// requests and whose labels meet the pod's well-known requirements
	// (architecture, OS, zone, capacity type, instance type).
	Catalog int `json:"catalog"`
	// NodePool counts those that the NodePool's requirements also allow.
	NodePool int `json:"nodePool"`
	// Sized counts the types whose allocatable resources hold the pod's
	// requests, whatever their labels: Sized > 0 with Catalog == 0 means
	// the pods select what no type offers, not that they are too large.
	Sized int `json:"sized,omitempty"`
	// Unoffered is, when Sized > 0 and Catalog == 0, the pod's well-known
	// requirements that no type large enough meets, for evidence.
	Unoffered string `json:"unoffered,omitempty"`
	// Largest names the largest type by CPU, for evidence.
	Largest string `json:"largest,omitempty"`
	// Example names a type that fits in the catalog (the smallest).
	Example string `json:"example,omitempty"`
}

// Check counts the types that can hold one pod of the template.
func (c *Catalog) Check(pod *corev1.PodTemplateSpec, np *karpv1.NodePool) Result {
	p := &corev1.Pod{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}
	podReqs := scheduling.NewPodRequirements(p)
	wellKnown := scheduling.NewRequirements()
	for key, r := range podReqs {
		if karpv1.WellKnownLabels.Has(key) {
			wellKnown.Add(r)
		}
	}
	requests := resources.RequestsForPods(p)
	// The NodePool's requirements select instance types; its template
	// labels are put on every node it launches, so they satisfy the pods'
	// node selectors but are not asked of the instance type.
	var npReqs, nodeLabels scheduling.Requirements
	if np != nil {
		npReqs = scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
		nodeLabels = scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
		nodeLabels.Add(scheduling.NewLabelRequirements(np.Spec.Template.Labels).Values()...)
	}
	type fitting struct {
		name string
		cpu  int64
	}
	var fits []fitting
	res := Result{}
	var largestCPU int64
	for _, it := range c.types {
		cpu := it.Capacity[corev1.ResourceCPU]
		if cpu.MilliValue() > largestCPU {
			largestCPU, res.Largest = cpu.MilliValue(), it.Name
		}
		if !resources.Fits(requests, it.Allocatable()) {
			continue
		}
		res.Sized++
		if err := it.Requirements.Compatible(wellKnown, scheduling.AllowUndefinedWellKnownLabels); err != nil {
			continue
		}
		if len(it.Offerings.Available().Compatible(wellKnown)) == 0 {
			continue
		}
		res.Catalog++
		fits = append(fits, fitting{it.Name, cpu.MilliValue()})
		if npReqs == nil {
			continue
		}
		if it.Requirements.Compatible(npReqs, scheduling.AllowUndefinedWellKnownLabels) != nil ||
			len(it.Offerings.Available().Compatible(npReqs)) == 0 {
			continue
		}
		if nodeLabels.Compatible(podReqs, scheduling.AllowUndefinedWellKnownLabels) != nil {
			continue
		}
		res.NodePool++
	}
	sort.Slice(fits, func(i, j int) bool {
		return fits[i].cpu < fits[j].cpu || fits[i].cpu == fits[j].cpu && fits[i].name < fits[j].name
	})
	if len(fits) > 0 {
		res.Example = fits[0].name
	}
	if res.Catalog == 0 && res.Sized > 0 {
		res.Unoffered = wellKnown.String()
	}
	return res
}

// Allocatable is each instance type's allocatable resources, by name.
func (c *Catalog) Allocatable() map[string]corev1.ResourceList {
	out := make(map[string]corev1.ResourceList, len(c.types))
	for _, it := range c.types {
		out[it.Name] = it.Allocatable()
	}
	return out
}

// Admits says whether a node the NodePool launches could carry the pod at
// all, by labels alone: the NodePool's requirements and template labels
// against the pod's node selector and required node affinity. It needs no
// catalog. nil: admitted; otherwise the incompatibility, in Karpenter's
// words.
func Admits(np *karpv1.NodePool, pod *corev1.PodTemplateSpec) error {
	p := &corev1.Pod{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}
	nodeLabels := scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
	nodeLabels.Add(scheduling.NewLabelRequirements(np.Spec.Template.Labels).Values()...)
	return nodeLabels.Compatible(scheduling.NewPodRequirements(p), scheduling.AllowUndefinedWellKnownLabels)
}

// Across is how a pod fits the NodePools it may go to: own's result (nil
// own: no NodePool, every type of the catalog), or, when one of others
// admits the pod and allows more types for it, that one's result. The
// pods may be served by any NodePool that admits them, so the best counts.
func Across(c *Catalog, pod *corev1.PodTemplateSpec, own *karpv1.NodePool, others []*karpv1.NodePool) Result {
	best := c.Check(pod, own)
	for _, np := range others {
		if Admits(np, pod) != nil {
			continue
		}
		if r := c.Check(pod, np); r.NodePool > best.NodePool {
			best = r
		}
	}
	return best
}
