package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
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
