package fit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/catalog"
)

func load(t *testing.T) *Catalog {
	t.Helper()
	c, err := Load(context.Background(), filepath.Join("..", "..", "fixtures", "catalogs", "aws-small.json"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pod(cpu, mem string, selector map[string]string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{
		Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}},
	}}}}
}

// nodePool labels its nodes with a run label, as every run's NodePool does.
func nodePool(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	np.Spec.Template.Spec.Requirements = reqs
	np.Spec.Template.Labels = map[string]string{"nodeprint.dev/run": "r1"}
	return np
}

// The fixture catalog is AWS-shaped: its architectures are x86_64 and arm64.
func TestCheckSeparatesTooBigFromExcluded(t *testing.T) {
	c := load(t)
	cpu, _ := c.Largest()
	if cpu.Value() < 16 {
		t.Fatalf("largest instance has %s CPUs; the fixture catalog should reach at least 16", cpu.String())
	}
	amd := karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"x86_64"}}
	cases := []struct {
		name                  string
		pod                   *corev1.PodTemplateSpec
		np                    *karpv1.NodePool
		wantCatalog, wantPool bool
	}{
		{"small pod, open pool", pod("1", "2Gi", nil), nodePool(amd), true, true},
		{"pod selecting the pool's label", pod("1", "2Gi", map[string]string{"nodeprint.dev/run": "r1"}), nodePool(amd), true, true},
		{"pod selecting another pool's label", pod("1", "2Gi", map[string]string{"nodeprint.dev/run": "r2"}), nodePool(amd), true, false},
		{"larger than every instance", pod("1000", "2Gi", nil), nodePool(amd), false, false},
		{"pool allows only tiny instances", pod("4", "8Gi", nil), nodePool(amd, karpv1.NodeSelectorRequirementWithMinValues{
			Key: "karpenter.kwok.sh/instance-cpu", Operator: corev1.NodeSelectorOpLt, Values: []string{"2"}}), true, false},
		{"pool allows another architecture", pod("1", "2Gi", map[string]string{corev1.LabelArchStable: "x86_64"}),
			nodePool(karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}), true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Check(tc.pod, tc.np)
			if (r.Catalog > 0) != tc.wantCatalog || (r.NodePool > 0) != tc.wantPool {
				t.Errorf("got %+v, want fits catalog=%v, NodePool=%v", r, tc.wantCatalog, tc.wantPool)
			}
			if r.NodePool > r.Catalog {
				t.Errorf("more NodePool fits than catalog fits: %+v", r)
			}
		})
	}
}

// Across takes another NodePool's fit only when that NodePool admits the
// pod and allows it more types than its own; with no NodePool of its own
// it starts from the whole catalog.
func TestAcrossTakesTheBestAdmittingNodePool(t *testing.T) {
	c := load(t)
	tiny := nodePool(karpv1.NodeSelectorRequirementWithMinValues{
		Key: "karpenter.kwok.sh/instance-cpu", Operator: corev1.NodeSelectorOpLt, Values: []string{"2"}})
	open := nodePool()
	other := nodePool()
	other.Spec.Template.Labels = map[string]string{"nodeprint.dev/run": "r2"}
	p := pod("4", "8Gi", nil)
	if r := Across(c, p, tiny, nil); r != c.Check(p, tiny) {
		t.Errorf("no others: %+v, want its own NodePool's %+v", r, c.Check(p, tiny))
	}
	if r := Across(c, p, tiny, []*karpv1.NodePool{open}); r != c.Check(p, open) || r.NodePool == 0 {
		t.Errorf("an open NodePool beside a tiny one: %+v, want the open one's %+v", r, c.Check(p, open))
	}
	selecting := pod("4", "8Gi", map[string]string{"nodeprint.dev/run": "r1"})
	if r := Across(c, selecting, tiny, []*karpv1.NodePool{other}); r != c.Check(selecting, tiny) {
		t.Errorf("a NodePool that does not admit the pod: %+v, want its own NodePool's %+v", r, c.Check(selecting, tiny))
	}
	if r := Across(c, p, nil, []*karpv1.NodePool{tiny}); r != c.Check(p, nil) {
		t.Errorf("no own NodePool: %+v, want the catalog's %+v", r, c.Check(p, nil))
	}
}

func TestAllocatableBelowCapacity(t *testing.T) {
	c := load(t)
	for name, alloc := range c.Allocatable() {
		if q := alloc[corev1.ResourceCPU]; q.Sign() <= 0 {
			t.Errorf("%s: allocatable CPU %s", name, q.String())
		}
	}
}

// Parallel runs load catalogs at once: the KWOK parser is not safe for
// that, so Load must serialise it (run with -race).
func TestLoadConcurrently(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "catalogs", "aws-small.json")
	var wg sync.WaitGroup
	cats := make([]*Catalog, 8)
	for i := range cats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Load(context.Background(), path)
			if err != nil {
				t.Error(err)
				return
			}
			cats[i] = c
		}()
	}
	wg.Wait()
	for _, c := range cats {
		if c == nil || len(c.types) == 0 || c != cats[0] {
			t.Fatalf("concurrent loads did not share one parsed catalog")
		}
	}
}

