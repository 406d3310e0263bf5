package capacity

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
)

// static is a Source whose rules the test sets directly.
type static struct{ rules Rules }

func (s *static) Rules(context.Context) (Rules, error) { return s.rules, nil }

func newFixture(t *testing.T) (*fake.CloudProvider, *static, *clocktesting.FakeClock, *Decorator) {
	t.Helper()
	inner := fake.NewCloudProvider()
	inner.InstanceTypes = []*cloudprovider.InstanceType{fake.NewInstanceType("small"), fake.NewInstanceType("big")}
	src := &static{}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	return inner, src, clk, Decorate(inner, src, WithClock(clk))
}

func nodeClaim(reqs map[string][]string) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc", Labels: map[string]string{v1.NodePoolLabelKey: "np"}}}
	for k, vs := range reqs {
		nc.Spec.Requirements = append(nc.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: vs})
	}
	return nc
}

// availability flattens GetInstanceTypes into instanceType/zone/capacityType -> available.
func availability(t *testing.T, d *Decorator) map[string]bool {
	t.Helper()
	its, err := d.GetInstanceTypes(context.Background(), &v1.NodePool{})
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	out := map[string]bool{}
	for _, it := range its {
		for _, of := range it.Offerings {
			out[it.Name+"/"+of.Requirements.Get(corev1.LabelTopologyZone).Any()+"/"+of.CapacityType()] = of.Available
		}
	}
	return out
}

func TestNoRulesChangesNothing(t *testing.T) {
	inner, _, _, d := newFixture(t)
	nc := nodeClaim(map[string][]string{corev1.LabelInstanceTypeStable: {"small", "big"}})
	if _, err := d.Create(context.Background(), nc); err != nil {
		t.Fatalf("Create with no rules: %v", err)
	}
	if len(inner.CreateCalls) != 1 || inner.CreateCalls[0] != nc {
		t.Fatalf("want the NodeClaim passed through unchanged (same pointer), got %d calls", len(inner.CreateCalls))
	}
	its, err := d.GetInstanceTypes(context.Background(), &v1.NodePool{})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range its {
		if it != inner.InstanceTypes[i] {
			t.Fatalf("instance type %s was copied although no rule exists", it.Name)
		}
	}
}

func TestRefusesExactlyTheNamedOfferings(t *testing.T) {
	inner, src, clk, d := newFixture(t)
	src.rules = Rules{UnavailableTTL: time.Minute, Refuse: []Offering{{InstanceType: "small", Zone: "test-zone-1", CapacityType: "spot"}}}

	// The only offering this NodeClaim allows is the refused one: insufficient capacity.
	_, err := d.Create(context.Background(), nodeClaim(map[string][]string{
		corev1.LabelInstanceTypeStable: {"small"}, corev1.LabelTopologyZone: {"test-zone-1"}, v1.CapacityTypeLabelKey: {"spot"},
	}))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("want an insufficient-capacity error, got %v", err)
	}
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || !strings.Contains(err.Error(), "small/test-zone-1/spot") {
		t.Fatalf("error should name the refused offering: %v", err)
	}
	if len(inner.CreateCalls) != 0 {
		t.Fatalf("a refused NodeClaim must not reach the cloud, got %d create calls", len(inner.CreateCalls))
	}

	// Exactly the refused offering is now unavailable; every other stays available.
	got := availability(t, d)
	if len(got) != 10 {
		t.Fatalf("want 10 offerings (2 types x 5), got %d", len(got))
	}
	for k, avail := range got {
		if want := k != "small/test-zone-1/spot"; avail != want {
			t.Errorf("offering %s: available=%v, want %v", k, avail, want)
		}
	}

	// Unavailability is remembered for the TTL, then forgotten.
	clk.Step(time.Minute)
	for k, avail := range availability(t, d) {
		if !avail {
			t.Errorf("offering %s still unavailable after the TTL", k)
		}
	}
}

func TestLaunchesFromWhatIsNotRefused(t *testing.T) {
	inner, src, _, d := newFixture(t)
	// Every spot offering of every type, in every zone, is refused.
	src.rules = Rules{UnavailableTTL: time.Minute, Refuse: []Offering{{InstanceType: Any, CapacityType: "spot"}}}
	claim := nodeClaim(map[string][]string{
		corev1.LabelInstanceTypeStable: {"small"}, v1.CapacityTypeLabelKey: {"spot", "on-demand"},
	})
	// The first attempt hits the shortage, as a real launch would.
	if _, err := d.Create(context.Background(), claim); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("first launch reaching refused spot offerings: want an insufficient-capacity error, got %v", err)
	}
	if len(inner.CreateCalls) != 0 {
		t.Fatalf("a refused launch must not reach the inner provider, got %d calls", len(inner.CreateCalls))
	}
	// The retry knows spot is unavailable and launches on-demand.
	_, err := d.Create(context.Background(), claim)
	if err != nil {
		t.Fatalf("on-demand is still allowed, want a launch on retry, got %v", err)
	}
	if len(inner.CreateCalls) != 1 {
		t.Fatalf("want one create call, got %d", len(inner.CreateCalls))
	}
	pinned := inner.CreateCalls[0]
	for _, r := range pinned.Spec.Requirements {
		if r.Key == v1.CapacityTypeLabelKey && (len(r.Values) != 1 || r.Values[0] != "on-demand") {
			t.Fatalf("NodeClaim should be pinned to on-demand, got %v", r.Values)
		}
	}
	got := availability(t, d)
	for k, avail := range got {
		want := !(strings.HasPrefix(k, "small/") && strings.HasSuffix(k, "/spot"))
		if avail != want {
			t.Errorf("offering %s: available=%v, want %v", k, avail, want)
		}
	}
}

