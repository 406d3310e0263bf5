package run

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// pipelineInput is a recorded 5,000-pod run of fixtures/bench/pods-5000.yaml
// (testdata/observation-5000.json.gz, recorded by make bench) with what
// the verdict step needs besides it.
type pipelineInput struct {
	s      *scenario.Scenario
	cat    *catalog.Catalog
	ob     *observe.Observation
	inputs *inputs.Inputs
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
	path := os.Getenv(ObservationEnv)
	if path == "" {
		path = filepath.Join("testdata", "observation-5000.json.gz")
	}
	ob, err := readObservation(path)
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := Build(ss[0], ob.Run)
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.Load(ss[0].CatalogPath)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := (&Runner{}).inputsOf(ss[0], objs, cat)
	if err != nil {
		tb.Fatal(err)
	}
	return &pipelineInput{s: ss[0], cat: cat, ob: ob, inputs: in}
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

// verdict is the pipeline after a run: fingerprint, diff and attribution.
func (in *pipelineInput) verdict(bl *fingerprint.Baseline) (*attribute.Verdict, error) {
	fp, err := fingerprint.Compute(in.ob, in.cat)
	if err != nil {
		return nil, err
	}
	_, v, err := Attribute(in.s, &Result{Observation: in.ob, Fingerprint: fp, Inputs: in.inputs}, bl, in.inputs)
	return v, err
}

func (in *pipelineInput) selfBaseline(tb testing.TB) *fingerprint.Baseline {
	tb.Helper()
	fp, err := fingerprint.Compute(in.ob, in.cat)
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
// Ready, spread over 100+ nodes, and it verifies against itself.
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
