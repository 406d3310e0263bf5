// Package observe records what happens during one run: every transition of
// the run's Pods, NodeClaims and Nodes and every event about them, with the
// API server's timestamps, from informers (no polling of the API server).
package observe

import (
	"time"
)

// Observation is the raw timeline of a run.
type Observation struct {
	Run string `json:"run"`
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
}

// NodeClaimRecord is one NodeClaim's life.
type NodeClaimRecord struct {
	Name         string    `json:"name"`
	Created      time.Time `json:"created"`
	Launched     time.Time `json:"launched,omitzero"`
	Registered   time.Time `json:"registered,omitzero"`
	Initialized  time.Time `json:"initialized,omitzero"`
	Ready        time.Time `json:"ready,omitzero"`
	Deleted      time.Time `json:"deleted,omitzero"`
	InstanceType string    `json:"instanceType,omitempty"`
	CapacityType string    `json:"capacityType,omitempty"`
	Zone         string    `json:"zone,omitempty"`
	Node         string    `json:"node,omitempty"`
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
