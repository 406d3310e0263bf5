package suitekit

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/internal/modproxy"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// InstallCLI installs nodeprint by version as a team does, `go install
// github.com/nodeprint/nodeprint/tools/nodeprint@VERSION`, from a file
// module proxy that serves this tree (internal/modproxy) in front of the
// machine's GOPROXY, into a temporary GOBIN. The CLI it returns runs in dir,
// outside the checkout, with its per-user cache in cache. The version is new
// for each call: the module cache keeps a version's files for ever, and
// DeferCleanup removes this one's.
func (c *CLI) InstallCLI(ctx context.Context, dir, cache string) *CLI {
	GinkgoHelper()
	version := fmt.Sprintf("v0.0.1-proof.%d", time.Now().UnixNano())
	By("serving this tree as nodeprint " + version + " from a file module proxy")
	proxy := GinkgoT().TempDir()
	_, err := modproxy.Write(ctx, proxy, c.Toolchain.Root, version)
	Expect(err).NotTo(HaveOccurred())
	gobin := GinkgoT().TempDir()
	goproxy := "file://" + proxy
	if p := goEnv(ctx, "GOPROXY"); p != "" && p != "off" {
		goproxy += "," + p
	}
	env := append(teamEnv(), "GOPROXY="+goproxy, "GONOSUMDB="+toolchain.ModulePath, "GOFLAGS=-modcacherw",
		toolchain.CacheDirEnv+"="+cache, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))
	DeferCleanup(removeFromModuleCache, version)
	By("go install " + toolchain.InstallPath + "@" + version)
	cmd := exec.CommandContext(ctx, "go", "install", toolchain.InstallPath+"@"+version)
	cmd.Dir, cmd.Env = dir, append(env, "GOBIN="+gobin)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go install:\n%s", out)
	return &CLI{Path: filepath.Join(gobin, "nodeprint"), Toolchain: c.Toolchain, Dir: dir, Env: env}
}

// teamEnv is the suite's environment without what points nodeprint at
// this checkout or at a cache: a team's machine has neither.
func teamEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != toolchain.RootEnv && k != toolchain.CacheDirEnv && k != "GOFLAGS" && k != "PATH" {
			env = append(env, kv)
		}
	}
	return env
}

func goEnv(ctx context.Context, name string) string {
	out, err := exec.CommandContext(ctx, "go", "env", name).Output()
	Expect(err).NotTo(HaveOccurred(), "go env %s", name)
	return strings.TrimSpace(string(out))
}

// removeFromModuleCache drops the proof version's modules (the root and
// the nested ones) and their downloads from the module cache, which keeps
// every version for ever.
func removeFromModuleCache(ctx context.Context, version string) {
	cache := goEnv(ctx, "GOMODCACHE")
	var found []string
	for _, top := range []string{filepath.Join(cache, "github.com", "nodeprint"), filepath.Join(cache, "cache", "download", "github.com", "nodeprint")} {
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if name := d.Name(); strings.HasSuffix(name, "@"+version) || strings.HasPrefix(name, version+".") {
				found = append(found, p)
				if d.IsDir() {
					return filepath.SkipDir
				}
			}
			return nil
		})
	}
	for _, p := range found {
		Expect(os.RemoveAll(p)).To(Succeed())
	}
}

// ExpectGo runs the go command where the CLI runs, with its environment
// (a team's repository, the proxy serving this tree), and expects it to
// succeed.
func (c *CLI) ExpectGo(ctx context.Context, args ...string) Result {
	GinkgoHelper()
	By("go " + strings.Join(args, " "))
	r, err := runCommand(ctx, c.dir(), c.Env, "go", args...)
	Expect(err).NotTo(HaveOccurred(), "go %s in %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), c.dir(), r.Stdout, r.Stderr)
	return r
}
