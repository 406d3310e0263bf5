package capacity

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/samber/lo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

// Source yields the current refusal rules. An empty Rules means "refuse nothing".
type Source interface {
	Rules(ctx context.Context) (Rules, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (Rules, error)

// Rules implements Source.
func (f SourceFunc) Rules(ctx context.Context) (Rules, error) { return f(ctx) }

type offeringKey struct{ instanceType, zone, capacityType string }

// Decorator wraps a cloud provider. Create refuses a NodeClaim with an
// insufficient-capacity error when it reaches refused offerings not yet
// known to be unavailable, or when every offering it could launch is
// refused; otherwise it launches one of the offerings that is not. Like a real
// provider, it then remembers the refused offerings for the rules' TTL and
// reports them unavailable from GetInstanceTypes: that memory is what lets
// Karpenter fall back to another zone or capacity type.
type Decorator struct {
	cloudprovider.CloudProvider
	source Source
	clock  clock.Clock

	mu          sync.Mutex
	unavailable map[offeringKey]time.Time // offering -> expiry
}

// Option configures a Decorator.
type Option func(*Decorator)

// WithClock sets the clock used for the unavailable-offerings TTL (default: the real clock).
func WithClock(c clock.Clock) Option { return func(d *Decorator) { d.clock = c } }

// Decorate wraps cp so that it refuses the offerings that source names.
func Decorate(cp cloudprovider.CloudProvider, source Source, opts ...Option) *Decorator {
	d := &Decorator{CloudProvider: cp, source: source, clock: clock.RealClock{}, unavailable: map[offeringKey]time.Time{}}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Create launches the NodeClaim unless the rules refuse every offering it allows.
func (d *Decorator) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	rules, err := d.source.Rules(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading capacity rules, %w", err)
	}
	if rules.LaunchDelay > 0 {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("launching nodeclaim %s, %w", nodeClaim.Name, ctx.Err())
		case <-d.clock.After(rules.LaunchDelay):
		}
	}
	if rules.Empty() {
		d.forgetUnavailable()
		return d.CloudProvider.Create(ctx, nodeClaim)
	}
	reqs := scheduling.NewNodeSelectorRequirementsWithMinValues(nodeClaim.Spec.Requirements...)
	nodePool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: nodeClaim.Labels[v1.NodePoolLabelKey]}}
	its, err := d.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return nil, fmt.Errorf("listing instance types, %w", err)
	}
	type candidate struct {
		key   offeringKey
		price float64
	}
	var allowed []candidate
	var refused, fresh []string
	known := d.snapshotUnavailable()
	itReq := reqs.Get(corev1.LabelInstanceTypeStable)
	for _, it := range its {
		if !itReq.Has(it.Name) {
			continue
		}
		for _, of := range it.Offerings.Available().Compatible(reqs) {
			k := offeringKey{it.Name, of.Requirements.Get(corev1.LabelTopologyZone).Any(), of.Requirements.Get(v1.CapacityTypeLabelKey).Any()}
			if _, ok := rules.Refuses(k.instanceType, k.zone, k.capacityType); ok {
				refused = append(refused, k.instanceType+"/"+k.zone+"/"+k.capacityType)
				if _, seen := known[k]; !seen {
					fresh = append(fresh, k.instanceType+"/"+k.zone+"/"+k.capacityType)
				}
				d.markUnavailable(k, rules.UnavailableTTL)
				continue
			}
			allowed = append(allowed, candidate{k, of.Price})
		}
	}
	if len(refused) == 0 {
		return d.CloudProvider.Create(ctx, nodeClaim)
	}
	// A real cloud learns of a shortage by failing a launch: the first
	// attempt that reaches refused offerings fails with insufficient
	// capacity even where other offerings remain, as an EC2 fleet request
	// for spot does; the refused offerings are then reported unavailable
	// and Karpenter's retry falls back. Offerings already known to be
	// unavailable are not tried again.
	if len(fresh) > 0 || len(allowed) == 0 {
		sort.Strings(refused)
		what := "every offering the nodeclaim allows was refused"
		if len(allowed) > 0 {
			what = "the nodeclaim's preferred offerings were refused"
		}
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("%s by %s (%d refused: %s)",
			what, ConfigMapName, len(refused), abbreviate(refused, 5)))
	}
	// The cloud launched from what is left: pin the NodeClaim to the cheapest
	// remaining offering, as the KWOK provider itself picks the cheapest.
	minPrice := lo.MinBy(allowed, func(a, b candidate) bool { return a.price < b.price }).price
	pick := lo.Sample(lo.Filter(allowed, func(c candidate, _ int) bool { return c.price == minPrice }))
	pinned := nodeClaim.DeepCopy()
	pinned.Spec.Requirements = pin(pinned.Spec.Requirements, map[string]string{
		corev1.LabelInstanceTypeStable: pick.key.instanceType,
		corev1.LabelTopologyZone:       pick.key.zone,
		v1.CapacityTypeLabelKey:        pick.key.capacityType,
	})
	return d.CloudProvider.Create(ctx, pinned)
}

