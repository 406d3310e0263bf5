package explain

import (
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
)

// nodeprint explain, read-only and without a baseline, on a live cluster
// while a fault is in place: it names the troubled workload and its layer,
// with the cluster's catalog and, as on a cluster it knows nothing of,
// without it.
var _ = DescribeTable("explain on a live cluster",
	func(ctx SpecContext, scenarioFile, workload, layer, rule string, withCatalog bool) {
		env.ExpectExplainedWhileFaulted(ctx, scenarioFile, workload, layer, rule, withCatalog)
	},
	Entry("a memory leak is the application's", Label("layer:L3", "fault:memory-leak"),
		"fixtures/scenarios/faults/memory-leak.yaml", "api", "L3", "L3-oom-killed", true, SpecTimeout(5*time.Minute)),
	Entry("a memory leak is the application's without the catalog (allocatable from the nodes)", Label("layer:L3", "fault:memory-leak", "catalog:none"),
		"fixtures/scenarios/faults/memory-leak.yaml", "api", "L3", "L3-oom-killed", false, SpecTimeout(5*time.Minute)),
	Entry("a NodePool that excludes every fitting instance is the policy's", Label("layer:L2", "fault:nodepool-mismatch"),
		"fixtures/scenarios/faults/nodepool-mismatch.yaml", "web", "L2", "L2-nodepool-excludes-fitting-instances", true, SpecTimeout(5*time.Minute)),
)
