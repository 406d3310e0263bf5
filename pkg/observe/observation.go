// Package observe records what happens during one run: the first time of
// each transition of the run's Pods, NodeClaims and Nodes and every event
// about them, from informers (no polling of the API server). Each
// transition carries two times: the API server's timestamp (one-second
// resolution) and the local time the observer received it (the monotonic
// clock while the run lasts).
package observe

import (
	"math"
	"time"
)

// Observation is the raw timeline of a run.
type Observation struct {
	Run string `json:"run"`
	// Clock is the clock a fingerprint's latencies are read from.
	Clock Clock `json:"clock,omitempty"`
	// Start is when the workloads were applied (server time of the first
	// Deployment's creation).
	Start      time.Time                   `json:"start"`
	End        time.Time                   `json:"end"`
	Outcome    Outcome                     `json:"outcome"`
	Pods       map[string]*PodRecord       `json:"pods"`
	NodeClaims map[string]*NodeClaimRecord `json:"nodeClaims"`
	Nodes      map[string]*NodeRecord      `json:"nodes"`
	Events     []EventRecord               `json:"events"`
}

// Outcome is how a run ended.
type Outcome string

// The outcomes.
const (
	// Settled: every expected pod ran and nothing changed for the quiet period.
	Settled Outcome = "settled"
	// Stalled: pods stayed pending with no provisioning progress for the stall period.
	Stalled Outcome = "stalled"
	// TimedOut: neither happened before the deadline.
	TimedOut Outcome = "timed-out"
)

// Clock says which of a transition's two times latencies are read from.
type Clock string

// The clocks.
const (
	// ServerClock reads the API server's timestamps: one-second
	// resolution, and the only clock that means the same on a cluster
	// far from the harness (the existing provider).
	ServerClock Clock = "server"
	// ReceivedClock reads the local times the observer received each
	// transition, at the local clock's resolution (milliseconds and
	// better). A latency then also holds the watch's delivery delay at
	// both ends, which cancels out where the API server runs beside the
	// harness (the local and kind providers).
	ReceivedClock Clock = "received"
)

// Received are the local times the observer first received a record's
// transitions; zero for one it has not seen happen (it had happened
// before the observer started).
type Received struct {
	Created     time.Time `json:"created,omitzero"`
	Scheduled   time.Time `json:"scheduled,omitzero"`
	Launched    time.Time `json:"launched,omitzero"`
	Registered  time.Time `json:"registered,omitzero"`
	Initialized time.Time `json:"initialized,omitzero"`
	Ready       time.Time `json:"ready,omitzero"`
}

// Latency is the time from one transition to another on clock: the
// received times when both were received, else the server's. ok is
// false when either transition has no time.
func Latency(clock Clock, from, to time.Time, rFrom, rTo time.Time) (seconds float64, ok bool) {
	if from.IsZero() || to.IsZero() {
		return 0, false
	}
	if clock == ReceivedClock && !rFrom.IsZero() && !rTo.IsZero() {
		// Milliseconds: finer would be the scheduler's noise, not the run's.
		return math.Round(rTo.Sub(rFrom).Seconds()*1000) / 1000, true
	}
	return to.Sub(from).Seconds(), true
}

// PodRecord is one pod's life.
type PodRecord struct {
	Name      string    `json:"name"`
	Workload  string    `json:"workload"`
	Created   time.Time `json:"created"`
	Scheduled time.Time `json:"scheduled,omitzero"`
	Ready     time.Time `json:"ready,omitzero"`
	Deleted   time.Time `json:"deleted,omitzero"`
	Node      string    `json:"node,omitempty"`
	Phase     string    `json:"phase"`
	Restarts  int       `json:"restarts"`
	// LastTermination is the reason of the last container termination (OOMKilled, Error, …).
	LastTermination string `json:"lastTermination,omitempty"`
	// Waiting is the reason a container is waiting (CrashLoopBackOff, ImagePullBackOff, …).
	Waiting string `json:"waiting,omitempty"`
	// Received are the local times of Created, Scheduled and Ready.
	Received Received `json:"received,omitzero"`
}

// NodeClaimRecord is one NodeClaim's life.
type NodeClaimRecord struct {
	Name        string    `json:"name"`
	Created     time.Time `json:"created"`
	Launched    time.Time `json:"launched,omitzero"`
	Registered  time.Time `json:"registered,omitzero"`
	Initialized time.Time `json:"initialized,omitzero"`
	Ready       time.Time `json:"ready,omitzero"`
	Deleted     time.Time `json:"deleted,omitzero"`
	// Gone is the local time the NodeClaim was seen to disappear (its
	// finalizer done: the instance terminated), zero while it exists.
	Gone         time.Time `json:"gone,omitzero"`
	InstanceType string    `json:"instanceType,omitempty"`
	CapacityType string    `json:"capacityType,omitempty"`
	Zone         string    `json:"zone,omitempty"`
	Node         string    `json:"node,omitempty"`
	// Received are the local times of Created, Launched, Registered,
	// Initialized and Ready.
	Received Received `json:"received,omitzero"`
}

// NodeRecord is one Node's life.
type NodeRecord struct {
	Name         string    `json:"name"`
	Created      time.Time `json:"created"`
	Ready        time.Time `json:"ready,omitzero"`
	Deleted      time.Time `json:"deleted,omitzero"`
	NotReady     bool      `json:"notReady,omitempty"`
	InstanceType string    `json:"instanceType"`
	CapacityType string    `json:"capacityType"`
	Zone         string    `json:"zone"`
	// Labels are the node's labels, for checking them against the NodePool.
	Labels map[string]string `json:"labels,omitempty"`
	// Finalizers are the node's finalizers as last seen, nil once the Node
	// is gone: what holds a deleted Node back.
	Finalizers []string `json:"finalizers,omitempty"`
	// Received are the local times of Created and Ready.
	Received Received `json:"received,omitzero"`
}

// EventRecord is one Kubernetes event about the run's objects.
type EventRecord struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Kind    string    `json:"kind"`
	Object  string    `json:"object"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
}
