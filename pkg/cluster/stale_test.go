package cluster

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func writeClusterState(t *testing.T, root, name string, owner *Owner) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(state{Name: name, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFindStaleAndPrune(t *testing.T) {
	root := t.TempDir()
	tc := &toolchain.Toolchain{Root: t.TempDir(), Bin: t.TempDir()}
	opts := []Option{WithWorkRoot(root), WithToolchain(tc)}

	// An owner that has exited: its pid and start time name no live process.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	writeClusterState(t, root, "killed-run", &Owner{PID: cmd.Process.Pid, Start: 1})
	writeClusterState(t, root, "live-run", currentOwner())
	writeClusterState(t, root, "from-cluster-up", nil)
	interrupted := filepath.Join(root, "interrupted")
	if err := os.MkdirAll(interrupted, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * incompleteAge)
	if err := os.Chtimes(interrupted, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "starting-now"), 0o700); err != nil {
		t.Fatal(err)
	}

	stale, err := FindStale(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stale {
		names = append(names, s.Name)
	}
	if len(names) != 2 || names[0] != "interrupted" || names[1] != "killed-run" {
		t.Fatalf("stale clusters: got %v, want [interrupted killed-run] (a live owner, no owner and a start in progress are not stale)", names)
	}

	pruned, err := Prune(context.Background(), opts...)
	if err != nil || len(pruned) != 2 {
		t.Fatalf("prune: %d pruned, %v", len(pruned), err)
	}
	for _, name := range []string{"interrupted", "killed-run"} {
		if _, err := os.Stat(filepath.Join(root, name)); !os.IsNotExist(err) {
			t.Errorf("%s was not removed: %v", name, err)
		}
	}
	for _, name := range []string{"live-run", "from-cluster-up", "starting-now"} {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s must be kept: %v", name, err)
		}
	}
	if again, err := FindStale(opts...); err != nil || len(again) != 0 {
		t.Fatalf("after prune: %v, %v", again, err)
	}
}
