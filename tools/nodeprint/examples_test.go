package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/harness"
)

// The CI and Kubernetes examples (examples/) and the CI files `init`
// scaffolds run nodeprint. Every nodeprint command line in their scripts
// must parse with this CLI's own command tree, as the CLI would run it:
// an unknown or renamed flag, a value of the wrong type, a bad --shard, a
// wrong number of arguments or a scenario path that does not exist fails
// here, where a search for fixed substrings would pass.
func TestExamplesRunWithTheCLIsFlags(t *testing.T) {
	files := []struct {
		path string
		// dir is what the example's paths are relative to: it runs there.
		dir string
		// publishes: the example runs the catalog in shards and keeps the
		// reports, as docs/ci.md says.
		publishes bool
	}{
		{"../../examples/github-actions/nodeprint.yml", "../..", true},
		{"../../examples/gitlab-ci/nodeprint.gitlab-ci.yml", "../..", true},
		{"../../examples/kubernetes/indexed-job.yaml", "../..", true},
		{"scaffold/.github/workflows/nodeprint.yml", "scaffold", false},
		{"scaffold/.gitlab-ci.yml", "scaffold", false},
	}
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		lines := commandLines(t, f.path, b)
		if len(lines) == 0 {
			t.Errorf("%s: no nodeprint command found in its scripts", f.path)
		}
		for _, line := range lines {
			if err := checkCommandLine(line, f.dir, f.publishes); err != nil {
				t.Errorf("%s: nodeprint %s: %v", f.path, line, err)
			}
		}
	}
}

// checkCommandLine parses one command line (what follows "nodeprint")
// with the CLI's command tree.
func checkCommandLine(line, dir string, publishes bool) error {
	args, err := shellWords(line)
	if err != nil {
		return err
	}
	root := newRootCmd(io.Discard, io.Discard)
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		return fmt.Errorf("no such command (%v)", err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	pos := cmd.Flags().Args()
	if cmd.Args != nil {
		if err := cmd.Args(cmd, pos); err != nil {
			return err
		}
	}
	if f := cmd.Flags().Lookup("shard"); f != nil && f.Changed {
		if _, _, err := harness.ParseShard(f.Value.String()); err != nil {
			return err
		}
	}
	if cmd.Name() == "run" || cmd.Name() == "verify" || cmd.Name() == "record" {
		for _, a := range pos {
			if strings.ContainsAny(a, "/.") {
				if _, err := os.Stat(filepath.Join(dir, a)); err != nil {
					return fmt.Errorf("scenario path %s: %v", a, err)
				}
			}
		}
	}
	if publishes && cmd.Name() == "run" {
		for _, name := range []string{"shard", "report-dir"} {
			if f := cmd.Flags().Lookup(name); f == nil || !f.Changed {
				return fmt.Errorf("the example runs the catalog without --%s", name)
			}
		}
	}
	return nil
}

// scriptKeys hold shell: a GitHub step's run, a GitLab job's scripts, a
// container's command and args.
var scriptKeys = []string{"run", "script", "before_script", "after_script", "command", "args"}

// invocation finds nodeprint run as a command: at the start of a script
// line, after ; & | ( or exec, as bin/nodeprint or nodeprint; the command
// line ends at the next ; & | ) or the end of the line.
var invocation = regexp.MustCompile(`(?m)(?:^|[;&|(]|\bexec)\s*(?:bin/)?nodeprint\s+([^;&|)\n]+)`)

// commandLines are the nodeprint command lines in the file's scripts.
func commandLines(t *testing.T, path string, b []byte) []string {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s is not valid YAML: %v", path, err)
	}
	var scripts []string
	var walk func(v any, inScript bool)
	walk = func(v any, inScript bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, v := range x {
				walk(v, slices.Contains(scriptKeys, k))
			}
		case []any:
			for _, v := range x {
				walk(v, inScript)
			}
		case string:
			if inScript {
				scripts = append(scripts, x)
			}
		}
	}
	walk(doc, false)
	var out []string
	for _, s := range scripts {
		for _, m := range invocation.FindAllStringSubmatch(expandShell(s), -1) {
			out = append(out, strings.TrimSpace(m[1]))
		}
	}
	return out
}

var (
	ciExpression = regexp.MustCompile(`\$\{\{[^}]*\}\}`)
	arithmetic   = regexp.MustCompile(`\$\(\([^)]*\)\)`)
	variable     = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
)

// expandShell stands 1 for what the CI or the shell fills in: a GitHub
// expression, an arithmetic expansion, a variable (a shard index, a
// count).
func expandShell(s string) string {
	s = ciExpression.ReplaceAllString(s, "1")
	s = arithmetic.ReplaceAllString(s, "1")
	return variable.ReplaceAllString(s, "1")
}

// shellWords splits a command line as the shell does for the quoting the
// examples use: whitespace outside quotes separates words, single and
// double quotes group.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
