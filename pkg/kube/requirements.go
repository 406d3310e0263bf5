package kube

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// NodeSatisfies checks a node's labels against NodePool requirements and
// names the first requirement the node violates.
func NodeSatisfies(labels map[string]string, reqs []karpv1.NodeSelectorRequirementWithMinValues) error {
	for _, r := range reqs {
		v, ok := labels[r.Key]
		var good bool
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			good = ok && slices.Contains(r.Values, v)
		case corev1.NodeSelectorOpNotIn:
			good = !ok || !slices.Contains(r.Values, v)
		case corev1.NodeSelectorOpExists:
			good = ok
		case corev1.NodeSelectorOpDoesNotExist:
			good = !ok
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if !ok || len(r.Values) != 1 {
				break
			}
			have, err1 := strconv.ParseInt(v, 10, 64)
			bound, err2 := strconv.ParseInt(r.Values[0], 10, 64)
			if err1 != nil || err2 != nil {
				break
			}
			good = (r.Operator == corev1.NodeSelectorOpGt && have > bound) || (r.Operator == corev1.NodeSelectorOpLt && have < bound)
		default:
			return fmt.Errorf("requirement %s has unknown operator %q", r.Key, r.Operator)
		}
		if !good {
			if !ok {
				return fmt.Errorf("requirement %s %s %v: the node has no label %s", r.Key, r.Operator, r.Values, r.Key)
			}
			return fmt.Errorf("requirement %s %s %v: the node has %s=%s", r.Key, r.Operator, r.Values, r.Key, v)
		}
	}
	return nil
}
