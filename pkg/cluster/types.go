package cluster

import "context"

// What a cluster can do, in one place: every provider is a Provider, and
// the optional capabilities below are asked for by interface (a type
// assertion on the capability), never by a provider's name or concrete
// type. Which provider has which:
//
//	capability              local  kind  kind, Karpenter in-cluster  existing
//	KarpenterOwner          yes    yes   yes (the image's binary)     no
//	KarpenterSwitcher       yes    yes   yes (upgrades the chart)     yes (accepts only its own catalog, default settings)
//	KarpenterBuildSwitcher  yes    yes   no                           no
//	KarpenterMetrics        yes    yes   yes                          no
//	KarpenterProcess        yes    yes   no                           no
//	KarpenterRerouter       yes    yes   no                           no
//	ComponentRestarter      yes    yes   yes (rolls the pod)          no
//	CatalogSource           yes    yes   yes                          yes (the --catalog it was given)
//	NodeContainers          no     yes   yes                          no
//	NodeRoute               no     yes   yes                          no

// Provider is a cluster nodeprint can run scenarios on.
type Provider interface {
	// Up starts the cluster and returns when every component is healthy. A
	// failed or cancelled Up rolls back what it started.
	Up(ctx context.Context) error
	// Down stops everything Up started and removes its files. Errors are
	// aggregated: Down goes on after a step fails.
	Down(ctx context.Context) error
	// Kubeconfig is the path of an admin kubeconfig for the cluster.
	Kubeconfig() string
	// Status probes every component.
	Status(ctx context.Context) (Status, error)
}

// KarpenterOwner is a provider that runs Karpenter from nodeprint's
// toolchain: the binary is nodeprint's to digest, and the API server is
// beside the harness (its receive times measure latencies).
type KarpenterOwner interface {
	// KarpenterBinary is the binary Karpenter runs from.
	KarpenterBinary() string
}

// KarpenterSwitcher makes Karpenter run with a scenario's catalog and
// settings (environment variables; none: its defaults). The local and kind
// providers restart it when it runs with others; an existing cluster
// accepts only what its Karpenter already runs with.
type KarpenterSwitcher interface {
	UseKarpenter(ctx context.Context, catalog string, settings map[string]string) error
}

// KarpenterBuildSwitcher is a provider that can run Karpenter from
// another binary between runs, keeping its catalog and settings: paired
// verification alternates the reference build and the candidate on one
// cluster. Only a provider that runs Karpenter from nodeprint's toolchain
// can.
type KarpenterBuildSwitcher interface {
	// StartKarpenterBuild stops Karpenter and starts it afresh from
	// build's binary, also when that binary already runs: every run of a
	// paired verification starts from a Karpenter just started, so that
	// both arms carry the same start-up into their runs. (A Karpenter
	// kept from the run before used about 1.4× less CPU in its run than
	// one just started, measured 2026-12-06; with A B / B A blocks only
	// the second run of each block was a fresh one.)
	StartKarpenterBuild(ctx context.Context, build Build) error
}

// Build is a Karpenter binary and the release it is a build of.
type Build struct {
	// Binary is the executable's path.
	Binary string
	// Version is the release it builds (for status and progress; empty:
	// unchanged).
	Version string
}

// KarpenterMetrics is a provider that knows where Karpenter's Prometheus
// metrics are: the URL, "" while Karpenter is not running.
type KarpenterMetrics interface {
	KarpenterMetrics() string
}

// KarpenterProcess is a provider that runs Karpenter as a process of this
// machine: its /proc gives the peak resident set of a run, which
// Karpenter's metrics cannot. An error means it is not one now (Karpenter
// is down).
type KarpenterProcess interface {
	KarpenterPID() (int, error)
}

// KarpenterRerouter is a provider that can restart Karpenter with its
// API-server traffic sent through another address (the API-latency
// fault's proxy).
type KarpenterRerouter interface {
	// RestartKarpenterVia restarts Karpenter with its API-server traffic
	// sent to server (a URL); an empty server restores the direct
	// connection.
	RestartKarpenterVia(ctx context.Context, server string) error
	// APIServer is the API server's URL as components reach it.
	APIServer() string
}

// ComponentRestarter is a provider that can restart one of the components
// it runs (Components), waiting until every one is healthy again: the
// local and kind providers; a cluster nodeprint does not own cannot.
type ComponentRestarter interface {
	RestartComponent(ctx context.Context, component string) error
}

// LogExporter is a provider that keeps its components' logs as files and
// can copy them (the local provider: Karpenter, the control plane,
// kwok-controller and metrics-server), for a failure's diagnosis.
type LogExporter interface {
	// ExportLogs copies the logs into dest and returns how many files it
	// copied.
	ExportLogs(dest string) (int, error)
}

// CatalogSource is a provider that knows the instance-type catalog its
// Karpenter runs with (a file), which explain's fit rules need.
type CatalogSource interface {
	Catalog() string
}

var (
	_ Provider               = (*Local)(nil)
	_ KarpenterOwner         = (*Local)(nil)
	_ KarpenterSwitcher      = (*Local)(nil)
	_ KarpenterMetrics       = (*Local)(nil)
	_ KarpenterBuildSwitcher = (*Local)(nil)
	_ KarpenterProcess       = (*Local)(nil)
	_ KarpenterRerouter      = (*Local)(nil)
	_ ComponentRestarter     = (*Local)(nil)
	_ CatalogSource          = (*Local)(nil)
	_ LogExporter            = (*Local)(nil)
	_ Provider               = (*KindCluster)(nil)
	_ KarpenterOwner         = (*KindCluster)(nil)
	_ KarpenterSwitcher      = (*KindCluster)(nil)
	_ KarpenterMetrics       = (*KindCluster)(nil)
	_ KarpenterBuildSwitcher = (*KindCluster)(nil)
	_ KarpenterProcess       = (*KindCluster)(nil)
	_ KarpenterRerouter      = (*KindCluster)(nil)
	_ ComponentRestarter     = (*KindCluster)(nil)
	_ CatalogSource          = (*KindCluster)(nil)
	_ Provider               = (*KindInCluster)(nil)
	_ KarpenterOwner         = (*KindInCluster)(nil)
	_ KarpenterSwitcher      = (*KindInCluster)(nil)
	_ KarpenterMetrics       = (*KindInCluster)(nil)
	_ ComponentRestarter     = (*KindInCluster)(nil)
	_ CatalogSource          = (*KindInCluster)(nil)
	_ NodeContainers         = (*KindInCluster)(nil)
	_ NodeRoute              = (*KindInCluster)(nil)
	_ Provider               = (*Existing)(nil)
	_ KarpenterSwitcher      = (*Existing)(nil)
	_ CatalogSource          = (*Existing)(nil)
)

// NodeRoute is a provider whose nodes start differently by machine (kind:
// privileged, or through nodeprint's docker wrapper): it says how they
// did, for reports.
type NodeRoute interface {
	NodeRoute() (string, error)
}

// NodeContainers is a provider whose cluster nodes are containers of this
// machine's Docker engine (kind): their memory is part of what the
// cluster costs, and no process's resident set shows it.
type NodeContainers interface {
	// NodeContainersPeakMemory is the sum of the node containers' peak
	// memory (their cgroups' high-water marks), in bytes.
	NodeContainersPeakMemory(ctx context.Context) (int64, error)
}
