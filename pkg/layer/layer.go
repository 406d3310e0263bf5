// Package layer is nodeprint's vocabulary for where a regression lives:
// the infrastructure (L1), the orchestration policy (L2) or the
// application (L3). Scenarios expect a layer, faults break one, rules name
// one and verdicts report one; each uses this type, so the three values
// and their order are written once.
package layer

// Layer is L1, L2 or L3.
type Layer string

// The layers.
const (
	L1 Layer = "L1" // infrastructure: cloud capacity, the control plane, node bootstrap
	L2 Layer = "L2" // orchestration: Karpenter and its NodePool and node class policy
	L3 Layer = "L3" // application: the code and the pod spec
)

// All are the layers in the decision order: every L1 rule is evaluated
// before any L2 rule, every L2 rule before any L3 rule.
var All = []Layer{L1, L2, L3}

// Verdicts name a layer in a verdict.
const (
	L1Infrastructure = "L1-infrastructure"
	L2Orchestration  = "L2-orchestration"
	L3Application    = "L3-application"
)

// Valid says whether l is one of the layers.
func (l Layer) Valid() bool { return l == L1 || l == L2 || l == L3 }

// Verdict is the verdict that names l ("L2-orchestration"); "" for a
// value that is not a layer.
func (l Layer) Verdict() string {
	switch l {
	case L1:
		return L1Infrastructure
	case L2:
		return L2Orchestration
	case L3:
		return L3Application
	}
	return ""
}
