// Package strictyamltest holds what the fuzz tests of nodeprint's input
// decoders (scenarios, baselines) share: seeding from committed files and
// the contract every rejection must keep.
package strictyamltest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// Seed adds every file matching the globs to f's corpus. A glob matching
// nothing fails f: a fuzz test seeded from no committed file would search
// blind without saying so.
func Seed(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			f.Fatalf("no seed files match %s (err %v)", g, err)
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// CheckRejection fails t unless err, a decoder's refusal of file, is a
// *strictyaml.FieldError (so the CLI can show field and line and exit 2)
// whose message names the file.
func CheckRejection(t testing.TB, err error, file string) {
	t.Helper()
	var fe *strictyaml.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a *strictyaml.FieldError, got %T: %v", err, err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("the error does not name the file %s: %v", file, err)
	}
}
