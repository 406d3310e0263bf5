package process

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestWaitExitReturnsWhenTheProcessDies(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Reaped by Wait below: WaitExit must not depend on being the parent.
	done := make(chan error, 1)
	go func() { done <- WaitExit(context.Background(), cmd.Process.Pid) }()
	select {
	case err := <-done:
		t.Fatalf("WaitExit returned %v while the process runs", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitExit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitExit did not return after the process was killed")
	}
	_ = cmd.Wait()
}

func TestWaitExitOfAGoneProcessReturnsAtOnce(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := WaitExit(context.Background(), cmd.Process.Pid); err != nil {
		t.Fatalf("WaitExit of a reaped pid: %v", err)
	}
}

func TestWaitExitStopsWithItsContext(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := WaitExit(ctx, cmd.Process.Pid); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitExit = %v, want the context's deadline", err)
	}
}
