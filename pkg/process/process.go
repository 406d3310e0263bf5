// Package process starts and stops the long-running programs the harness
// owns (Karpenter, in particular). Each process runs in a session of its own,
// so a Ctrl-C in the terminal reaches only the harness, which then stops its
// processes in order; a pid file lets a later invocation (`nodeprint cluster
// down`) find and stop a process that an earlier one started.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec describes a process to start.
type Spec struct {
	// Name is for messages only.
	Name string
	// Path is the binary; it must exist.
	Path string
	Args []string
	// Env is the complete environment (nil: the harness's own).
	Env []string
	Dir string
	// LogFile receives stdout and stderr (appended).
	LogFile string
	// PIDFile, when set, records the pid while the process runs.
	PIDFile string
}

// Handle is a started process.
type Handle struct {
	Spec Spec
	PID  int
	cmd  *exec.Cmd // nil when adopted from a pid file
	done chan struct{}
	err  error
}

// Start starts the process. It returns once the process exists; readiness
// is the caller's to check.
func Start(spec Spec) (*Handle, error) {
	if _, err := os.Stat(spec.Path); err != nil {
		return nil, fmt.Errorf("failed to start %s: binary %s: %w (build the toolchain: `make tools` in a checkout, `nodeprint toolchain build` when installed)", spec.Name, spec.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(spec.LogFile), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the log directory for %s: %w", spec.Name, err)
	}
	logf, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open the log of %s: %w", spec.Name, err)
	}
	defer logf.Close() // the child keeps its own descriptor
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", spec.Name, err)
	}
	h := &Handle{Spec: spec, PID: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	go func() {
		h.err = cmd.Wait()
		close(h.done)
	}()
	if spec.PIDFile != "" {
		if err := os.WriteFile(spec.PIDFile, []byte(strconv.Itoa(h.PID)+"\n"), 0o600); err != nil {
			_ = h.Stop(context.Background(), time.Second)
			return nil, fmt.Errorf("failed to write the pid file of %s: %w", spec.Name, err)
		}
	}
	return h, nil
}

// Adopt returns a handle for a process recorded in a pid file by an earlier
// invocation. It fails with os.ErrNotExist when no live process with the
// expected binary has that pid (a stale pid file, or a pid reused by another
// program).
func Adopt(spec Spec) (*Handle, error) {
	b, err := os.ReadFile(spec.PIDFile)
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("pid file %s: %q is not a pid", spec.PIDFile, strings.TrimSpace(string(b)))
	}
	if !Runs(pid, spec.Path) {
		return nil, fmt.Errorf("%s (pid %d from %s) is not running: %w", spec.Name, pid, spec.PIDFile, os.ErrNotExist)
	}
	return &Handle{Spec: spec, PID: pid}, nil
}

// Alive reports whether the process still runs.
func (h *Handle) Alive() bool {
	if h.done != nil {
		select {
		case <-h.done:
			return false
		default:
			return true
		}
	}
	return Runs(h.PID, h.Spec.Path)
}

