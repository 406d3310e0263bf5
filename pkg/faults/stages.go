package faults

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// stages creates cluster objects for a fault and deletes them on Restore.
type stages struct {
	b       *base
	created []client.Object
}

func (s *stages) create(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range s.b.labels() {
			l[k] = v
		}
		o.SetLabels(l)
		if err := s.b.t.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("failed to create %s %s for fault %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), s.b.def.Name, err)
		}
		s.created = append(s.created, o)
	}
	return nil
}

// Restore deletes what create made, newest first.
func (s *stages) Restore(ctx context.Context) error {
	var errs []error
	for i := len(s.created) - 1; i >= 0; i-- {
		o := s.created[i]
		if err := s.b.t.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete %s %s of fault %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), s.b.def.Name, err))
			continue
		}
	}
	s.created = nil
	return errors.Join(errs...)
}

// A weight above zero makes KWOK prefer the stage over its own, which have
// none; every fault stage has this one (stages/*.yaml).
const faultWeight = 10000

// The selector values the stage files are written for (stages/README.md).
const (
	runPlaceholder      = "RUN"
	workloadPlaceholder = "WORKLOAD"
	imagePlaceholder    = "IMAGE"
)

//go:embed stages/*.yaml
var stageFiles embed.FS

// stageParams bind a stage file to one run: the run's id, workload and
// the fault's image replace the placeholders, and Delay, when set, the
// file's delay.
type stageParams struct {
	Run, Workload, Image string
	Delay                *time.Duration
}

// newStage is the stage of stages/<name>.yaml bound to a run.
func newStage(name string, p stageParams) (client.Object, error) {
	u, err := loadStage(stageFiles, name)
	if err != nil {
		return nil, err
	}
	u.SetName(u.GetName() + "-" + p.Run)
	exprs, _, _ := unstructured.NestedSlice(u.Object, "spec", "selector", "matchExpressions")
	for _, e := range exprs {
		m := e.(map[string]any) // loadStage checked the shape
		values, _ := m["values"].([]any)
		for i, v := range values {
			switch v {
			case runPlaceholder:
				values[i] = p.Run
			case workloadPlaceholder:
				values[i] = p.Workload
			case imagePlaceholder:
				if p.Image == "" {
					return nil, fmt.Errorf("stages/%s.yaml selects the image (%s), and the fault names none", name, imagePlaceholder)
				}
				values[i] = p.Image
			}
		}
	}
	if err := unstructured.SetNestedSlice(u.Object, exprs, "spec", "selector", "matchExpressions"); err != nil {
		return nil, fmt.Errorf("stages/%s.yaml: %w", name, err)
	}
	if p.Delay != nil {
		if err := unstructured.SetNestedField(u.Object, p.Delay.Milliseconds(), "spec", "delay", "durationMilliseconds"); err != nil {
			return nil, fmt.Errorf("stages/%s.yaml: %w", name, err)
		}
	}
	return u, nil
}

// DecodeStage reads the KWOK Stage at path in fsys strictly (an unknown
// field is an error) into the form the API takes: Unstructured's own
// decoding keeps integers int64, as the API's. A file that cannot be read
// is the *fs.PathError; a decoding error names the path.
func DecodeStage(fsys fs.FS, path string) (*unstructured.Unstructured, error) {
	b, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// loadStage decodes stages/<name>.yaml strictly and checks what binding
// relies on: a Stage with a name, a selector of expressions, the run
// placeholder among their values and the faults' weight.
func loadStage(fsys fs.FS, name string) (*unstructured.Unstructured, error) {
	path := "stages/" + name + ".yaml"
	u, err := DecodeStage(fsys, path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("no fault stage %s: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	obj := u.Object
	if u.GetAPIVersion() != "kwok.x-k8s.io/v1alpha1" || u.GetKind() != "Stage" || u.GetName() == "" {
		return nil, fmt.Errorf("%s: want a kwok.x-k8s.io/v1alpha1 Stage with metadata.name, got %s %s %q", path, u.GetAPIVersion(), u.GetKind(), u.GetName())
	}
	if w, _, _ := unstructured.NestedInt64(obj, "spec", "weight"); w != faultWeight {
		return nil, fmt.Errorf("%s: spec.weight is %d: a fault stage has weight %d, so that KWOK prefers it over its own", path, w, faultWeight)
	}
	exprs, _, err := unstructured.NestedSlice(obj, "spec", "selector", "matchExpressions")
	if err != nil || len(exprs) == 0 {
		return nil, fmt.Errorf("%s: spec.selector.matchExpressions: want a list of expressions (%v)", path, err)
	}
	bound := false
	for i, e := range exprs {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: spec.selector.matchExpressions[%d]: not an expression", path, i)
		}
		values, _ := m["values"].([]any)
		for _, v := range values {
			bound = bound || v == runPlaceholder
		}
	}
	if !bound {
		return nil, fmt.Errorf("%s: spec.selector: no expression selects the run (%s): the stage would act on every run", path, runPlaceholder)
	}
	return u, nil
}
