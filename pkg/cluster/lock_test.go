package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStartLockSerialises(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first, err := acquireStartLock(ctx, dir, func(string) { t.Error("the first holder must not wait") })
	if err != nil {
		t.Fatal(err)
	}
	var waited []string
	got := make(chan error, 1)
	go func() {
		second, err := acquireStartLock(ctx, dir, func(msg string) { waited = append(waited, msg) })
		if err == nil {
			second.release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the second acquire returned (%v) while the first holds the lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	first.release()
	if err := <-got; err != nil {
		t.Fatalf("second acquire after release: %v", err)
	}
	if len(waited) != 1 || !strings.Contains(waited[0], "waiting for another cluster") {
		t.Fatalf("want one waiting message, got %q", waited)
	}
}

func TestStartLockHonoursContext(t *testing.T) {
	dir := t.TempDir()
	first, err := acquireStartLock(context.Background(), dir, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer first.release()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := acquireStartLock(ctx, dir, func(string) {}); err == nil || !strings.Contains(err.Error(), "start lock") {
		t.Fatalf("want a timeout naming the lock, got %v", err)
	}
}

// restartPlane is a control plane whose restart reports whether it was
// called; everything else of the interface is unused by RestartComponent
// before restart (nil: a call panics and fails the test).
type restartPlane struct {
	controlPlane
	dir       string
	restarted chan struct{}
}

func (p *restartPlane) kind() Kind         { return KindLocal }
func (p *restartPlane) kubeconfig() string { return filepath.Join(p.dir, "no-kubeconfig.yaml") }
func (p *restartPlane) components(context.Context, *statusClients, error) []ComponentStatus {
	return []ComponentStatus{{Name: "kube-apiserver", Exited: true}}
}
func (p *restartPlane) restart(context.Context, []string) error {
	close(p.restarted)
	return errors.New("stop here")
}

// A restarted component's port is free until it runs again: another
// cluster's start must not pick it, so RestartComponent waits for the
// machine-wide start lock before it stops or starts anything.
func TestRestartComponentHoldsTheStartLock(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := filepath.Join(tmp, "cluster")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"name":"t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	p := &restartPlane{dir: dir, restarted: make(chan struct{})}
	l := &Local{dir: dir, tc: testToolchain(t), opts: Options{name: "t", timeout: 10 * time.Second, progress: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e.Message)
	}}}
	l.cp = p

	held, err := acquireStartLock(context.Background(), tmp, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.RestartComponent(context.Background(), "kube-apiserver") }()
	select {
	case <-p.restarted:
		t.Fatal("the component was started again while another cluster held the start lock")
	case err := <-done:
		t.Fatalf("RestartComponent returned (%v) while another cluster held the start lock", err)
	case <-time.After(500 * time.Millisecond):
	}
	held.release()
	select {
	case <-p.restarted:
	case <-time.After(5 * time.Second):
		t.Fatal("the component was not started again after the lock was released")
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("want the fake's error, got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(events, func(m string) bool { return strings.Contains(m, "waiting for another cluster's control plane") }) {
		t.Fatalf("RestartComponent did not say what it waited for; progress: %q", events)
	}
}
