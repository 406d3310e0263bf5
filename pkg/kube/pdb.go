package kube

import (
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PDBSelects says whether budget b covers pods with podLabels, as the
// policy/v1 API defines it: a null selector selects no pod, an empty one
// every pod of its namespace (the caller compares namespaces). A selector
// that does not parse is an error naming the budget.
func PDBSelects(b *policyv1.PodDisruptionBudget, podLabels map[string]string) (bool, error) {
	if b.Spec.Selector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil {
		return false, fmt.Errorf("PodDisruptionBudget %s/%s: spec.selector: %w", b.Namespace, b.Name, err)
	}
	return sel.Matches(labels.Set(podLabels)), nil
}
