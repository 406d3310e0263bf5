// Package docs checks the documentation: README.md is the front door and
// docs/ holds the rest, so every relative link and every anchor must
// resolve (a section moved without its links reads as a dead end).
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	fence   = regexp.MustCompile("(?s)```.*?```")
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.*)$`)
	scheme  = regexp.MustCompile(`^[a-z]+:`)
	drop    = regexp.MustCompile("[`*_]")
	punct   = regexp.MustCompile(`[^\p{L}\p{N}\- ]`)
)

// slug is GitHub's anchor for a heading.
func slug(h string) string {
	h = punct.ReplaceAllString(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), "")
	return strings.ReplaceAll(h, " ", "-")
}

func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		out[slug(m[1])] = true
	}
	return out
}

func TestLinksResolve(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[frag] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", f, target, dest)
			}
		}
	}
}

// The front door stays a front door.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 200 {
		t.Errorf("README.md has %d lines: move the details into docs/ (it is the front door, about 150 lines)", n)
	}
}
