package run_test

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/verify"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/facts"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// pipelineInput is a recorded 5,000-pod run of fixtures/bench/pods-5000.yaml
// (testdata/observation-5000.json.gz, recorded by make bench) with what
// the verdict step needs besides it: the run's objects and catalog, and
// the facts a healthy cluster answers at the end of such a run (read holds
// what is read from the cluster; the rest the verdict step computes).
type pipelineInput struct {
	s      *scenario.Scenario
	cat    *catalog.Catalog
	shapes *fit.Catalog
	objs   *run.Objects
	ob     *observe.Observation
	inputs *inputs.Inputs
	read   attribute.Facts
}

func loadPipelineInput(tb testing.TB) *pipelineInput {
	tb.Helper()
	tc, err := toolchain.Find()
	if err != nil {
		tb.Fatal(err)
	}
	// The generic catalog is the KWOK provider's, copied by the toolchain build.
	if _, err := os.Stat(tc.Paths().InstanceTypes); err != nil {
		tb.Fatalf("the generic catalog is missing (%v): run make tools", err)
	}
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: tc.Paths().InstanceTypes, ValidateFault: faults.Validate}
	ss, err := l.LoadFiles("../../fixtures/bench/pods-5000.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	path := os.Getenv(run.ObservationEnv)
	if path == "" {
		path = filepath.Join("testdata", "observation-5000.json.gz")
	}
	ob, err := readObservation(path)
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := run.Build(ss[0], ob.Run)
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.Load(ss[0].CatalogPath)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := run.InputsOf(ss[0], objs, cat)
	if err != nil {
		tb.Fatal(err)
	}
	shapes, err := fit.Load(context.Background(), ss[0].CatalogPath)
	if err != nil {
		tb.Fatal(err)
	}
	return &pipelineInput{s: ss[0], cat: cat, shapes: shapes, objs: objs, ob: ob, inputs: in, read: healthyReads(objs, ob)}
}

// healthyReads are what a healthy cluster answers at the end of the run:
// the NodePool as applied, its node class there, the replicas as applied,
// each pod's usage as KWOK simulates it without a fault (the constant
// usage annotations, else 1m and 1Mi: fixtures/kwok-stages/base/usage.yaml)
// and no failed API request.
func healthyReads(objs *run.Objects, ob *observe.Observation) attribute.Facts {
	f := facts.New()
	f.NodePool, f.NodeClassExists = objs.NodePool.DeepCopy(), true
	usage := map[string]corev1.ResourceList{}
	for _, d := range objs.Deployments {
		n := ptr.Deref(d.Spec.Replicas, 1)
		f.Replicas[d.Name] = attribute.Replicas{Applied: n, Desired: n}
		a := d.Spec.Template.Annotations
		usage[d.Name] = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cmp.Or(a["kwok.x-k8s.io/usage-cpu"], "1m")),
			corev1.ResourceMemory: resource.MustParse(cmp.Or(a["kwok.x-k8s.io/usage-memory"], "1Mi")),
		}
	}
	f.PodUsage = map[string]corev1.ResourceList{}
	for name, p := range ob.Pods {
		f.PodUsage[name] = usage[p.Workload]
	}
	failed, latency := 0.0, 4.0
	f.KarpenterErrors, f.KarpenterLatencyMs = &failed, &latency
	return f
}

func readObservation(path string) (*observe.Observation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the observation: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read the observation %s: %w", path, err)
	}
	ob := &observe.Observation{}
	if err := json.NewDecoder(zr).Decode(ob); err != nil {
		return nil, fmt.Errorf("failed to decode the observation %s: %w", path, err)
	}
	return ob, nil
}

// verdict is the pipeline after a run: fingerprint, the facts the runner
// computes itself (each workload's fit in the catalog and the NodePool,
// the catalog's allocatable), diff and attribution.
func (in *pipelineInput) verdict(bl *fingerprint.Baseline) (*attribute.Verdict, error) {
	fp, err := in.fingerprint()
	if err != nil {
		return nil, err
	}
	f := in.read
	f.Workloads, f.Fit = map[string]*corev1.PodTemplateSpec{}, map[string]fit.Result{}
	run.WorkloadFacts(&f, in.objs, in.shapes)
	_, v, err := verify.Attribute(in.s, &run.Result{Observation: in.ob, Fingerprint: fp, Inputs: in.inputs, Facts: f}, bl, in.inputs)
	return v, err
}

