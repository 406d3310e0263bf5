package toolchain

import (
	"context"
	"runtime/debug"

	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/internal/modproxy"
)

func TestFindReadsPinnedVersionsWithOverrides(t *testing.T) {
	env := map[string]string{"KARPENTER_VERSION": "v1.15.0"}
	tc, err := Find(WithRoot("../.."), WithEnv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if tc.Versions.Karpenter != "v1.15.0" {
		t.Fatalf("the environment overrides versions.mk as in make: got %s", tc.Versions.Karpenter)
	}
	if tc.Versions.Kubernetes != "v1.36.3" || tc.Versions.Etcd != "v3.6.8" || tc.Versions.Kwok != "v0.8.0" {
		t.Fatalf("pinned versions: %+v", tc.Versions)
	}
	if want := filepath.Join(tc.Bin, "karpenter", "v1.15.0", "karpenter-kwok"); tc.Paths().Karpenter != want {
		t.Fatalf("each Karpenter version has its own directory: %s", tc.Paths().Karpenter)
	}
}

func TestCheckNamesMissingFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tools", "toolchain"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../" + VersionsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, VersionsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	tc, err := Find(WithRoot(root), WithEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	var missing *MissingError
	if err := tc.Check(); !errors.As(err, &missing) || !strings.Contains(err.Error(), "bin/kube-apiserver") || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("want a MissingError naming the files and the fix, got %v", err)
	}
	tc.KarpenterBinary = "/nonexistent/karpenter-kwok"
	if err := tc.Check(); err == nil || !strings.Contains(err.Error(), " /nonexistent/karpenter-kwok") || strings.Contains(err.Error(), "bin/nonexistent") {
		t.Fatalf("a Karpenter binary outside bin/ is named as given: %v", err)
	}
}

func TestBadVersionsFile(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tools", "toolchain"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"not an assignment": "K8S_VERSION = v1.36.3\n",
		"missing version":   "K8S_VERSION ?= v1.36.3\n",
		"not a version":     "K8S_VERSION ?= latest\nETCD_VERSION ?= v1\nKWOK_VERSION ?= v1\nMETRICS_SERVER_VERSION ?= v1\nKARPENTER_VERSION ?= v1\n",
	} {
		if err := os.WriteFile(filepath.Join(root, VersionsFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Find(WithRoot(root), WithEnv(func(string) string { return "" })); err == nil || !strings.Contains(err.Error(), VersionsFile) {
			t.Errorf("%s: want an error naming %s, got %v", name, VersionsFile, err)
		}
	}
}

// An installed binary finds no checkout: its files are its own module
// version, which the go command serves, and its binaries and state go to
// the per-user cache.
func TestFindInstalledUsesItsModuleVersionAndTheCache(t *testing.T) {
	proxy := t.TempDir()
	if _, err := modproxy.Write(context.Background(), proxy, "../..", "v0.0.1-test"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "file://"+proxy)
	t.Setenv("GONOSUMDB", "github.com/nodeprint")
	t.Setenv("GOFLAGS", "-modcacherw")
	t.Setenv("GOMODCACHE", t.TempDir())
	cache := t.TempDir()
	env := map[string]string{"XDG_CACHE_HOME": cache}
	outside := func() (string, error) { return t.TempDir(), nil }
	installed := func(version string) Option {
		return WithBuildInfo(func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: version}}, true
		})
	}
	tc, err := Find(WithEnv(func(k string) string { return env[k] }), WithWorkingDir(outside), installed("v0.0.1-test"))
	if err != nil {
		t.Fatal(err)
	}
	if tc.Source != Installed || tc.Version != "v0.0.1-test" || !strings.HasSuffix(tc.Root, "@v0.0.1-test") {
		t.Fatalf("want the installed layout of v0.0.1-test, got %s %s at %s", tc.Source, tc.Version, tc.Root)
	}
	if want := filepath.Join(cache, "nodeprint", "toolchain"); tc.Bin != want || tc.Work != filepath.Join(cache, "nodeprint", "work") {
		t.Fatalf("binaries %s, state %s: want them under %s", tc.Bin, tc.Work, filepath.Dir(want))
	}
	if tc.Versions.Karpenter == "" || tc.Fix() != "nodeprint toolchain build" {
		t.Fatalf("versions %+v, fix %q", tc.Versions, tc.Fix())
	}
	if err := tc.stageModules(context.Background(), filepath.Join(t.TempDir(), "modules")); err != nil {
		t.Fatalf("the build modules of the same version: %v", err)
	}
	for _, v := range []string{"(devel)", "v0.0.0-20261201000000-abcdefabcdef+dirty"} {
		var nf *NotFoundError
		if _, err := Find(WithEnv(func(k string) string { return env[k] }), WithWorkingDir(outside), installed(v)); !errors.As(err, &nf) || !strings.Contains(err.Error(), "go install "+InstallPath) {
			t.Errorf("%s outside a checkout: want a NotFoundError saying how to install, got %v", v, err)
		}
	}
	asDependency := WithBuildInfo(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/platform-checks", Version: "(devel)"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v0.0.1-test"}}}, true
	})
	if tc, err := Find(WithEnv(func(k string) string { return env[k] }), WithWorkingDir(outside), asDependency); err != nil || tc.Version != "v0.0.1-test" {
		t.Errorf("a team's suite that imports nodeprint: want the dependency's version, got %v, %v", tc, err)
	}
	if _, err := Find(WithEnv(func(k string) string { return env[k] }), WithWorkingDir(outside), installed("v9.9.9")); err == nil || !strings.Contains(err.Error(), "v9.9.9") {
		t.Errorf("a version the proxy does not serve: want an error naming it, got %v", err)
	}
}

