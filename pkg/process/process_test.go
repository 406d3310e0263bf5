package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

func selfPID() int { return os.Getpid() }

func TestFindReferencingMatchesWholeDirectories(t *testing.T) {
	base := t.TempDir()
	mine, other := filepath.Join(base, "a"), filepath.Join(base, "ab")
	for _, d := range []string{mine, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func(dir string, args ...string) *exec.Cmd {
		// "; :" keeps the shell alive (no exec of sleep), so its own command
		// line, with args, is what /proc shows.
		cmd := exec.Command("sh", append([]string{"-c", "sleep 30; :", "sh"}, args...)...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return cmd
	}
	inDir := start(mine)                        // runs in a/
	namesIt := start(base, mine+"/config.yaml") // names a/ on its command line
	notA1 := start(other)                       // runs in ab/: not a's
	notA2 := start(base, other+"/config.yaml")  // names ab/: not a's
	got, err := FindReferencing(mine)
	if err != nil {
		t.Fatal(err)
	}
	has := map[int]bool{}
	for _, p := range got {
		has[p] = true
	}
	// The shell in a/ has a sleep child there too: it is a's as well.
	if !has[inDir.Process.Pid] || !has[namesIt.Process.Pid] {
		t.Fatalf("want pids %d and %d among %v", inDir.Process.Pid, namesIt.Process.Pid, got)
	}
	if has[notA1.Process.Pid] || has[notA2.Process.Pid] {
		t.Fatalf("processes of ab (%d, %d) reported as a's: %v", notA1.Process.Pid, notA2.Process.Pid, got)
	}
}

// A binary named through a symbolic link (a checkout whose bin/ links to
// another's) is the process's executable all the same.
func TestRunsThroughASymlink(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, err = filepath.EvalSymlinks(self)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "linked-bin")
	if err := os.Symlink(filepath.Dir(self), link); err != nil {
		t.Fatal(err)
	}
	if !Runs(os.Getpid(), self) {
		t.Fatal("this process runs its own executable")
	}
	if !Runs(os.Getpid(), filepath.Join(link, filepath.Base(self))) {
		t.Fatal("the same executable through a symlinked directory must match")
	}
	if Runs(os.Getpid(), filepath.Join(link, "other")) {
		t.Fatal("another path must not match")
	}
}

func TestStartTimeNamesThisProcess(t *testing.T) {
	start, err := StartTime(os.Getpid())
	if err != nil || start == 0 {
		t.Fatalf("start time of this process: %d, %v", start, err)
	}
	if !Same(os.Getpid(), start) {
		t.Fatal("this process is the one that started at its start time")
	}
	if Same(os.Getpid(), start+1) {
		t.Fatal("another start time is another process, even with the same pid")
	}
	if _, err := StartTime(1 << 30); err == nil {
		t.Fatal("a pid that does not exist has no start time")
	}
}

// A process being reaped shows X for a moment after its zombie state; a
// probe that read it as alive missed the exit until its next interval.
func TestAliveReadsTheStateAfterTheCommandName(t *testing.T) {
	for stat, want := range map[string]bool{
		"42 (sleep) R 1 42 42 0":      true,
		"42 (sleep) S 1 42 42 0":      true,
		"42 (sleep) Z 1 42 42 0":      false,
		"42 (sleep) X 1 42 42 0":      false,
		"42 (sleep) x 1 42 42 0":      false,
		"42 (a) Z (b) S 1 42 42 0":    true,
		"42 (odd ) name) X 1 42 42 0": false,
		"42 (truncated":               true,
	} {
		if got := alive([]byte(stat)); got != want {
			t.Errorf("alive(%q) = %v, want %v", stat, got, want)
		}
	}
}

func TestDescribeNamesEachProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	got := Describe([]int{cmd.Process.Pid, gone.Process.Pid})
	want := fmt.Sprintf("sleep (pid %d), pid %d", cmd.Process.Pid, gone.Process.Pid)
	if got != want {
		t.Fatalf("Describe = %q, want %q", got, want)
	}
}

// A process on its way out has released its memory and with it its
// command line; Describe must still say which one it was, from its stat.
func TestParseStatReadsTheKernelsName(t *testing.T) {
	for _, c := range []struct {
		stat, want string
		ok         bool
	}{
		{"8092 (kube-apiserver) R 1 8092 8092 0 -1", "kube-apiserver exiting", true},
		{"42 (a (b) c) Z 1 42", "a (b) c exited, not yet reaped", true},
		{"7 (etcd) X 1", "etcd dead", true},
		{"", "", false},
		{"7 (etcd)", "", false},
	} {
		comm, state, ok := parseStat([]byte(c.stat))
		got := ""
		if ok {
			got = comm + " " + exitingState(state)
		}
		if got != c.want || ok != c.ok {
			t.Errorf("parseStat(%q) reads %q (ok %v); want %q (ok %v)", c.stat, got, ok, c.want, c.ok)
		}
	}
}

// A process that exits within the grace is not reported; one that does
// not is, and the wait ends at the grace, not at its exit.
func TestStillRunningWaitsForAnExitInProgress(t *testing.T) {
	quick, slow := exec.Command("sleep", "0.3"), exec.Command("sleep", "30")
	for _, c := range []*exec.Cmd{quick, slow} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = slow.Process.Kill(); _ = slow.Wait() })
	// quick is reaped as its parent would, by the one Wait it gets.
	reaped := make(chan struct{})
	go func() { _ = quick.Wait(); close(reaped) }()
	t.Cleanup(func() { _ = quick.Process.Kill(); <-reaped })
	start := time.Now()
	got := StillRunning(context.Background(), []int{quick.Process.Pid, slow.Process.Pid}, 3*time.Second)
	if want := []int{slow.Process.Pid}; !slices.Equal(got, want) {
		t.Fatalf("StillRunning = %v, want %v (quick %d)", got, want, quick.Process.Pid)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("StillRunning took %v, past its grace of 3s", took)
	}
}