func TestRemovingRulesRestoresAtOnce(t *testing.T) {
	_, src, _, d := newFixture(t)
	src.rules = Rules{UnavailableTTL: time.Hour, Refuse: []Offering{{Zone: "test-zone-2"}}}
	_, err := d.Create(context.Background(), nodeClaim(map[string][]string{corev1.LabelInstanceTypeStable: {"big"}, corev1.LabelTopologyZone: {"test-zone-2"}}))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("want insufficient capacity, got %v", err)
	}
	if n := len(d.Unavailable()); n != 2 {
		t.Fatalf("want big's two test-zone-2 offerings remembered, got %v", d.Unavailable())
	}
	src.rules = Rules{}
	for k, avail := range availability(t, d) {
		if !avail {
			t.Errorf("offering %s unavailable after the rules were removed", k)
		}
	}
}

func TestParseRules(t *testing.T) {
	r, err := ParseRules(map[string]string{RefuseKey: "- {instanceType: c-4x-amd64-linux, zone: test-zone-a, capacityType: spot}\n- {capacityType: spot}\n", TTLKey: "30s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Refuse) != 2 || r.UnavailableTTL != 30*time.Second {
		t.Fatalf("unexpected rules %+v", r)
	}
	if _, ok := r.Refuses("c-8x-amd64-linux", "test-zone-b", "on-demand"); ok {
		t.Fatal("on-demand in zone b must not be refused")
	}
	if o, ok := r.Refuses("c-8x-amd64-linux", "test-zone-b", "spot"); !ok || o.String() != "*/*/spot" {
		t.Fatalf("spot must be refused by the wildcard rule, got %v %v", o, ok)
	}
	for name, data := range map[string]map[string]string{
		"unknown key":   {"refuse2": "[]"},
		"unknown field": {RefuseKey: "- {instancetype: x}"},
		"not a list":    {RefuseKey: "instanceType: x"},
		"bad ttl":       {TTLKey: "soon"},
		"negative ttl":  {TTLKey: "-1s"},
		"bad delay":     {LaunchDelayKey: "a while"},
		"long delay":    {LaunchDelayKey: "11m"},
	} {
		if _, err := ParseRules(data); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
	if r, err := ParseRules(nil); err != nil || !r.Empty() {
		t.Fatalf("no data must mean no rules, got %+v %v", r, err)
	}
}

// A launch delay holds every launch for that long before the cloud
// answers, and a cancelled launch returns at once.
func TestLaunchDelay(t *testing.T) {
	r, err := ParseRules(map[string]string{LaunchDelayKey: "750ms"})
	if err != nil || r.LaunchDelay != 750*time.Millisecond || !r.Empty() {
		t.Fatalf("rules %+v, %v: want a 750ms delay and no refusal", r, err)
	}
	inner, src, clk, d := newFixture(t)
	src.rules = r
	done := make(chan error, 1)
	go func() {
		_, err := d.Create(context.Background(), nodeClaim(map[string][]string{corev1.LabelInstanceTypeStable: {"small"}}))
		done <- err
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if len(inner.CreateCalls) != 0 {
		t.Fatal("the cloud was asked before the delay passed")
	}
	clk.Step(750 * time.Millisecond)
	if err := <-done; err != nil || len(inner.CreateCalls) != 1 {
		t.Fatalf("after the delay: %v, %d calls; want one launch", err, len(inner.CreateCalls))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Create(ctx, nodeClaim(map[string][]string{corev1.LabelInstanceTypeStable: {"small"}})); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled launch: %v, want context.Canceled", err)
	}
}

// The copy GetInstanceTypes makes of a type with a refused offering keeps
// every exported field the release has, whatever the release line: each
// adds some (DynamicResources, VolumeAttachmentLimits), and the copy by
// name lost the ones it did not list.
func TestCopyKeepsEveryExportedField(t *testing.T) {
	it := fake.NewInstanceType("small")
	v := reflect.ValueOf(it).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() || !f.IsZero() || v.Type().Field(i).Name == "Offerings" {
			continue
		}
		// Give the field a value, so that losing it shows.
		switch f.Kind() {
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem())
			f.Set(m)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		}
	}
	got := withOfferings(it, cloudprovider.Offerings{})
	gv := reflect.ValueOf(got).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if !v.Type().Field(i).IsExported() || name == "Offerings" {
			continue
		}
		if !reflect.DeepEqual(v.Field(i).Interface(), gv.Field(i).Interface()) {
			t.Errorf("field %s was not copied", name)
		}
	}
	if len(got.Offerings) != 0 || len(it.Offerings) == 0 {
		t.Errorf("the copy must carry the new offerings and leave the original's")
	}
}
