package toolchain

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