// karpenterUsage is what the runner measures of Karpenter over the run, of
// the size make bench saw for 5,000 pods (492 MB, 98 CPU seconds).
var karpenterUsage = usage.Usage{CPUSeconds: 98, PeakRSSBytes: 492 << 20, RequestsTotal: 21000, MeanLatencyMs: 4, Reconciles: 40000,
	Requests: map[string]int{"PATCH nodeclaims/status": 6000, "CREATE pods/binding": 5000, "CREATE events": 10000}}

// fingerprint is the run's fingerprint, with Karpenter's usage as the
// runner adds it.
func (in *pipelineInput) fingerprint() (*fingerprint.Fingerprint, error) {
	fp, err := fingerprint.Compute(in.ob, in.cat)
	if err != nil {
		return nil, err
	}
	u := karpenterUsage
	fp.Karpenter = &u
	return fp, nil
}

func (in *pipelineInput) selfBaseline(tb testing.TB) *fingerprint.Baseline {
	tb.Helper()
	fp, err := in.fingerprint()
	if err != nil {
		tb.Fatal(err)
	}
	bl, err := fingerprint.NewBaseline(in.s.Metadata.Name, fingerprint.Provenance{}, []*fingerprint.Fingerprint{fp})
	if err != nil {
		tb.Fatal(err)
	}
	return bl
}

// The committed observation is what the benchmark claims: 5,000 pods, all
// Ready, spread over 100+ nodes, and it verifies against itself with every
// signal computed: the benchmark times the whole verdict step, not a
// classifier that stops at "unavailable" for want of facts.
func TestRecordedObservation(t *testing.T) {
	in := loadPipelineInput(t)
	ready := 0
	for _, p := range in.ob.Pods {
		if !p.Ready.IsZero() {
			ready++
		}
	}
	if len(in.ob.Pods) != 5000 || ready != 5000 || len(in.ob.NodeClaims) < 100 {
		t.Fatalf("want 5,000 Ready pods on 100+ NodeClaims, got %d pods (%d Ready) on %d NodeClaims", len(in.ob.Pods), ready, len(in.ob.NodeClaims))
	}
	v, err := in.verdict(in.selfBaseline(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != attribute.None {
		t.Fatalf("a run against its own baseline: want verdict none, got %s (%s %s)", v.Verdict, v.Rule, v.Reason)
	}
	// Unavailable only where a healthy, settled run has nothing to say:
	// no pod pending (fit), the NodePool compared with pods only by
	// explain, and no scale-in in this scenario.
	notApplicable := map[string]string{"fit.pendingFitCatalog": "no pod is pending", "fit.pendingFitNodePool": "no pod is pending",
		"policy.pendingAdmittedByNoNodePool": "NodePools not compared with the pods", "disruption.overBudget": "no scale-in ran",
		"disruption.heldByApplication": "no scale-in ran", "disruption.keptByKarpenter": "no scale-in ran", "disruption.fewerRemoved": "no scale-in ran", "disruption.replacedAgain": "no scale-in ran",
		"disruption.notGone": "no scale-in ran", "disruption.notGoneHeld": "no scale-in ran"}
	for _, s := range v.Signals {
		if !s.Available && s.Detail != notApplicable[s.ID] {
			t.Errorf("signal %s unavailable (%s): the benchmark's facts lack what it reads", s.ID, s.Detail)
		}
	}
	for _, id := range []string{"selection.nodesOverRequested", "pods.cpuUsageOverRequest", "selection.policyViolations", "policy.limitsReached"} {
		if s, _ := v.Signal(id); !s.Available {
			t.Errorf("%s must be computed on the 5,000 pods", id)
		}
	}
}

// BenchmarkPipeline times the verdict step alone on a 5,000-pod run:
// fingerprint, diff against a baseline and attribution (make bench reports it).
func BenchmarkPipeline(b *testing.B) {
	in := loadPipelineInput(b)
	bl := in.selfBaseline(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := in.verdict(bl); err != nil {
			b.Fatal(err)
		}
	}
}
