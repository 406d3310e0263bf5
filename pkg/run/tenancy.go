package run

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Tenancy records when each run holds the cluster's Karpenter, from the
// run's start to the end of its cleanup: the one place that knows whether
// a run had Karpenter to itself over a window.
//
// Karpenter is one process per cluster, and its counters (API requests,
// errors and latency today; CPU, memory and reconciles as they are added)
// sum the work of every run. Under --parallel, a burst of errors that
// another run's fault or cleanup caused would read as this run's, and the
// L1 rules, which decide first, would name the infrastructure for every
// run of the phase. So a run whose window another run overlapped reads
// its Karpenter-wide signals as unavailable (attribute.Facts.SharedKarpenter,
// set from Sharers), and a run whose expected rule needs them runs alone
// (RunsAlone).
//
// The runs of one Runner are known in memory. With a directory
// (WithTenancyDir: the harness gives one per cluster under the toolchain's
// work directory), each run is also a file there, so the runs of other
// processes on the same machine and cluster (ginkgo -p, a second CLI) are
// known too. The zero value is ready to use, in memory only.
type Tenancy struct {
	mu    sync.Mutex
	spans map[string]*span
	// dir, when set, holds one file per run of any process.
	dir string
}

// span is when one run held Karpenter; end is zero while it does.
type span struct{ start, end time.Time }

// tenancyKeep is how long the file of a finished run is kept: longer than
// any run, so a window that began before it ended still sees it.
const tenancyKeep = time.Hour

// WithTenancyDir makes the runner record its runs' holds on Karpenter as
// files in a directory of dir named after the cluster (its API server's
// address), and read the other processes' there (default: in memory, this
// runner's runs only).
func WithTenancyDir(dir string) Option { return func(r *Runner) { r.tenancyDir = dir } }

// clusterDir is the directory of the cluster whose API server is host.
func clusterDir(dir, host string) string {
	sum := sha256.Sum256([]byte(host))
	return filepath.Join(dir, hex.EncodeToString(sum[:8]))
}

// Hold records that run id holds Karpenter from now until release is
// called. Call release once the run's cleanup is done: deleting a run's
// nodes is Karpenter's work too. A file that cannot be written leaves the
// run known in memory only (and says so through the returned error).
func (t *Tenancy) Hold(id string) (release func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spans == nil {
		t.spans = map[string]*span{}
	}
	s := &span{start: time.Now()}
	t.spans[id] = s
	err = t.write(id, s)
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			s.end = time.Now()
			_ = t.write(id, s)
			t.prune()
		})
	}, err
}

// Sharers names, sorted, the runs other than id that held Karpenter at
// some moment of [from, to]; none when id had it to itself.
func (t *Tenancy) Sharers(id string, from, to time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := t.readDir()
	for other, s := range t.spans {
		all[other] = s
	}
	var out []string
	for other, s := range all {
		if other == id || s.start.After(to) || (!s.end.IsZero() && s.end.Before(from)) {
			continue
		}
		out = append(out, other)
	}
	sort.Strings(out)
	return out
}

// prune forgets the finished spans no run of this process can still
// overlap: those that ended before the earliest run still holding
// Karpenter started (a window asked about lies within its run's span, and
// later runs start later); and removes run files older than tenancyKeep.
func (t *Tenancy) prune() {
	var earliest time.Time
	for _, s := range t.spans {
		if s.end.IsZero() && (earliest.IsZero() || s.start.Before(earliest)) {
			earliest = s.start
		}
	}
	for id, s := range t.spans {
		if !s.end.IsZero() && (earliest.IsZero() || s.end.Before(earliest)) {
			delete(t.spans, id)
		}
	}
	for id, s := range t.readDir() {
		if !s.end.IsZero() && time.Since(s.end) > tenancyKeep {
			_ = os.Remove(filepath.Join(t.dir, id))
		}
	}
}

// write records a run's span as the file dir/<id>: its start, its end
// once there is one, and the process that holds it.
func (t *Tenancy) write(id string, s *span) error {
	if t.dir == "" {
		return nil
	}
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return fmt.Errorf("failed to record run %s's hold on Karpenter: %w", id, err)
	}
	text := fmt.Sprintf("start %d\npid %d\n", s.start.UnixNano(), os.Getpid())
	if !s.end.IsZero() {
		text += fmt.Sprintf("end %d\n", s.end.UnixNano())
	}
	tmp := filepath.Join(t.dir, "."+id+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return fmt.Errorf("failed to record run %s's hold on Karpenter: %w", id, err)
	}
	if err := os.Rename(tmp, filepath.Join(t.dir, id)); err != nil {
		return fmt.Errorf("failed to record run %s's hold on Karpenter: %w", id, err)
	}
	return nil
}

// readDir reads every run file. A run whose process is gone without an
// end (killed) ended when its file was last written.
func (t *Tenancy) readDir() map[string]*span {
	out := map[string]*span{}
	if t.dir == "" {
		return out
	}
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s, pid, err := readSpan(filepath.Join(t.dir, e.Name()))
		if err != nil {
			continue
		}
		if s.end.IsZero() && !alive(pid) {
			if info, err := e.Info(); err == nil {
				s.end = info.ModTime()
			}
		}
		out[e.Name()] = s
	}
	return out
}

func readSpan(path string) (*span, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	s, pid := &span{}, 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		switch k {
		case "start":
			s.start = time.Unix(0, n)
		case "end":
			s.end = time.Unix(0, n)
		case "pid":
			pid = int(n)
		}
	}
	if s.start.IsZero() {
		return nil, 0, errors.New(path + ": no start")
	}
	return s, pid, nil
}

// alive reports whether a process of that pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
