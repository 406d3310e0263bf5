package strictyaml

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type doc struct {
	Name string `json:"name"`
	Spec struct {
		Replicas int      `json:"replicas"`
		Tags     []string `json:"tags"`
	} `json:"spec"`
}

// Each problem comes back as a FieldError naming the file, the path and
// the line; fatal only when the value could not be decoded at all.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		fatal    bool
	}{
		{name: "valid", in: "name: a\nspec:\n  replicas: 2\n"},
		{name: "unknown field", in: "name: a\nspec:\n  replicaz: 2\n", want: []string{"f.yaml:3: spec.replicaz: unknown field (see the docs)"}},
		{name: "wrong case is unknown", in: "Name: a\n", want: []string{"f.yaml:1: Name: unknown field (see the docs)"}},
		{name: "duplicate key", in: "name: a\nspec:\n  replicas: 2\n  replicas: 3\n", want: []string{"f.yaml:4: spec.replicas: duplicate field"}},
		{name: "wrong type", in: "name: a\nspec:\n  replicas: two\n", want: []string{"f.yaml:3: spec.replicas: wrong type: want int"}, fatal: true},
		{name: "not YAML", in: "name: [a\n", want: []string{"f.yaml", "not valid YAML"}, fatal: true},
		{name: "empty", in: "\n", want: []string{"f.yaml: file is empty"}, fatal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			errs, fatal := Decode("f.yaml", []byte(tc.in), &d, "see the docs")
			if fatal != tc.fatal {
				t.Errorf("fatal = %v, want %v (%v)", fatal, tc.fatal, errs)
			}
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("errors on valid input: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(errs.Error(), w) {
					t.Errorf("%q does not say %q", errs.Error(), w)
				}
			}
			var fe *FieldError
			if !errors.As(error(errs), &fe) || fe.File != "f.yaml" {
				t.Errorf("errors.As finds no *FieldError naming the file in %v", errs)
			}
		})
	}
}

func TestReadFileBoundsAndEncoding(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := ReadFile(write("ok.yaml", []byte("name: a\n")), 0); err != nil {
		t.Fatalf("a small UTF-8 file: %v", err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{write("big.yaml", []byte(strings.Repeat("#", 101))), "file is 101 bytes, more than the 100 allowed"},
		{write("latin1.yaml", []byte("name: caf\xe9\n")), "file is not valid UTF-8"},
		{dir, "is a directory, not a file"},
		{filepath.Join(dir, "missing.yaml"), "no such file"},
	} {
		_, err := ReadFile(tc.path, 100)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("ReadFile(%s) = %v, want an error naming the file and saying %q", tc.path, err, tc.want)
		}
	}
}

func TestDecodeJSONNamesTheFieldWithoutALine(t *testing.T) {
	var d doc
	errs, fatal := DecodeJSON("c.json", []byte(`{"name": "a", "spec": {"replicas": 1, "extra": true}}`), &d, "")
	if fatal || len(errs) != 1 || errs[0].Path != "spec.extra" || errs[0].Line != 0 {
		t.Fatalf("got fatal=%v %#v", fatal, errs)
	}
	if _, fatal := DecodeJSON("c.json", []byte(`{"name": `), &d, ""); !fatal {
		t.Fatal("truncated JSON must be fatal")
	}
}
