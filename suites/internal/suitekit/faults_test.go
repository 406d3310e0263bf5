package suitekit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// A fault scenario with a scale-in is filtered out of make test with the
// scale-in catalog; one without stays in.
func TestFaultLabelsPutAScaleInWithTheCatalog(t *testing.T) {
	s := &scenario.Scenario{}
	s.Spec.Fault = &scenario.Fault{Name: "do-not-disrupt", Expect: &scenario.Expectation{Layer: layer.L3}}
	if diff := cmp.Diff([]string{"fault:do-not-disrupt", "layer:L3"}, faultLabels(s)); diff != "" {
		t.Errorf("without a scale-in (-want +got):\n%s", diff)
	}
	s.Spec.ScaleIn = &scenario.ScaleIn{}
	if diff := cmp.Diff([]string{"fault:do-not-disrupt", "layer:L3", ScaleInCatalog, "phase:scale-in"}, faultLabels(s)); diff != "" {
		t.Errorf("with a scale-in (-want +got):\n%s", diff)
	}
}
