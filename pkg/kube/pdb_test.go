package kube

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PDBSelects follows policy/v1: null selects nothing, empty everything.
func TestPDBSelects(t *testing.T) {
	web := map[string]string{"app": "web"}
	for _, c := range []struct {
		name     string
		selector *metav1.LabelSelector
		want     bool
		err      bool
	}{
		{"null selector", nil, false, false},
		{"empty selector", &metav1.LabelSelector{}, true, false},
		{"matching labels", &metav1.LabelSelector{MatchLabels: web}, true, false},
		{"other labels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, false, false},
		{"expression", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}, true, false},
		{"bad operator", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "b"}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: c.selector}}
			got, err := PDBSelects(b, web)
			if got != c.want || (err != nil) != c.err {
				t.Errorf("got %v, %v; want %v, error %v", got, err, c.want, c.err)
			}
		})
	}
}
