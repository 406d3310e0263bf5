package attribute

import (
	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// Input is everything the classifier reads about one run.
type Input struct {
	Scenario string
	// Baseline is what the scenario looks like without the fault (recorded,
	// or measured just before in the same session).
	Baseline *fingerprint.Baseline
	// Observed is the run's fingerprint, Observation its timeline.
	Observed    *fingerprint.Fingerprint
	Observation *observe.Observation
	// Diff is Observed against Baseline.
	Diff *diff.Diff
	// Facts were read from the cluster at the end of the run.
	Facts Facts
	// Inputs are what the run applied; BaselineInputs what the baseline
	// was recorded with (nil when unknown: a baseline of schema 1).
	Inputs, BaselineInputs *inputs.Inputs
}

// Facts are read from the cluster at the end of a run.
type Facts struct {
	// Health is the harness's own environment: empty when healthy,
	// otherwise what failed (Karpenter exited, the API server stopped
	// answering). A run in a broken environment is never attributed.
	Health string `json:"health,omitempty"`
	// NodePool is the run's NodePool as the API server has it (spec and status).
	NodePool *karpv1.NodePool `json:"-"`
	// NodeClassExists says whether the node class the NodePool names
	// exists; it means nothing when NodeClassUnreadable is set.
	NodeClassExists bool `json:"nodeClassExists"`
	// NodeClassUnreadable is why the node class could not be read (403, a
	// timeout): the class is then unknown, neither there nor missing.
	NodeClassUnreadable string `json:"nodeClassUnreadable,omitempty"`
	// Workloads are the pod templates as applied, by workload name.
	Workloads map[string]*corev1.PodTemplateSpec `json:"-"`
	// Replicas are the desired replicas now and as applied, by workload.
	Replicas map[string]Replicas `json:"replicas,omitempty"`
	// Unadmitted names, per workload, why no NodePool admits its pods (by
	// node selector and required affinity against the NodePools'
	// requirements and template labels). nil: not known.
	Unadmitted map[string]string `json:"unadmitted,omitempty"`
	// Fit says, per workload, how many catalog types hold one pod, with and
	// without the NodePool.
	Fit map[string]fit.Result `json:"fit,omitempty"`
	// Allocatable is each launched instance type's allocatable resources.
	Allocatable map[string]corev1.ResourceList `json:"-"`
	// PodUsage is each pod's usage from metrics.k8s.io; nil when metrics
	// were not available.
	PodUsage map[string]corev1.ResourceList `json:"-"`
	// KarpenterErrors counts Karpenter's failed API requests during the run
	// (from its client_go_request_total metric); nil when unknown.
	KarpenterErrors *float64 `json:"karpenterErrors,omitempty"`
	// KarpenterLatencyMs is the mean latency of Karpenter's API requests
	// during the run; nil when unknown.
	KarpenterLatencyMs *float64 `json:"karpenterLatencyMs,omitempty"`
	// SharedKarpenter names the other runs that held the cluster's
	// Karpenter at some time in this run's window (concurrent runs under
	// --parallel; pkg/run's Tenancy knows). Karpenter's counters then sum
	// their work with this run's, so every Karpenter-wide signal reads
	// unavailable. Empty: the run had Karpenter to itself.
	SharedKarpenter []string `json:"sharedKarpenter,omitempty"`
}

// Replicas of a workload.
type Replicas struct {
	Applied int32 `json:"applied"`
	Desired int32 `json:"desired"`
}
