package main

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/template"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// The team repository `nodeprint init` writes; [[ ]] delimit the
// template's fields so that GitHub's ${{ }} stays as it is.
//
//go:embed all:scaffold
var scaffold embed.FS

type scaffoldData struct {
	Name, Module, Version, GoVersion string
}

var repoName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

func newInitCmd(stdout io.Writer) *cobra.Command {
	var d scaffoldData
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold a team repository: a NodePool file, a workload manifest, a scenario, CI for GitHub and GitLab",
		Long: `Writes into DIR (default: the working directory, which must hold none of the files):
  nodeprint.yaml             marks the team repository (commands below it default to its scenarios and fingerprints)
  nodepools/karpenter.yaml   an EC2NodeClass and a NodePool as a GitOps repository holds them: replace with yours
  workloads/web.yaml         a rendered Deployment and HPA: replace with yours
  scenarios/web.yaml         replays the workload against the NodePool
  fingerprints/              where record writes the baselines
  .github/workflows/nodeprint.yml, .gitlab-ci.yml
                             install nodeprint --version, cache the toolchain, verify, publish JUnit, post the summary
  go.mod, suites/nodepools/  a Ginkgo suite of the team's own (go mod tidy once, then go test ./suites/...)
  README.md                  for the team
Then: nodeprint record scenarios/ (commit fingerprints/), and nodeprint verify scenarios/ after a change.`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return usageError{err}
			}
			if d.Name == "" {
				d.Name = strings.ToLower(filepath.Base(abs))
			}
			if !repoName.MatchString(d.Name) {
				return usageError{fmt.Errorf("--name %q: want lower-case letters, digits and dashes (it names the example EC2NodeClass's tags)", d.Name)}
			}
			if d.Version == "" {
				d.Version = ownVersion()
			}
			if d.Module == "" {
				d.Module = "example.com/" + d.Name
			}
			files, err := renderScaffold(d)
			if err != nil {
				return err
			}
			if err := writeScaffold(abs, files); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "team repository written to %s (nodeprint %s in CI)\nnext: cd %s && nodeprint record scenarios/ && git add .\n", abs, d.Version, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&d.Name, "name", "", "the repository's name (default: DIR's name)")
	cmd.Flags().StringVar(&d.Version, "version", "", "the nodeprint version CI installs and go.mod requires (default: this binary's, else latest)")
	cmd.Flags().StringVar(&d.Module, "module", "", "the Go module path of the team's suites (default: example.com/NAME)")
	cmd.Flags().StringVar(&d.GoVersion, "go-version", goMinor(), "the Go version CI sets up")
	return cmd
}

// ownVersion is the version this binary was installed as; a build from a
// checkout has none and the CI installs the latest release.
func ownVersion() string {
	if v, served := toolchain.OwnVersion(); served {
		return v
	}
	return "latest"
}

func goMinor() string {
	v := strings.TrimPrefix(runtime.Version(), "go")
	if parts := strings.SplitN(v, ".", 3); len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	return v
}

// renderScaffold is every file of the scaffold, by slash path, filled in.
func renderScaffold(d scaffoldData) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(scaffold, "scaffold", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := scaffold.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "scaffold/")
		// Go files are copied as they are: they compile and run in this
		// repository too (go test ./tools/...).
		if path.Ext(p) == ".go" {
			files[name] = b
			return nil
		}
		// go.mod is kept as go.mod.tmpl here: a go.mod would make the
		// scaffold a module of its own, which go:embed cannot take.
		name = strings.TrimSuffix(name, ".tmpl")
		t, err := template.New(p).Delims("[[", "]]").Option("missingkey=error").Parse(string(b))
		if err != nil {
			return fmt.Errorf("failed to parse the scaffold's %s: %w", p, err)
		}
		var out bytes.Buffer
		if err := t.Execute(&out, d); err != nil {
			return fmt.Errorf("failed to render the scaffold's %s: %w", p, err)
		}
		files[name] = out.Bytes()
		return nil
	})
	return files, err
}

// writeScaffold refuses before writing anything when one of the files is
// already there: init never overwrites a team's work.
func writeScaffold(dir string, files map[string][]byte) error {
	var there []string
	for p := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); !errors.Is(err, fs.ErrNotExist) {
			there = append(there, p)
		}
	}
	if len(there) > 0 {
		return usageError{fmt.Errorf("%s already holds %s: init writes a new team repository and never overwrites; choose an empty directory",
			dir, strings.Join(slices.Sorted(slices.Values(there)), ", "))}
	}
	for p, b := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", path.Dir(p), err)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return fmt.Errorf("failed to write %s: %w", f, err)
		}
	}
	return nil
}
