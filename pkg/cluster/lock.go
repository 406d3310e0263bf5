package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// startLock serialises cluster starts across processes. kwokctl picks each
// component's port by checking that it is free, then starts the components:
// two clusters starting at the same moment can pick the same port, and one
// of them loses its etcd or kube-apiserver. A component that exits during
// start-up (metrics-server, when kube-apiserver did not answer yet) frees
// its port until Up restarts it, so the lock is held for the whole of Up;
// clusters that are up do not need it, their ports are taken, except while
// one of their components restarts (RestartComponent holds it too).
type startLock struct{ f *os.File }

func acquireStartLock(ctx context.Context, dir string, waiting func(string)) (*startLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", dir, err)
	}
	path := filepath.Join(dir, "nodeprint-cluster-start.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the start lock %s: %w", path, err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	reported := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &startLock{f: f}, nil
		}
		if err != syscall.EWOULDBLOCK { //nolint:errorlint // a raw errno
			f.Close()
			return nil, fmt.Errorf("failed to lock %s: %w", path, err)
		}
		if !reported {
			waiting("waiting for another cluster's control plane to finish starting or restarting (" + path + ")")
			reported = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the start lock %s: %w", path, ctx.Err())
		case <-tick.C:
		}
	}
}

// lockPorts takes the start lock for this cluster's phase, saying in its
// progress what it waits for. The lock is machine-wide (in the temporary
// directory), not per checkout: ports are a machine's, and two checkouts
// start clusters too.
func (l *Local) lockPorts(ctx context.Context, phase string) (*startLock, error) {
	return acquireStartLock(ctx, os.TempDir(), func(msg string) {
		l.opts.progress(Event{Phase: phase, Message: msg})
	})
}

func (l *startLock) release() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}
