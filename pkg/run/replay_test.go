package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// loadAnyCatalog loads a scenario with a committed catalog standing in
// for the toolchain's generic one (the objects do not depend on it; the
// catalog's digest check has its own test).
func loadAnyCatalog(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "../../fixtures/catalogs/aws-small.json"}
	s, err := l.Load("../../fixtures/scenarios/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objectsEqual compares two runs' objects as the API server would see
// them: quantities by value, nil and empty alike, and without the type
// (a typed client sets it; a scenario's inline NodePool has none).
var objectsEqual = []cmp.Option{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmpopts.EquateEmpty(),
	cmpopts.IgnoreTypes(metav1.TypeMeta{}),
}

func recordOf(t *testing.T, rel string, objs *Objects, id string) *inputs.Inputs {
	t.Helper()
	s := loadAnyCatalog(t, rel)
	cat, err := catalog.Load(s.CatalogPath)
	if err != nil {
		t.Fatal(err)
	}
	in, err := recordInputs(objs, id, inputs.Karpenter{Version: "v1.14.1", Binary: "abc"}, inputs.Catalog{Name: s.Spec.Catalog, Digest: cat.Digest}, s.Spec.Karpenter.Env())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// scenarioNames are every committed scenario, faults and variants
// included, relative to fixtures/scenarios without .yaml.
func scenarioNames(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("../../fixtures/scenarios", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		rel, _ := filepath.Rel("../../fixtures/scenarios", path)
		out = append(out, strings.TrimSuffix(rel, ".yaml"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Replaying a run's own record builds the objects the scenario builds,
// for every committed scenario: the record keeps everything a run applies
// and BuildFrom puts back what the record takes out (the run's names and
// label).
func TestReplayOfARecordRebuildsTheRun(t *testing.T) {
	for _, name := range scenarioNames(t) {
		t.Run(name, func(t *testing.T) {
			s := loadAnyCatalog(t, name)
			id := "replayed-abcde"
			want, err := Build(s, id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := BuildFrom(recordOf(t, name, want, id), s, id)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got, objectsEqual...); d != "" {
				t.Errorf("replayed objects (-built +replayed):\n%s", d)
			}
		})
	}
}

// Every committed baseline's recorded inputs replay to a run that records
// them again: what a paired verification's reference arm applies is what
// the baseline recorded.
func TestCommittedBaselinesReplay(t *testing.T) {
	paths, err := filepath.Glob("../../fingerprints/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no baselines: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			b, err := fingerprint.LoadBaseline(path)
			if err != nil {
				t.Fatal(err)
			}
			// The baseline's scenario: a plain one, or one in the folders
			// whose baselines sit with the plain ones.
			rel := ""
			for _, dir := range []string{"", "nodepools/", "scale-in/"} {
				if _, err := os.Stat("../../fixtures/scenarios/" + dir + name + ".yaml"); err == nil {
					rel = dir + name
					break
				}
			}
			if rel == "" {
				t.Fatalf("baseline %s has no scenario in fixtures/scenarios", name)
			}
			s := loadAnyCatalog(t, rel)
			id := name + "-abcde"
			objs, err := BuildFrom(b.Inputs, s, id)
			if err != nil {
				t.Fatal(err)
			}
			again, err := recordInputs(objs, id, b.Inputs.Karpenter, b.Inputs.Catalog, b.Inputs.Karpenter.Settings)
			if err != nil {
				t.Fatal(err)
			}
			if d := inputs.Diff(b.Inputs, again); len(d) > 0 {
				t.Errorf("the replay records other inputs than the baseline: %v", d)
			}
		})
	}
}

// A scenario edited since its record replays as recorded: the edit is the
// candidate's, not the reference's.
func TestReplayAppliesTheRecordNotTheScenario(t *testing.T) {
	s := loadAnyCatalog(t, "web-service")
	id := "web-service-abcde"
	before, err := Build(s, id)
	if err != nil {
		t.Fatal(err)
	}
	rec := recordOf(t, "web-service", before, id)
	s.Spec.Workloads[0].Requests["cpu"] = "3"
	s.Spec.Workloads[0].Replicas++
	s.NodePool.Spec.Template.Spec.Requirements = s.NodePool.Spec.Template.Spec.Requirements[:0]
	got, err := BuildFrom(rec, s, id)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, got, objectsEqual...); d != "" {
		t.Errorf("the replay follows the edited scenario (-recorded +replayed):\n%s", d)
	}
}

// What cannot be replayed is refused, saying what: another catalog than
// the scenario's, a recorded field this build's types do not have.
func TestWhatCannotBeReplayed(t *testing.T) {
	s := loadAnyCatalog(t, "web-service")
	objs, err := Build(s, "web-service-abcde")
	if err != nil {
		t.Fatal(err)
	}
	in := recordOf(t, "web-service", objs, "web-service-abcde")
	if err := CheckReplayable(in, s); err != nil {
		t.Fatalf("its own record: %v", err)
	}
	other := *in
	other.Catalog.Digest = "0123456789abcdef"
	if err := CheckReplayable(&other, s); !errors.Is(err, ErrReplay) || !strings.Contains(err.Error(), "0123456789ab") {
		t.Errorf("another catalog: %v, want ErrReplay naming the recorded digest", err)
	}
	unknown := *in
	unknown.NodePool = map[string]any{"template": map[string]any{}, "notAField": 1}
	if err := CheckReplayable(&unknown, s); !errors.Is(err, ErrReplay) || !strings.Contains(err.Error(), "notAField") {
		t.Errorf("an unknown NodePool field: %v, want ErrReplay naming it", err)
	}
}

// The record's placeholders: RUN is the run's name, RUN-<name> one of
// its other NodePools (a pod's karpenter.sh/nodepool selector); other
// strings stay.
func TestUnRUN(t *testing.T) {
	in := map[string]any{"a": "RUN", "b": []any{"RUN-spot", "RUNNING", "x-RUN"}, "c": 3}
	want := map[string]any{"a": "r-1", "b": []any{"r-1-spot", "RUNNING", "x-RUN"}, "c": 3}
	if d := cmp.Diff(want, unRUN(in, "r-1")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
