package run

import (
	"context"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/process"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// meter measures Karpenter's usage over one run.
type meter struct {
	url    string
	pid    int
	before usage.Sample
}

// karpenterMetrics is the URL of Karpenter's metrics on the runner's
// cluster, "" where the provider does not expose it.
func (r *Runner) karpenterMetrics() string {
	if c, ok := r.cluster.(cluster.KarpenterMetrics); ok {
		return c.KarpenterMetrics()
	}
	return ""
}

// startMeter samples Karpenter's counters at the start of a run and
// resets its peak resident set; nil where Karpenter's metrics cannot be
// read (a cluster nodeprint does not own).
func (r *Runner) startMeter(ctx context.Context) *meter {
	url := r.karpenterMetrics()
	if url == "" {
		return nil
	}
	m := &meter{url: url}
	if kp, ok := r.cluster.(cluster.KarpenterProcess); ok {
		if pid, err := kp.KarpenterPID(); err == nil && process.ResetPeakRSS(pid) == nil {
			m.pid = pid
		}
	}
	s, err := usage.Read(ctx, m.url)
	if err != nil {
		return nil
	}
	m.before = s
	return m
}

// stop is Karpenter's usage since start; nil where it cannot be read.
func (m *meter) stop(ctx context.Context) *usage.Usage {
	if m == nil {
		return nil
	}
	after, err := usage.Read(ctx, m.url)
	if err != nil {
		return nil
	}
	u := after.Since(m.before)
	if m.pid > 0 && !u.Restarted {
		if peak, err := process.PeakRSSBytes(m.pid); err == nil {
			u.PeakRSSBytes = float64(peak)
		}
	}
	return &u
}