func TestAdmitsByLabelsAlone(t *testing.T) {
	pool := &karpv1.NodePool{}
	pool.Spec.Template.Labels = map[string]string{"team": "web"}
	pool.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
	}
	tpl := func(sel map[string]string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: sel}}
	}
	for _, tc := range []struct {
		name string
		sel  map[string]string
		want bool
	}{
		{"no selector", nil, true},
		{"its template label", map[string]string{"team": "web"}, true},
		{"another team", map[string]string{"team": "data"}, false},
		{"a label the NodePool never sets", map[string]string{"gpu": "true"}, false},
		{"its zone", map[string]string{corev1.LabelTopologyZone: "zone-a"}, true},
		{"a zone it excludes", map[string]string{corev1.LabelTopologyZone: "zone-b"}, false},
		{"a well-known label it leaves open", map[string]string{corev1.LabelArchStable: "arm64"}, true},
	} {
		if got := Admits(pool, tpl(tc.sel)) == nil; got != tc.want {
			t.Errorf("%s: admitted %v, want %v (%v)", tc.name, got, tc.want, Admits(pool, tpl(tc.sel)))
		}
	}
}

// Pods that select what no type offers are told apart from pods too large
// for every type: the evidence must not send the service team to shrink
// requests that are fine.
func TestCheckTellsUnofferedLabelsFromOversizedRequests(t *testing.T) {
	c, err := Load(context.Background(), filepath.Join("..", "..", "fixtures", "catalogs", "aws-small.json"))
	if err != nil {
		t.Fatal(err)
	}
	pod := func(cpu string, sel map[string]string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: sel, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	}
	unoffered := c.Check(pod("500m", map[string]string{corev1.LabelArchStable: "s390x"}), nil)
	if unoffered.Catalog != 0 || unoffered.Sized == 0 || !strings.Contains(unoffered.Unoffered, "s390x") {
		t.Errorf("an architecture no type has: %+v, want Catalog 0, Sized > 0 and the requirement named", unoffered)
	}
	oversized := c.Check(pod("10000", nil), nil)
	if oversized.Catalog != 0 || oversized.Sized != 0 || oversized.Unoffered != "" {
		t.Errorf("requests larger than every type: %+v, want Catalog 0, Sized 0", oversized)
	}
}

// A catalog converted from describe-instance-types is one the KWOK
// provider's own reader (which Karpenter runs with) takes: every type,
// arm64 and the GPU included.
func TestKWOKReadsACatalogFromEC2(t *testing.T) {
	b, _, err := catalog.FromEC2Files("../catalog/testdata/ec2/describe-instance-types.json", "../catalog/testdata/ec2/prices.yaml", "", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ec2.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, it := range c.types {
		names[it.Name] = true
	}
	for _, n := range []string{"m5.large", "m5.xlarge", "c6g.large", "g4dn.xlarge"} {
		if !names[n] {
			t.Errorf("%s missing from what KWOK read: %v", n, names)
		}
	}
	if cpu, _ := c.Largest(); cpu.Value() != 4 {
		t.Errorf("largest CPU %s, want 4", cpu.String())
	}
}

// Karpenter admits a pod to a NodePool only when the pod tolerates the
// NodePool's taints, its node class is ready, and a type it allows fits
// within what the limits leave of every resource; Check counts and names
// each, by the NodePool field that blocks.
func TestCheckAppliesEveryAdmissionKarpenterChecks(t *testing.T) {
	c := load(t)
	p := pod("1", "2Gi", nil)
	tainted := nodePool()
	tainted.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	r := c.Check(p, tainted)
	if r.NodePool != 0 || r.Catalog == 0 {
		t.Fatalf("a taint the pod does not tolerate: %+v, want no NodePool type and some catalog type", r)
	}
	assertBlocked(t, r, "spec.template.spec.taints")
	tolerating := pod("1", "2Gi", nil)
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if r := c.Check(tolerating, tainted); r.NodePool == 0 || r.Blocked != "" {
		t.Errorf("a tolerated taint: %+v, want NodePool types", r)
	}

	// A NodePool whose node class is missing is the node-class rules'
	// question (the explain suite's 403 spec): counting its types as
	// excluded named the requirements rule for it.
	unready := nodePool()
	unready.StatusConditions().SetFalse(karpv1.ConditionTypeNodeClassReady, "NodeClassNotFound", "NodeClass not found on cluster")
	if r := c.Check(p, unready); r.NodePool == 0 || r.Blocked != "" {
		t.Errorf("a NodePool whose node class is missing: %+v, want its types counted, nothing blocked", r)
	}

	limited := nodePool()
	limited.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("100Gi")}
	limited.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("99Gi")}
	r = c.Check(p, limited)
	if r.NodePool == 0 || !strings.Contains(r.Limited, "spec.limits.memory") || strings.Contains(r.Limited, "spec.limits.cpu") {
		t.Errorf("1Gi of memory left, CPU plenty: %+v, want the memory limit named in Limited", r)
	}
	limited.Status.Resources[corev1.ResourceMemory] = resource.MustParse("10Gi")
	if r := c.Check(p, limited); r.Limited != "" {
		t.Errorf("90Gi left: %+v, want no limit", r)
	}
}

func assertBlocked(t *testing.T, r Result, field string) {
	t.Helper()
	if !strings.Contains(r.Blocked, field) {
		t.Errorf("Blocked %q does not name %s", r.Blocked, field)
	}
}