// GetInstanceTypes marks the offerings refused within their TTL as unavailable.
// Instance types with no such offering are returned as the inner provider gave them.
func (d *Decorator) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	its, err := d.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return its, err
	}
	rules, err := d.source.Rules(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading capacity rules, %w", err)
	}
	if rules.Empty() {
		d.forgetUnavailable()
		return its, nil
	}
	unavailable := d.snapshotUnavailable()
	if len(unavailable) == 0 {
		return its, nil
	}
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		var offerings cloudprovider.Offerings
		changed := false
		for _, of := range it.Offerings {
			k := offeringKey{it.Name, of.Requirements.Get(corev1.LabelTopologyZone).Any(), of.Requirements.Get(v1.CapacityTypeLabelKey).Any()}
			if _, ok := unavailable[k]; ok && of.Available {
				c := *of
				c.Available = false
				offerings = append(offerings, &c)
				changed = true
				continue
			}
			offerings = append(offerings, of)
		}
		if changed {
			out[i] = withOfferings(it, offerings)
		}
	}
	return out, nil
}

// withOfferings is a shallow copy of it sharing its immutable fields, as
// Karpenter's own node-overlay store makes, with other offerings. The
// exported fields are copied by reflection, not by name: each release line
// adds some (DynamicResources in v1.14, VolumeAttachmentLimits in v1.15, none
// of them in v1.11), and a field left out would be lost to the scheduler.
// Copying the whole struct would copy its unexported sync.Once and cache.
func withOfferings(it *cloudprovider.InstanceType, offerings cloudprovider.Offerings) *cloudprovider.InstanceType {
	out := &cloudprovider.InstanceType{}
	src, dst := reflect.ValueOf(it).Elem(), reflect.ValueOf(out).Elem()
	for i := range src.NumField() {
		if src.Type().Field(i).IsExported() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	out.Offerings = offerings
	return out
}

// Unavailable lists the offerings currently remembered as refused, sorted, as
// instanceType/zone/capacityType.
func (d *Decorator) Unavailable() []string {
	var out []string
	for k := range d.snapshotUnavailable() {
		out = append(out, k.instanceType+"/"+k.zone+"/"+k.capacityType)
	}
	sort.Strings(out)
	return out
}

func (d *Decorator) markUnavailable(k offeringKey, ttl time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unavailable[k] = d.clock.Now().Add(ttl)
}

// forgetUnavailable drops the memory of refusals once the rules are gone, so
// that restoring a fault restores the cloud at once instead of a TTL later.
func (d *Decorator) forgetUnavailable() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.unavailable)
}

func (d *Decorator) snapshotUnavailable() map[offeringKey]struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	out := map[offeringKey]struct{}{}
	for k, exp := range d.unavailable {
		if !now.Before(exp) {
			delete(d.unavailable, k)
			continue
		}
		out[k] = struct{}{}
	}
	return out
}

func pin(reqs []v1.NodeSelectorRequirementWithMinValues, values map[string]string) []v1.NodeSelectorRequirementWithMinValues {
	out := lo.Filter(reqs, func(r v1.NodeSelectorRequirementWithMinValues, _ int) bool {
		_, replaced := values[r.Key]
		return !replaced
	})
	keys := lo.Keys(values)
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{values[k]}})
	}
	return out
}

func abbreviate(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(", and %d more", len(s)-n)
}
