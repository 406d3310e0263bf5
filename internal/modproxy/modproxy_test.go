package modproxy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// The proxy serves the checkout's modules so that the go command takes
// them as published: the root module without the nested ones, each nested
// one on its own.
func TestWriteServesTheCheckoutsModules(t *testing.T) {
	dir := t.TempDir()
	mods, err := Write(context.Background(), dir, "../..", "v0.0.1-test")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/nodeprint/nodeprint", "github.com/nodeprint/nodeprint/tools/karpenter", "github.com/nodeprint/nodeprint/tools/toolchain/kubernetes"} {
		if !slices.Contains(mods, want) {
			t.Errorf("modules %v: want %s", mods, want)
		}
	}
	root := download(t, dir, "github.com/nodeprint/nodeprint@v0.0.1-test")
	if _, err := os.Stat(filepath.Join(root, "tools", "toolchain", "versions.mk")); err != nil {
		t.Errorf("the root module holds tools/toolchain/versions.mk: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "karpenter", "main.go")); err == nil {
		t.Errorf("the root module's zip holds the nested module tools/karpenter: a release would not")
	}
	karpenter := download(t, dir, "github.com/nodeprint/nodeprint/tools/karpenter@v0.0.1-test")
	if _, err := os.Stat(filepath.Join(karpenter, "main.go")); err != nil {
		t.Errorf("the nested module tools/karpenter is served on its own: %v", err)
	}
}

func download(t *testing.T, proxy, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+proxy, "GONOSUMDB=github.com/nodeprint", "GOFLAGS=-modcacherw", "GOMODCACHE="+t.TempDir())
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		t.Fatalf("go mod download %s: %v %s %s", mod, err, info.Error, out)
	}
	return info.Dir
}
