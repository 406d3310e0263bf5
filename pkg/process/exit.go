package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// deadlinePassed is a read deadline in the past: it wakes a parked Read.
var deadlinePassed = time.Unix(1, 0)

// ErrNoPidfd is returned by WaitExit where the kernel has no pidfd
// (before Linux 5.3); callers then find exits by probing.
var ErrNoPidfd = errors.New("pidfd is not supported")

// WaitExit returns nil when the process pid exits (or has exited, or is a
// zombie), and ctx's error when ctx is done first. It works for any
// process, not only the caller's children: it waits on a pidfd through
// the runtime's poller, so a supervisor learns of a death at once
// instead of at its next probe, and holds no thread while it waits.
func WaitExit(ctx context.Context, pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil // already gone
	case errors.Is(err, unix.ENOSYS):
		return ErrNoPidfd
	case err != nil:
		return fmt.Errorf("failed to open a pidfd for pid %d: %w", pid, err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("failed to make the pidfd of pid %d non-blocking: %w", pid, err)
	}
	// A non-blocking descriptor given to os.NewFile joins the runtime's
	// poller: Read below parks the goroutine until the pidfd is readable,
	// which it becomes when the process exits.
	f := os.NewFile(uintptr(fd), fmt.Sprintf("pidfd %d", pid))
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("failed to wait for pid %d: %w", pid, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(deadlinePassed) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, perr := unix.Poll(p, 0)
		return perr == nil && n > 0
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("failed to wait for pid %d: %w", pid, err)
	}
	return nil
}

// WaitReaped waits until pid no longer exists at all, not even as a zombie
// waiting for its parent (a process started by a tool that exited is
// reaped by init, a moment after it died). Tools that test liveness with
// signal 0, such as kwokctl, take a zombie for a running process.
func WaitReaped(ctx context.Context, pid int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pid %d still exists (a zombie not reaped by its parent) after %s", pid, timeout)
		case <-tick.C:
		}
	}
}
