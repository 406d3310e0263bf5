package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tenancy names the runs that held Karpenter at some moment of a window,
// and forgets runs no window can still overlap.
func TestTenancyNamesOverlappingRuns(t *testing.T) {
	var ten Tenancy
	hold := func(id string) func() {
		t.Helper()
		release, err := ten.Hold(id)
		if err != nil {
			t.Fatal(err)
		}
		return release
	}
	releaseA := hold("a")
	time.Sleep(2 * time.Millisecond)
	from := time.Now()
	if got := ten.Sharers("a", from, time.Now()); len(got) != 0 {
		t.Fatalf("alone: %v", got)
	}
	releaseB := hold("b")
	releaseB()
	releaseC := hold("c")
	if got := strings.Join(ten.Sharers("a", from, time.Now()), ","); got != "b,c" {
		t.Errorf("b came and went, c holds: %q, want b,c", got)
	}
	// A window that ended before b and c started was a's alone.
	if got := ten.Sharers("a", from.Add(-time.Hour), from.Add(-time.Minute)); len(got) != 0 {
		t.Errorf("an earlier window: %v", got)
	}
	releaseA()
	releaseC()
	releaseC() // twice is once
	if n := len(ten.spans); n != 0 {
		t.Errorf("with no run holding Karpenter, %d span(s) are kept", n)
	}
}

// With a directory, the runs of other processes on the same cluster are
// known (ginkgo -p, a second CLI): here a second Tenancy stands for the
// other process, and a file whose process is gone without an end (killed)
// ended when it was last written. Another cluster's directory is apart.
func TestTenancySeesOtherProcesses(t *testing.T) {
	dir := t.TempDir()
	mine := &Tenancy{dir: clusterDir(dir, "https://127.0.0.1:6443")}
	theirs := &Tenancy{dir: clusterDir(dir, "https://127.0.0.1:6443")}
	elsewhere := &Tenancy{dir: clusterDir(dir, "https://127.0.0.1:7443")}
	from := time.Now()
	releaseMine, err := mine.Hold("mine")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseMine()
	releaseTheirs, err := theirs.Hold("theirs")
	if err != nil {
		t.Fatal(err)
	}
	releaseElsewhere, err := elsewhere.Hold("elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	defer releaseElsewhere()
	releaseTheirs()
	// A killed process's run: no end, a pid that does not exist.
	killed := filepath.Join(mine.dir, "killed")
	if err := os.WriteFile(killed, []byte(fmt.Sprintf("start %d\npid %d\n", from.Add(-2*time.Hour).UnixNano(), 1<<30)), 0o600); err != nil {
		t.Fatal(err)
	}
	old := from.Add(-time.Hour - time.Minute)
	if err := os.Chtimes(killed, old, old); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(mine.Sharers("mine", from, time.Now()), ","); got != "theirs" {
		t.Errorf("sharers %q, want theirs (the killed run ended an hour ago; elsewhere is another cluster)", got)
	}
}