// Stop sends SIGTERM, waits up to grace, then SIGKILL, and waits for the
// process to be gone (bounded by ctx). The pid file is removed.
func (h *Handle) Stop(ctx context.Context, grace time.Duration) error {
	defer func() {
		if h.Spec.PIDFile != "" {
			_ = os.Remove(h.Spec.PIDFile)
		}
	}()
	if !h.Alive() {
		return nil
	}
	_ = syscall.Kill(h.PID, syscall.SIGTERM)
	if h.waitGone(ctx, grace) {
		return nil
	}
	_ = syscall.Kill(h.PID, syscall.SIGKILL)
	if h.waitGone(ctx, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("failed to stop %s (pid %d): still running after SIGKILL", h.Spec.Name, h.PID)
}

func (h *Handle) waitGone(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	if h.done != nil {
		select {
		case <-h.done:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	// An adopted process is not our child: nothing to wait on, so look.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if !Runs(h.PID, h.Spec.Path) {
			return true
		}
		select {
		case <-tick.C:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// alive reports whether the state in a /proc/<pid>/stat line is a living
// one. The state follows the command name, which is in parentheses and may
// hold spaces and parentheses. A dead process is a zombie (Z) until its
// parent reaps it, and dead (X; x before Linux 3.13) while the parent's
// wait is reaping it: a probe racing the reaper sees X for a moment.
func alive(stat []byte) bool {
	_, state, ok := parseStat(stat)
	if !ok {
		return true // no state to read: the caller's other checks decide
	}
	switch state {
	case 'Z', 'X', 'x':
		return false
	}
	return true
}

// parseStat reads a line of /proc/<pid>/stat: the kernel's name of the
// process (at most 15 bytes of its executable's name, in parentheses,
// which the name itself may contain) and its state letter.
func parseStat(stat []byte) (comm string, state byte, ok bool) {
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || end+2 >= len(stat) {
		return "", 0, false
	}
	return string(stat[open+1 : end]), stat[end+2], true
}

// Runs reports whether pid is a live (not zombie, not dead) process running binary
// (compared by the path in /proc/<pid>/exe or, failing that, argv[0]).
func Runs(pid int, binary string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if !alive(stat) {
		return false
	}
	if binary == "" {
		return true
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		exe = strings.TrimSuffix(exe, " (deleted)")
		if exe == binary {
			return true
		}
		// /proc/<pid>/exe is resolved; binary may name it through a
		// symbolic link (a bin/ that links to another checkout's).
		resolved, err := filepath.EvalSymlinks(binary)
		return err == nil && exe == resolved
	}
	argv0, err := commandName(pid)
	return err == nil && argv0 == binary
}

// commandName is pid's argv[0], as its command line in /proc names it.
func commandName(pid int) (string, error) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", err
	}
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	return argv0, nil
}

// FindByPrefix lists live processes whose executable is under dir; the
// tests use it to prove that nothing the harness started is left behind.
func FindByPrefix(dir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to list /proc: %w", err)
	}
	dir = filepath.Clean(dir) + string(filepath.Separator)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue
		}
		if strings.HasPrefix(exe, dir) && Runs(pid, "") {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// ErrExited is wrapped by errors about a process that exited on its own.
var ErrExited = errors.New("process exited")

// FindReferencing lists live processes that run in dir (their working
// directory is dir or below it) or name it in an argument. kwokctl passes
// each component paths inside the cluster's work directory and the harness
// starts Karpenter in it, so this finds every process of a cluster, even one
// whose pid file was lost.
func FindReferencing(dir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("failed to list /proc: %w", err)
	}
	dir = filepath.Clean(dir)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		inDir := cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator))
		if !inDir {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			// dir plus a separator, so that cluster "a" never matches "ab".
			if err != nil || !strings.Contains(string(b), dir+string(filepath.Separator)) {
				continue
			}
		}
		if Runs(pid, "") {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Describe names each pid by its executable's base name ("etcd (pid 42)"),
// so that a message about processes says which ones. A process that has
// released its memory on the way out has no command line left: it is
// named by the kernel's name for it, in its state ("etcd (pid 42,
// exiting)"); a pid that is already gone is named by its number alone.
func Describe(pids []int) string {
	names := make([]string, 0, len(pids))
	for _, pid := range pids {
		if argv0, err := commandName(pid); err == nil && argv0 != "" {
			names = append(names, fmt.Sprintf("%s (pid %d)", filepath.Base(argv0), pid))
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if comm, state, ok := parseStat(stat); ok && comm != "" {
			names = append(names, fmt.Sprintf("%s (pid %d, %s)", comm, pid, exitingState(state)))
			continue
		}
		names = append(names, fmt.Sprintf("pid %d", pid))
	}
	return strings.Join(names, ", ")
}

// exitingState says what a state letter means for a process without a command
// line.
func exitingState(state byte) string {
	switch state {
	case 'Z':
		return "exited, not yet reaped"
	case 'X', 'x':
		return "dead"
	}
	return "exiting"
}

// StillRunning waits up to d for each pid to be gone by itself and
// returns those that are not: a process another program killed without
// waiting for it (kwokctl signals its components and returns) is still
// exiting for a moment, and is no leftover.
func StillRunning(ctx context.Context, pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	var out []int
	for _, pid := range pids {
		if !byPID(pid).waitGone(ctx, max(time.Until(deadline), 0)) {
			out = append(out, pid)
		}
	}
	return out
}

// byPID is a handle on a process the harness knows by its pid alone (not
// its child, no binary to check): waitGone looks at /proc for it.
func byPID(pid int) *Handle { return &Handle{Spec: Spec{Name: fmt.Sprintf("pid %d", pid)}, PID: pid} }

// KillAndWait sends SIGKILL to each pid and waits until they are gone.
func KillAndWait(ctx context.Context, pids []int) error {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		if !byPID(pid).waitGone(ctx, 10*time.Second) {
			return fmt.Errorf("pid %d survived SIGKILL", pid)
		}
	}
	return nil
}

// StartTime is when pid started, in clock ticks since boot (field 22 of
// /proc/<pid>/stat): with the pid it names a process uniquely, where a pid
// alone may have been reused.
func StartTime(pid int) (uint64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the start time of pid %d: %w", pid, err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, fmt.Errorf("failed to parse /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is the state (field 3); the start time is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("failed to parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("failed to parse the start time of pid %d: %w", pid, err)
	}
	return v, nil
}

// Same reports whether pid is still the live process that started at start
// (StartTime), not a zombie and not a later process given the same pid.
func Same(pid int, start uint64) bool {
	if !Runs(pid, "") {
		return false
	}
	got, err := StartTime(pid)
	return err == nil && got == start
}