// A team's suite whose go.mod replaces nodeprint with a local checkout
// uses that checkout: a test binary records no dependencies, so the go
// command is asked what the module around the suite requires.
func TestFindInATeamModuleThatReplacesNodeprint(t *testing.T) {
	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	team := t.TempDir()
	gomod := "module example.com/platform-checks\n\ngo 1.26\n\nrequire " + ModulePath + " v0.0.0\n\nreplace " + ModulePath + " => " + checkout + "\n"
	sum, err := os.ReadFile("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(team, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	devel := WithBuildInfo(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/platform-checks", Version: "(devel)"}}, true
	})
	tc, err := Find(WithEnv(func(string) string { return "" }), WithWorkingDir(func() (string, error) { return team, nil }), devel)
	if err != nil || tc.Source != Checkout || tc.Root != checkout {
		t.Fatalf("want the replacing checkout %s, got %+v, %v", checkout, tc, err)
	}
	if _, err := Find(WithEnv(func(string) string { return "" }), WithWorkingDir(func() (string, error) { return t.TempDir(), nil }), devel); err == nil {
		t.Error("outside any module that requires nodeprint: want a NotFoundError")
	}
}

// Status reads each component's stamp, the optional ones (built when the
// kind provider needs them) included and marked, each at its own version.
func TestStatusListsOptionalComponents(t *testing.T) {
	tc, err := Find(WithRoot("../.."), WithEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	tc.Bin = t.TempDir()
	stamps := filepath.Join(tc.Bin, ".stamps")
	if err := os.MkdirAll(stamps, 0o755); err != nil {
		t.Fatal(err)
	}
	v := tc.Versions
	for name, stamp := range map[string]string{"karpenter-image-" + v.Karpenter: "karpenter-image " + v.Karpenter + " sources x recipe 1", "helm": "helm v0.0.1 static"} {
		if err := os.WriteFile(filepath.Join(stamps, name), []byte(stamp+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]Component{}
	for _, c := range tc.Status() {
		got[c.Name] = c
	}
	for name, want := range map[string]struct{ optional, current, built bool }{
		"kubernetes": {false, false, false}, "kind-node": {true, false, false},
		"karpenter-image": {true, true, true}, "helm": {true, false, true},
	} {
		c, ok := got[name]
		if !ok || c.Optional != want.optional || c.Current() != want.current || (c.Built != "") != want.built {
			t.Errorf("%s: %+v (current %t), want optional %t, current %t, built %t", name, c, c.Current(), want.optional, want.current, want.built)
		}
	}
}
