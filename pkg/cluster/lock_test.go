package cluster

import (
	"context"
	"strings"
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
