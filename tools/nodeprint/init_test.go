package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// The scaffold is a team repository whose scenario loads as written (its
// NodePool file and manifest resolve) and whose CI installs the version
// it was given, caches the toolchain and verifies.
func TestInitScaffoldsATeamRepository(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	dir := filepath.Join(t.TempDir(), "payments")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"init", dir, "--version", "v1.2.3"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, stderr.String())
	}
	tc, err := toolchain.Find()
	if err != nil {
		t.Fatal(err)
	}
	s, err := repo.Loader(tc).Load(filepath.Join(dir, "scenarios", "web.yaml"))
	if err != nil {
		t.Fatalf("the scaffold's scenario does not load: %v", err)
	}
	if s.Metadata.Name != "web" || len(s.Spec.Workloads) != 1 || s.Spec.Workloads[0].HPA == nil || s.NodePool == nil || s.NodePool.Name != "general" {
		t.Errorf("the scenario replays web with its HPA: got %s with %d workloads", s.Metadata.Name, len(s.Spec.Workloads))
	}
	for file, wants := range map[string][]string{
		".github/workflows/nodeprint.yml": {"NODEPRINT_VERSION: v1.2.3", "go install github.com/nodeprint/nodeprint/tools/nodeprint@${NODEPRINT_VERSION}",
			"nodeprint toolchain path", "actions/cache", "nodeprint toolchain build", "nodeprint verify scenarios/ --report-dir out", "out/junit.xml", "GITHUB_STEP_SUMMARY", "gh pr comment"},
		".gitlab-ci.yml": {"NODEPRINT_VERSION: v1.2.3", "go install \"github.com/nodeprint/nodeprint/tools/nodeprint@${NODEPRINT_VERSION}\"",
			"NODEPRINT_CACHE_DIR", "nodeprint toolchain build", "nodeprint verify scenarios/ --report-dir out", "junit: out/junit.xml", "summary.md"},
		"README.md": {"# payments", "nodeprint@v1.2.3", "go test ./suites/..."},
		"go.mod":    {"module example.com/payments\n", "require github.com/nodeprint/nodeprint v1.2.3\n"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(file, ".yml") || strings.HasSuffix(file, ".yaml") {
			var doc map[string]any
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Errorf("%s is not valid YAML: %v", file, err)
			}
		}
		if strings.Contains(string(b), "[[") {
			t.Errorf("%s holds an unfilled template field", file)
		}
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s does not contain %q", file, w)
			}
		}
	}
}

// The team's suite is the one that runs in this repository, copied as it is.
func TestInitCopiesTheSuiteThatRunsHere(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"init", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"suite_test.go", "nodepool_test.go"} {
		want, err := os.ReadFile(filepath.Join("scaffold", "suites", "nodepools", f))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "suites", "nodepools", f)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("suites/nodepools/%s is not the suite of tools/nodeprint/scaffold (%v)", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod.tmpl")); err == nil {
		t.Error("go.mod.tmpl was written under its template name")
	}
}

// init never overwrites: one file already there refuses the whole
// scaffold before anything is written.
func TestInitRefusesADirectoryWithItsFiles(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("ours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"init", dir}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "already holds README.md") {
		t.Fatalf("want exit 2 naming README.md, got %d: %s", code, stderr.String())
	}
	entries, _ := os.ReadDir(dir)
	if b, _ := os.ReadFile(filepath.Join(dir, "README.md")); string(b) != "ours\n" || len(entries) != 1 {
		t.Errorf("init wrote into the refused directory: %d entries, README %q", len(entries), b)
	}
	if code := run(t.Context(), []string{"init", filepath.Join(t.TempDir(), "x"), "--name", "Bad_Name"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("a bad --name: want exit 2, got %d", code)
	}
}
