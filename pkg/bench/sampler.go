// Package bench measures nodeprint and the cluster under it: per-process
// memory and CPU sampled from /proc while a run goes on, and the results
// table `make bench` prints and writes as JSON.
package bench

import (
	"context"
	"sync"
	"time"

	"github.com/nodeprint/nodeprint/pkg/process"
)

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
		if cpu, err := process.CPUSeconds(pid); err == nil {
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
		if rss, err := process.RSSBytes(pid); err == nil && rss > s.peak[name] {
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
		if cpu, err := process.CPUSeconds(pid); err == nil {
			u.CPUSeconds = cpu - s.startCPU[name]
		}
		out[name] = u
	}
	return out
}
