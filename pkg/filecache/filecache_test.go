package filecache

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadParsesOnceWhileUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	parses := 0
	parse := func(p string) (string, error) {
		parses++
		b, err := os.ReadFile(p)
		return string(b), err
	}
	var c Cache[string]
	for i := 0; i < 3; i++ {
		if v, err := c.Load(path, parse); err != nil || v != "one" {
			t.Fatalf("load %d: %q, %v", i, v, err)
		}
	}
	if parses != 1 {
		t.Fatalf("an unchanged file is parsed once, parsed %d times", parses)
	}
	later := time.Now().Add(time.Minute)
	if err := os.WriteFile(path, []byte("two!"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Load(path, parse); err != nil || v != "two!" || parses != 2 {
		t.Fatalf("a changed file is parsed again: %q, %v, %d parses", v, err, parses)
	}
	bad := errors.New("bad")
	if _, err := c.Load(filepath.Join(t.TempDir(), "other"), parse); err == nil {
		t.Fatal("a missing file is an error")
	}
	failing := func(string) (string, error) { return "", bad }
	if err := os.Chtimes(path, later.Add(time.Minute), later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(path, failing); !errors.Is(err, bad) {
		t.Fatalf("the parser's error is returned, got %v", err)
	}
	if v, err := c.Load(path, parse); err != nil || v != "two!" {
		t.Fatalf("a failed parse is not kept: %q, %v", v, err)
	}
}
