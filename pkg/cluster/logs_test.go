package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// ExportLogs gathers Karpenter's log and the control plane's from their
// two directories into one.
func TestExportLogsCopiesEveryComponentsLog(t *testing.T) {
	root := t.TempDir()
	l, err := NewLocal(WithName("logs"), WithWorkRoot(root), WithToolchain(&toolchain.Toolchain{Root: root}))
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if _, err := l.ExportLogs(dest); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Fatalf("ExportLogs of a cluster without logs: %v, want an error saying it has none", err)
	}
	for path, body := range map[string]string{
		l.KarpenterLog(): "karpenter started",
		filepath.Join(root, "logs", "kwok", "clusters", "logs", "logs", "kube-apiserver.log"): "apiserver started",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := l.ExportLogs(dest)
	if err != nil || n != 2 {
		t.Fatalf("ExportLogs: %d files, %v; want 2", n, err)
	}
	for name, want := range map[string]string{"karpenter.log": "karpenter started", "kube-apiserver.log": "apiserver started"} {
		b, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
}

// KeepLog copies the logs out of the cluster's directory and names the
// copy of the one asked for: a temporary cluster is removed right after the
// failure an incident reports, with its logs.
func TestKeepLogOutlivesTheCluster(t *testing.T) {
	root := t.TempDir()
	l, err := NewLocal(WithName("kept"), WithWorkRoot(filepath.Join(root, "clusters")), WithToolchain(&toolchain.Toolchain{Root: root}))
	if err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(l.dir, "logs", "kube-scheduler.log")
	if err := os.MkdirAll(filepath.Dir(live), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(live, []byte("lost its lease"), 0o600); err != nil {
		t.Fatal(err)
	}
	kept := l.KeepLog(live)
	if kept == live || !strings.HasPrefix(kept, filepath.Join(root, "failed")) {
		t.Fatalf("kept log %s, want a copy under %s", kept, filepath.Join(root, "failed"))
	}
	if err := os.RemoveAll(l.dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "lost its lease" {
		t.Fatalf("the kept copy after the cluster's directory is gone: %q, %v", b, err)
	}
}
