package faults

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Binding a stage file to a run changes its name, the placeholders of its
// selector and, where given, its delay: nothing else.
func TestNewStageBindsTheFileToTheRun(t *testing.T) {
	entries, err := stageFiles.ReadDir("stages")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok {
			continue
		}
		n++
		file, err := loadStage(stageFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		delay := 1500 * time.Millisecond
		o, err := newStage(name, stageParams{Run: "web-abcde", Workload: "api", Image: "registry.invalid/x:v2", Delay: &delay})
		if err != nil {
			t.Fatal(err)
		}
		got := o.(*unstructured.Unstructured)
		want := file.DeepCopy()
		want.SetName(file.GetName() + "-web-abcde")
		if err := unstructured.SetNestedField(want.Object, int64(1500), "spec", "delay", "durationMilliseconds"); err != nil {
			t.Fatal(err)
		}
		exprs, _, _ := unstructured.NestedSlice(want.Object, "spec", "selector", "matchExpressions")
		for _, e := range exprs {
			values, _ := e.(map[string]any)["values"].([]any)
			for i, v := range values {
				values[i] = map[any]any{"RUN": "web-abcde", "WORKLOAD": "api", "IMAGE": "registry.invalid/x:v2"}[v]
				if values[i] == nil {
					values[i] = v
				}
			}
		}
		_ = unstructured.SetNestedSlice(want.Object, exprs, "spec", "selector", "matchExpressions")
		if d := cmp.Diff(want.Object, got.Object); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
		if j := mustJSON(t, got); strings.Contains(j, `"RUN"`) || strings.Contains(j, `"WORKLOAD"`) || strings.Contains(j, `"IMAGE"`) {
			t.Errorf("%s: a placeholder is left in the bound stage", name)
		}
		// Without a delay the file's stays.
		o, err = newStage(name, stageParams{Run: "web-abcde", Workload: "api", Image: "registry.invalid/x:v2"})
		if err != nil {
			t.Fatal(err)
		}
		fileDelay, _, _ := unstructured.NestedInt64(file.Object, "spec", "delay", "durationMilliseconds")
		if d, _, _ := unstructured.NestedInt64(o.(*unstructured.Unstructured).Object, "spec", "delay", "durationMilliseconds"); d != fileDelay {
			t.Errorf("%s: delay %d without a parameter, want the file's %d", name, d, fileDelay)
		}
	}
	if n < 4 {
		t.Fatalf("only %d stage files embedded", n)
	}
}

// The stage files spell the labels out; they must be the ones the runs set
// (observe.RunLabel, observe.WorkloadLabel, Label) and Karpenter's NodePool
// label on nodes.
func TestStageFilesSelectOnTheHarnessLabels(t *testing.T) {
	key := func(label string) string { return `.metadata.labels["` + label + `"]` }
	want := map[any][]string{
		runPlaceholder:      {key(observe.RunLabel), key(karpv1.NodePoolLabelKey)},
		workloadPlaceholder: {key(observe.WorkloadLabel)},
		imagePlaceholder:    {".spec.containers[].image"},
	}
	entries, _ := stageFiles.ReadDir("stages")
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok {
			continue
		}
		u, err := loadStage(stageFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		exprs, _, _ := unstructured.NestedSlice(u.Object, "spec", "selector", "matchExpressions")
		for _, x := range exprs {
			m := x.(map[string]any)
			values, _ := m["values"].([]any)
			for _, v := range values {
				if keys, ok := want[v]; ok && !slices.Contains(keys, m["key"].(string)) {
					t.Errorf("%s: %v selects on %v, want one of %v", name, v, m["key"], keys)
				}
			}
			if strings.Contains(m["key"].(string), "nodeprint.dev/fault") && m["key"] != key(Label) {
				t.Errorf("%s: fault label key %v, want %s", name, m["key"], key(Label))
			}
		}
	}
}

func mustJSON(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A stage file that would act on every run, lose to KWOK's own stages or
// not decode is refused with its path and field. (Unknown fields are
// KWOK's schema to know: the golden test decodes every file strictly into
// KWOK's own Stage type.)
func TestLoadStageRefusesBadFiles(t *testing.T) {
	good, err := stageFiles.ReadFile("stages/oom.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, file, want string }{
		{"no run", strings.Replace(string(good), "values: [RUN]", "values: [web]", 1), "no expression selects the run"},
		{"weight", strings.Replace(string(good), "weight: 10000", "weight: 1", 1), "spec.weight is 1"},
		{"duplicate field", strings.Replace(string(good), "  weight: 10000", "  weight: 10000\n  weight: 1", 1), "weight"},
		{"not a stage", strings.Replace(string(good), "kind: Stage", "kind: Pod", 1), "want a kwok.x-k8s.io/v1alpha1 Stage"},
	} {
		fsys := fstest.MapFS{"stages/bad.yaml": {Data: []byte(c.file)}}
		if _, err := loadStage(fsys, "bad"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "stages/bad.yaml") {
			t.Errorf("%s: got %v, want an error naming stages/bad.yaml and %q", c.name, err, c.want)
		}
	}
}

// image-pull-failure's stage acts on the pods that name the fault's image
// (bound from its parameter), not on every pod carrying the fault's label:
// a pod of the workload with a pullable image starts.
func TestImagePullStageSelectsTheImage(t *testing.T) {
	tg := target(t)
	inj, err := New(&scenario.Fault{Name: "image-pull-failure", Params: scenario.Params{"image": "registry.invalid/shop/api:broken"}}, tg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := newStage("image-pull", stageParams{Run: tg.Run, Workload: tg.Deployments[0].Name, Image: inj.(*stagedWorkload).v["image"]})
	if err != nil {
		t.Fatal(err)
	}
	var selected []string
	exprs, _, _ := unstructured.NestedSlice(st.(*unstructured.Unstructured).Object, "spec", "selector", "matchExpressions")
	for _, x := range exprs {
		m := x.(map[string]any)
		if m["key"] == ".spec.containers[].image" {
			for _, v := range m["values"].([]any) {
				selected = append(selected, v.(string))
			}
		}
		if m["key"] == `.metadata.labels["`+Label+`"]` {
			t.Errorf("the stage selects the fault's label %v: every pod of the fault, whatever its image", m["values"])
		}
	}
	if !slices.Equal(selected, []string{"registry.invalid/shop/api:broken"}) {
		t.Errorf("the stage selects images %v, want the fault's", selected)
	}
	if _, err := newStage("image-pull", stageParams{Run: tg.Run, Workload: "api"}); err == nil {
		t.Error("a stage that selects an image needs one")
	}
}
