// Package stagetest holds the golden tests of nodeprint's fault stages
// (pkg/faults/stages): each input object goes through the pinned KWOK's own
// lifecycle, with the fault stage beside KWOK's default pod and node stages,
// as KWOK's kustomize/stage tests do. It lives in this module because it
// builds against the KWOK the toolchain pins; the main module does not
// depend on KWOK.
package stagetest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
	"sigs.k8s.io/kwok/pkg/utils/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

var update = flag.Bool("update-testdata", false, "rewrite the *.output.yaml goldens from what KWOK does now")

// stagesDir is pkg/faults/stages of the repository this module sits in;
// sensitivityDir holds make sensitivity's slowdown stages.
const (
	stagesDir      = "../../../../pkg/faults/stages"
	sensitivityDir = "../../../../pkg/sensitivity/stages"
)

// now stands for every clock read, so the goldens are stable.
var now = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)

// The stage files decode strictly into KWOK's own Stage type: a field KWOK
// does not know (a typo) would be dropped silently by the API server.
func TestStageFilesAreKWOKStages(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(stagesDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stage files in %s (%v)", stagesDir, err)
	}
	slow, err := filepath.Glob(filepath.Join(sensitivityDir, "*.yaml"))
	if err != nil || len(slow) != 2 {
		t.Fatalf("want the two slowdown stages in %s, got %v (%v)", sensitivityDir, slow, err)
	}
	files = append(files, slow...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var st v1alpha1.Stage
		if err := sigsyaml.UnmarshalStrict(b, &st); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestFaultStages(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join(stagesDir, "testdata", "*.input.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in %s/testdata (%v)", stagesDir, err)
	}
	covered := map[string]bool{}
	for _, in := range inputs {
		base := strings.TrimSuffix(filepath.Base(in), ".input.yaml")
		stage, _, _ := strings.Cut(base, ".")
		covered[stage] = true
		t.Run(base, func(t *testing.T) {
			got, err := render(context.Background(), in, filepath.Join(stagesDir, stage+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			out := strings.TrimSuffix(in, ".input.yaml") + ".output.yaml"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (write it with -update-testdata)", err)
			}
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("%s (-want +got):\n%s", out, d)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join(stagesDir, "*.yaml"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".yaml"); !covered[name] {
			t.Errorf("stage %s has no input in testdata/ (%s.<case>.input.yaml)", name, name)
		}
	}
}

// render lists every stage that matches the input object, the fault's and
// KWOK's defaults together, with its delay, weight and the steps it takes.
func render(ctx context.Context, inputFile, stageFile string) ([]byte, error) {
	objs, err := config.LoadUnstructured(inputFile)
	if err != nil || len(objs) != 1 {
		return nil, fmt.Errorf("%s: want one object (%v)", inputFile, err)
	}
	target, ok := objs[0].(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s: not an object", inputFile)
	}
	stages, err := loadStages(ctx, stageFile, target)
	if err != nil {
		return nil, err
	}
	lc, err := lifecycle.NewLifecycle(stages)
	if err != nil {
		return nil, err
	}
	event := &lifecycle.Event{Labels: target.GetLabels(), Annotations: target.GetAnnotations(), Data: target}
	possible, err := lc.ListAllPossible(ctx, event)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, st := range possible {
		o, err := steps(ctx, target, event, st)
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", st.Name(), err)
		}
		out = append(out, o)
	}
	buf := &bytes.Buffer{}
	err = yaml.NewEncoder(buf).Encode(map[string]any{"kind": target.GetKind(), "name": target.GetName(), "stages": out})
	return buf.Bytes(), err
}

// loadStages is the fault stage and KWOK's default stages of the target's
// kind (what kwokctl installs without stage options).
func loadStages(ctx context.Context, stageFile string, target *unstructured.Unstructured) ([]*internalversion.Stage, error) {
	dir, err := os.MkdirTemp("", "stages")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	files := []string{stageFile}
	for i, s := range []string{podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete, fast.DefaultNodeInit} {
		f := filepath.Join(dir, fmt.Sprintf("default-%d.yaml", i))
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	loaded, err := config.Load(ctx, files...)
	if err != nil {
		return nil, err
	}
	gvk := target.GroupVersionKind()
	want := internalversion.StageResourceRef{APIGroup: gvk.GroupVersion().String(), Kind: gvk.Kind}
	var out []*internalversion.Stage
	for _, st := range config.FilterWithType[*internalversion.Stage](loaded) {
		if st.Spec.ResourceRef == want {
			out = append(out, st)
		}
	}
	return out, nil
}

// steps is what one stage does to the target: its delay range, weight and
// each step (a status patch, an event, a delete), with the functions that
// read the clock or the node shown by name.
func steps(ctx context.Context, target *unstructured.Unstructured, event *lifecycle.Event, st *lifecycle.Stage) (any, error) {
	meta := map[string]any{"stage": st.Name()}
	if delay, ok, err := st.DelayRangePossible(ctx, event, now); err != nil {
		return nil, err
	} else if ok {
		meta["delay"] = delay
	}
	if w, ok, err := st.Weight(ctx, event); err != nil {
		return nil, err
	} else if ok {
		meta["weight"] = w
	}
	fm := gotpl.FuncMap{}
	for _, name := range []string{"NodeIP", "NodeName", "NodePort", "PodIP", "NodeIPWith", "PodIPWith", "Now", "now", "Version"} {
		fm[name] = placeholder(name)
	}
	for _, name := range []string{"NodeIPsWith", "PodIPsWith"} {
		fm[name] = func(args ...any) any { return []any{placeholder(name)(args...)} }
	}
	next := []any{}
	_, err := st.DoSteps(0, target.GetFinalizers(), target, gotpl.NewRenderer(fm),
		func(e *internalversion.StageEvent) error {
			next = append(next, map[string]any{"kind": "event", "type": e.Type, "reason": e.Reason, "message": e.Message})
			return nil
		},
		func() error { next = append(next, map[string]any{"kind": "delete"}); return nil },
		func(p *lifecycle.Patch) error {
			next = append(next, map[string]any{"kind": "patch", "type": p.Type, "subresource": p.Subresource, "data": json.RawMessage(p.Data)})
			return nil
		},
		func(a *lifecycle.Apply) error {
			next = append(next, map[string]any{"kind": "apply", "type": a.Type, "subresource": a.Subresource, "data": json.RawMessage(a.Data)})
			return nil
		},
	)
	if err != nil {
		return nil, err
	}
	meta["next"] = next
	return meta, nil
}

func placeholder(name string) func(args ...any) any {
	return func(args ...any) any {
		if len(args) == 0 {
			return "<" + name + ">"
		}
		return fmt.Sprintf("<%s%v>", name, args)
	}
}
