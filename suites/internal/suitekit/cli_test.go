package suitekit

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onsi/gomega"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// actAt returns what the command wrote to stderr, every line of it, and
// knows whether the marker appeared, also when it is on the last line:
// its scanner finishes before it returns (it used to return as soon as
// the command exited, dropping the lines still being scanned and failing
// when the marker was among them).
func TestActAtSeesEveryLine(t *testing.T) {
	gomega.RegisterTestingT(t)
	c := &CLI{Path: "/bin/sh", Toolchain: &toolchain.Toolchain{Root: t.TempDir()}}
	for i := range 20 {
		var acted atomic.Int32
		script := `i=0; while [ $i -lt 3000 ]; do echo "line $i" >&2; i=$((i+1)); done; echo MARK >&2`
		r := c.actAt(context.Background(), "MARK", func(*os.Process) { acted.Add(1) }, "-c", script)
		lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
		if len(lines) != 3001 || lines[3000] != "MARK" || acted.Load() != 1 {
			t.Fatalf("run %d: %d line(s), last %q, acted %d times; want 3001 ending in MARK, acted once", i, len(lines), lines[len(lines)-1], acted.Load())
		}
	}
}
