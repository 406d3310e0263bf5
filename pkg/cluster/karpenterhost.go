package cluster

import (
	"context"
	"fmt"
)

// karpenterHost is where a provider's Karpenter runs: a process of this
// machine (processHost: the local provider, and kind by default) or a
// Deployment in the cluster installed from the release's chart (chartHost:
// kind with WithKarpenterInCluster). Local asks it for every start,
// restart, stop and probe of Karpenter; what Karpenter runs with (binary,
// catalog, settings, API route) is the cluster's state either way.
type karpenterHost interface {
	// start starts Karpenter as st says and waits until it is ready; it
	// returns st with what it chose (ports).
	start(ctx context.Context, st state) (state, error)
	// restart replaces the Karpenter that runs as was says by one that
	// runs as st says (recording st), saying msg as its progress.
	restart(ctx context.Context, was, st state, msg string) error
	// stop stops Karpenter for Down.
	stop(ctx context.Context, st state) error
	// status probes Karpenter; cl are the status clients (nil with cerr,
	// the reason, when there are none).
	status(ctx context.Context, st state, cl *statusClients, cerr error) ComponentStatus
	// metricsURL is where Karpenter's Prometheus metrics are served.
	metricsURL(st state) string
	// binary is the Karpenter binary it runs (in the image, for a pod).
	binary() string
	// checkBinary refuses a binary it must not run, before anything starts.
	checkBinary() error
}

// processHost runs Karpenter as a process of this machine, on loopback
// ports chosen at start (local_ops.go holds its start, restart, stop and
// status).
type processHost struct{ l *Local }

func (p processHost) metricsURL(st state) string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", st.KarpenterMetricsPort)
}

func (p processHost) binary() string { return p.l.tc.Paths().Karpenter }

func (p processHost) checkBinary() error { return CheckKarpenterBinary(p.binary()) }

// karpenter is where l runs Karpenter: its host, a process when none was
// set (a Local built in a test).
func (l *Local) karpenter() karpenterHost {
	if l.host == nil {
		return processHost{l: l}
	}
	return l.host
}
