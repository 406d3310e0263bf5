// Package fit answers, with Karpenter's own instance-type model (the KWOK
// provider's catalog parser and Karpenter's requirement algebra), whether a
// pod fits some instance of a catalog at all, and whether it fits one that a
// NodePool allows. The difference is the line between an application that
// asks for too much (L3) and a policy that excludes what exists (L2).
package fit

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"

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
	// Blocked names, when NodePool is 0 and Catalog is not, the NodePool
	// field that keeps the fitting types out, as Karpenter checks it: its
	// taints (spec.template.spec.taints) or its requirements.
	Blocked string `json:"blocked,omitempty"`
	// Limited names, when NodePool is not 0, the spec.limits resource
	// whose headroom (the limit less status.resources) is below the
	// capacity of every type the NodePool allows that holds a pod:
	// Karpenter launches none of them.
	Limited string `json:"limited,omitempty"`
}

// fitting is an instance type that holds the pod, with why the NodePool
// keeps it out or over its limits ("" when it does not).
type fitting struct {
	name      string
	cpu       int64
	excluded  string
	overLimit string
}

// Check counts the types that can hold one pod of the template, and
// which of them the NodePool admits as Karpenter does: its taints, its
// requirements and template labels, and (Limited) what its limits leave
// of every resource. Its readiness is the node-class rules' (Refuses).
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
	var refused error
	if np != nil {
		refused = Refuses(np, p)
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
		f := fitting{name: it.Name, cpu: cpu.MilliValue()}
		if np != nil {
			f.excluded, f.overLimit = admitType(np, it, podReqs, refused), overLimits(np, it)
		}
		fits = append(fits, f)
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
	if np != nil {
		res.nodePool(fits)
	}
	return res
}

// nodePool counts the fitting types the NodePool admits and, where that
// is none or all are over its limits, names the field that blocks
// (smallest type first).
func (res *Result) nodePool(fits []fitting) {
	var blocked, limited string
	within := 0
	for _, f := range fits {
		switch {
		case f.excluded != "":
			blocked = cmp.Or(blocked, f.excluded)
		case f.overLimit != "":
			res.NodePool++
			limited = cmp.Or(limited, fmt.Sprintf("%s, the smallest type the NodePool allows that holds a pod", f.overLimit))
		default:
			res.NodePool++
			within++
		}
	}
	if res.NodePool == 0 {
		res.Blocked = blocked
	}
	if res.NodePool > 0 && within == 0 {
		res.Limited = limited
	}
}

// admitType says why the NodePool keeps the type out for the pod, naming
// the field ("" when it does not): refused (Refuses) first, then its
// requirements, then its template labels against the pod's selectors.
func admitType(np *karpv1.NodePool, it *cloudprovider.InstanceType, podReqs scheduling.Requirements, refused error) string {
	if refused != nil {
		return refused.Error()
	}
	npReqs := scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
	if err := it.Requirements.Compatible(npReqs, scheduling.AllowUndefinedWellKnownLabels); err != nil {
		return fmt.Sprintf("spec.template.spec.requirements exclude %s: %v", it.Name, err)
	}
	if len(it.Offerings.Available().Compatible(npReqs)) == 0 {
		return fmt.Sprintf("spec.template.spec.requirements leave %s no available offering", it.Name)
	}
	// The template labels are put on every node the NodePool launches, so
	// they satisfy the pods' node selectors but are not asked of the type.
	nodeLabels := scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
	nodeLabels.Add(scheduling.NewLabelRequirements(np.Spec.Template.Labels).Values()...)
	if err := nodeLabels.Compatible(podReqs, scheduling.AllowUndefinedWellKnownLabels); err != nil {
		return "spec.template.spec.requirements and spec.template.metadata.labels do not meet the pod's node selector or affinity: " + err.Error()
	}
	return ""
}

// overLimits names the spec.limits resources whose headroom is below the
// type's capacity, as Karpenter filters the types it launches
// (filterByRemainingResources); "" when the type fits within every one.
func overLimits(np *karpv1.NodePool, it *cloudprovider.InstanceType) string {
	var over []string
	for _, name := range sortedResources(np.Spec.Limits) {
		limit := np.Spec.Limits[name]
		headroom := limit.DeepCopy()
		used := np.Status.Resources[name]
		headroom.Sub(used)
		if capacity := it.Capacity[name]; capacity.Cmp(headroom) > 0 {
			over = append(over, fmt.Sprintf("spec.limits.%s: %s left (limit %s, in use %s), %s has %s", name, headroom.String(), limit.String(), used.String(), it.Name, capacity.String()))
		}
	}
	return strings.Join(over, "; ")
}

func sortedResources(l karpv1.Limits) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Refuses is why Karpenter leaves the NodePool out for the pod whatever
// the instance type, naming the field: a taint the pod does not tolerate
// (spec.template.spec.taints; startup taints are not asked to be
// tolerated). nil: none. A NodePool that is not ready (its node class
// missing or not ready) is not an instance-type question: the node-class
// rules read it (L2-nodeclass-missing, or inconclusive where node classes
// cannot be read), and counting its types as excluded named the
// requirements rule for a missing node class.
func Refuses(np *karpv1.NodePool, p *corev1.Pod) error {
	if err := scheduling.Taints(np.Spec.Template.Spec.Taints).ToleratesPod(p); err != nil {
		return fmt.Errorf("spec.template.spec.taints: %w", err)
	}
	return nil
}

func nodeClassRef(np *karpv1.NodePool) string {
	if r := np.Spec.Template.Spec.NodeClassRef; r != nil {
		return r.Kind + "/" + r.Name
	}
	return "unset"
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
	if err := nodeLabels.Compatible(scheduling.NewPodRequirements(p), scheduling.AllowUndefinedWellKnownLabels); err != nil {
		return fmt.Errorf("spec.template.spec.requirements and spec.template.metadata.labels: %w", err)
	}
	return nil
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
