// Package bench measures nodeprint and the cluster under it: per-process
// memory and CPU sampled from /proc while a run goes on, and the results
// table `make bench` prints and writes as JSON.
package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat;
// 100 on every Linux this runs on.
const clockTicks = 100

// Usage is one process's (or a group's) use during a sampling window.
type Usage struct {
	// PeakRSSBytes is the largest resident set seen in a sample.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// CPUSeconds is user plus system CPU time spent in the window.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Sampler samples the resident memory of named processes at an interval
// and their CPU time at the start and the end of the window.
type Sampler struct {
	pids     map[string]int
	interval time.Duration

	mu       sync.Mutex
	peak     map[string]int64
	startCPU map[string]float64
	stop     chan struct{}
	done     chan struct{}
}

// NewSampler samples the processes named in pids (name → pid) every
// interval (default 250 ms when zero).
func NewSampler(pids map[string]int, interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	return &Sampler{pids: pids, interval: interval, peak: map[string]int64{}, startCPU: map[string]float64{}}
}

// Start begins the window; Stop ends it. A process that has exited keeps
// what was sampled before.
func (s *Sampler) Start(ctx context.Context) {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	for name, pid := range s.pids {
		if cpu, err := CPUSeconds(pid); err == nil {
			s.startCPU[name] = cpu
		}
	}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
}

func (s *Sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, pid := range s.pids {
		if rss, err := RSSBytes(pid); err == nil && rss > s.peak[name] {
			s.peak[name] = rss
		}
	}
}

// Stop ends the window and returns each process's usage in it.
func (s *Sampler) Stop() map[string]Usage {
	close(s.stop)
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]Usage{}
	for name, pid := range s.pids {
		u := Usage{PeakRSSBytes: s.peak[name]}
		if cpu, err := CPUSeconds(pid); err == nil {
			u.CPUSeconds = cpu - s.startCPU[name]
		}
		out[name] = u
	}
	return out
}

// RSSBytes is a process's resident set size now (VmRSS).
func RSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the status of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("process %d: VmRSS %q: %w", pid, rest, err)
				}
				return kb * 1024, nil
			}
		}
	}
	return 0, fmt.Errorf("process %d has no VmRSS (a kernel thread or a zombie)", pid)
}

// CPUSeconds is the user plus system CPU time a process has used.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("failed to read the stat of process %d: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces: fields
	// count from after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d: malformed stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("process %d: stat has %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("process %d: utime %q stime %q", pid, f[11], f[12])
	}
	return (ut + st) / clockTicks, nil
}
