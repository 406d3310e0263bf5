package sop

import "github.com/nodeprint/nodeprint/pkg/attribute"

// CompareRule holds the command a baseline page tells an engineer to run
// to compare a live cluster with the baseline. It is shaped as a rule so
// that the runbook command test runs it like the rules' commands.
var CompareRule = &attribute.Rule{
	ID: "baseline-compare",
	Checks: []attribute.Check{{
		Command: "kubectl get nodeclaims -l karpenter.sh/nodepool=<nodepool>",
		Why:     attribute.Text{En: "what Karpenter launched: instance type, capacity type and zone per NodeClaim", Zh: "Karpenter 创建了什么：每个 NodeClaim 的实例类型、容量类型与可用区"},
		Shows:   "TYPE +CAPACITY +ZONE",
		// A header: it says the command answered, not what changed.
		Context: true,
	}},
}
