package supervise

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/process"
)

// script is a Source whose components the test sets between probes.
type script struct {
	mu      sync.Mutex
	comps   map[string]cluster.ComponentStatus
	planned map[int]bool
	busy    map[string]bool
}

func newScript(comps ...cluster.ComponentStatus) *script {
	s := &script{comps: map[string]cluster.ComponentStatus{}, planned: map[int]bool{}, busy: map[string]bool{}}
	for _, c := range comps {
		s.comps[c.Name] = c
	}
	return s
}

func (s *script) set(c cluster.ComponentStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comps[c.Name] = c
}

func (s *script) Status(context.Context) (cluster.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := cluster.Status{Exists: true}
	for _, c := range s.comps {
		st.Components = append(st.Components, c)
	}
	return st, nil
}

func (s *script) Planned(name string, pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.planned[pid] || (pid == 0 && s.busy[name])
}

func healthy(name string, pid int) cluster.ComponentStatus {
	return cluster.ComponentStatus{Name: name, Healthy: true, PID: pid, Detail: "ok"}
}

// start returns a watcher whose interval never fires: the test probes.
func start(t *testing.T, src Source) *Watcher {
	t.Helper()
	w, err := Start(context.Background(), src, WithInterval(time.Hour), WithUnhealthyAfter(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// stepped makes each probe of w happen 4 s after the one before.
func stepped(w *Watcher, from time.Time) {
	at := from
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	w.now = func() time.Time { at = at.Add(4 * time.Second); return at }
}

func whats(in []Incident) string { return Incidents(in) }

func TestIncidents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []cluster.ComponentStatus
		// planned pids and components under planned maintenance
		plannedPID int
		busy       string
		want       []string
		down       []string
	}{
		{name: "a healthy cluster has none", steps: []cluster.ComponentStatus{healthy("karpenter", 10), healthy("karpenter", 10)}},
		{name: "an exit is one incident however long it lasts",
			steps: []cluster.ComponentStatus{{Name: "karpenter", PID: 0, Detail: "not running"}, {Name: "karpenter", PID: 0, Detail: "not running"}},
			want:  []string{"karpenter exited (pid 10)"}, down: []string{"karpenter"}},
		{name: "an exit seen through a pid file",
			steps: []cluster.ComponentStatus{{Name: "kube-apiserver", PID: 10, Exited: true, Detail: "process 10 exited", Log: "/l/kube-apiserver.log"}},
			want:  []string{"kube-apiserver exited (pid 10; its log: /l/kube-apiserver.log)"}, down: []string{"kube-apiserver"}},
		{name: "a restart between two probes",
			steps: []cluster.ComponentStatus{healthy("karpenter", 11)},
			want:  []string{"karpenter restarted (pid 10 → 11)"}},
		{name: "an exit, then a restart: both, and it is up again",
			steps: []cluster.ComponentStatus{{Name: "karpenter", Detail: "not running"}, healthy("karpenter", 11)},
			want:  []string{"karpenter exited (pid 10)", "karpenter restarted (pid 10 → 11)"}},
		{name: "a restart the provider made is none",
			steps:      []cluster.ComponentStatus{{Name: "karpenter", Detail: "not running"}, {Name: "karpenter", PID: 11, Detail: "starting"}, healthy("karpenter", 11)},
			plannedPID: 10, busy: "karpenter"},
		{name: "a pod's container restart",
			steps: []cluster.ComponentStatus{{Name: "pod", Healthy: true, Restarts: 1}, {Name: "pod", Healthy: true, Restarts: 3}},
			want:  []string{"pod restarted (its container restarted 2 more time(s))"}},
		{name: "a new pod counts from zero: none",
			steps: []cluster.ComponentStatus{{Name: "pod", Healthy: true, Restarts: 2}, {Name: "pod", Healthy: true}, {Name: "pod", Healthy: true}}},
		{name: "failing for less than the threshold is none",
			steps: []cluster.ComponentStatus{{Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, healthy("karpenter", 10)}},
		{name: "failing for the threshold is one incident",
			steps: []cluster.ComponentStatus{{Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}},
			want:  []string{"karpenter unhealthy for 12s: timeout"}, down: []string{"karpenter"}},
		{name: "failing while the provider restarts it is none",
			steps: []cluster.ComponentStatus{{Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}, {Name: "karpenter", PID: 10, Detail: "timeout"}},
			busy:  "karpenter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newScript(healthy("karpenter", 10), healthy("kube-apiserver", 10))
			if tc.plannedPID > 0 {
				src.planned[tc.plannedPID] = true
			}
			if tc.busy != "" {
				src.busy[tc.busy] = true
			}
			began := time.Now()
			w := start(t, src)
			stepped(w, began)
			for _, st := range tc.steps {
				src.set(st)
				w.Check(context.Background(), began)
			}
			var got []string
			for _, i := range w.Since(began) {
				got = append(got, i.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("incidents:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if d := strings.Join(w.Down(), ","); d != strings.Join(tc.down, ",") {
				t.Errorf("Down() = %q, want %q", d, strings.Join(tc.down, ","))
			}
		})
	}
}

func TestUnhealthyAtStartIsReported(t *testing.T) {
	src := newScript(cluster.ComponentStatus{Name: "kwok-controller", PID: 5, Detail: "connection refused"})
	began := time.Now()
	w := start(t, src)
	if got := whats(w.Since(began)); got != "kwok-controller unhealthy when supervision started: connection refused" {
		t.Errorf("incidents = %q", got)
	}
	if got := w.Down(); len(got) != 1 || got[0] != "kwok-controller" {
		t.Errorf("Down() = %v", got)
	}
}

// A death is seen through the pidfd, long before the next interval.
func TestExitWakesTheWatcherAtOnce(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	go func() { _ = cmd.Wait() }()
	src := &liveSource{pid: pid}
	w := start(t, src)
	changed := w.Changed()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no incident 10 s after the process was killed (the interval is an hour)")
	}
	if got := whats(w.Since(time.Time{})); !strings.HasPrefix(got, "sleeper exited (pid ") {
		t.Errorf("incidents = %q", got)
	}
}

// liveSource reports one real process.
type liveSource struct{ pid int }

func (l *liveSource) Status(context.Context) (cluster.Status, error) {
	alive := process.Runs(l.pid, "")
	return cluster.Status{Exists: true, Components: []cluster.ComponentStatus{
		{Name: "sleeper", PID: l.pid, Healthy: alive, Exited: !alive, Detail: "probe"},
	}}, nil
}

func TestStopEndsEveryGoroutine(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	w, err := Start(context.Background(), &liveSource{pid: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { w.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return: a pidfd waiter was left waiting")
	}
}

// flaky fails to read the status when told to.
type flaky struct {
	*script
	fail bool
}

func (f *flaky) Status(ctx context.Context) (cluster.Status, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return cluster.Status{}, errors.New("state.json: no such file")
	}
	return f.script.Status(ctx)
}

// A status that cannot be read for the threshold is an incident of the
// "cluster" component (its directory was removed under the run, say).
func TestUnreadableStatusIsAnIncident(t *testing.T) {
	src := &flaky{script: newScript(healthy("karpenter", 10))}
	began := time.Now()
	w := start(t, src)
	stepped(w, began)
	src.mu.Lock()
	src.fail = true
	src.mu.Unlock()
	for i := 0; i < 4; i++ {
		w.Check(context.Background(), began)
	}
	if got := whats(w.Since(began)); got != "cluster unhealthy for 12s: status unreadable: state.json: no such file" {
		t.Fatalf("incidents = %q", got)
	}
	if d := w.Down(); len(d) != 1 || d[0] != "cluster" {
		t.Fatalf("Down() = %v", d)
	}
}

// When the API server dies, etcd and metrics-server (asked through it)
// fail their probes too; the incident is the API server's alone. Once it
// answers again, a component that still fails is its own incident.
func TestFailuresThroughADownComponentAreNotIncidents(t *testing.T) {
	through := func(c cluster.ComponentStatus) cluster.ComponentStatus { c.Via = "kube-apiserver"; return c }
	refused := func(name string, pid int) cluster.ComponentStatus {
		return through(cluster.ComponentStatus{Name: name, PID: pid, Detail: "connection refused"})
	}
	src := newScript(healthy("kube-apiserver", 10), through(healthy("etcd", 20)), through(healthy("metrics-server", 30)))
	began := time.Now()
	w := start(t, src)
	stepped(w, began)
	probe := func(comps ...cluster.ComponentStatus) {
		for _, c := range comps {
			src.set(c)
		}
		w.Check(context.Background(), began)
	}
	probe(cluster.ComponentStatus{Name: "kube-apiserver", PID: 10, Exited: true, Detail: "process 10 exited"}, refused("etcd", 20), refused("metrics-server", 30))
	for range 5 { // 20 s, twice the threshold
		probe()
	}
	if got := whats(w.Since(began)); got != "kube-apiserver exited (pid 10)" {
		t.Fatalf("API server down: incidents %q, want only the API server's exit", got)
	}
	if got := strings.Join(w.Down(), ","); got != "kube-apiserver" {
		t.Fatalf("Down() = %q, want kube-apiserver", got)
	}
	// Back, but etcd now fails on its own.
	probe(healthy("kube-apiserver", 11), through(healthy("metrics-server", 30)))
	for range 3 {
		probe()
	}
	want := "kube-apiserver exited (pid 10); kube-apiserver restarted (pid 10 → 11); etcd unhealthy for 12s: connection refused"
	if got := whats(w.Since(began)); got != want {
		t.Fatalf("incidents %q, want %q", got, want)
	}
	if got := strings.Join(w.Down(), ","); got != "etcd" {
		t.Fatalf("Down() = %q, want etcd", got)
	}
}

// A component asked through one that is down at the start is not reported
// as down itself.
func TestBlockedAtStartIsNotReported(t *testing.T) {
	src := newScript(cluster.ComponentStatus{Name: "kube-apiserver", PID: 10, Detail: "connection refused"},
		cluster.ComponentStatus{Name: "etcd", PID: 20, Detail: "connection refused", Via: "kube-apiserver"})
	began := time.Now()
	w := start(t, src)
	if got := whats(w.Since(began)); got != "kube-apiserver unhealthy when supervision started: connection refused" {
		t.Errorf("incidents = %q", got)
	}
}

// The local and the kind provider keep their logs (a compile-time check):
// kind's are the out-of-cluster processes' (KWOK's controller, Karpenter
// unless it runs from its chart), in the same directory as the local
// provider's; the control plane's stay in the node's container.
var (
	_ LogKeeper = (*cluster.Local)(nil)
	_ LogKeeper = (*cluster.KindCluster)(nil)
)

// keeping is a script whose provider keeps logs under kept/.
type keeping struct {
	*script
	kept []string
}

func (k *keeping) KeepLog(log string) string {
	k.kept = append(k.kept, log)
	return "kept/" + log
}

// An exit, however it shows (the process seen gone, or no pid at all as a
// stopped Karpenter's status reads), names the log its provider kept, and
// the log is kept once per exit, not at every probe.
func TestAnExitNamesTheKeptLog(t *testing.T) {
	for _, gone := range []cluster.ComponentStatus{
		{Name: "karpenter", PID: 10, Exited: true, Log: "karpenter.log", Detail: "process 10 exited"},
		{Name: "karpenter", PID: 0, Log: "karpenter.log", Detail: "not running"},
	} {
		src := &keeping{script: newScript(healthy("karpenter", 10))}
		began := time.Now()
		w := start(t, src)
		src.set(gone)
		w.Check(context.Background(), began)
		w.Check(context.Background(), began)
		if got := whats(w.Since(began)); got != "karpenter exited (pid 10; its log: kept/karpenter.log)" {
			t.Errorf("pid %d: incidents = %q", gone.PID, got)
		}
		if len(src.kept) != 1 {
			t.Errorf("pid %d: logs kept %d times, want once", gone.PID, len(src.kept))
		}
	}
}
