package run

import (
	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// The pipeline benchmark (package run_test, which may import the judge)
// computes a run's inputs and workload facts as a run does.

func InputsOf(s *scenario.Scenario, objs *Objects, cat *catalog.Catalog) (*inputs.Inputs, error) {
	return (&Runner{}).inputsOf(s, objs, cat)
}

// inputsOf records what a run of s applies with the runner's Karpenter.
func (r *Runner) inputsOf(s *scenario.Scenario, objs *Objects, cat *catalog.Catalog) (*inputs.Inputs, error) {
	return recordInputs(objs, objs.Namespace.Name, r.karpenter, inputs.Catalog{Name: s.Spec.Catalog, Digest: cat.Digest}, s.Spec.Karpenter.Env())
}

func WorkloadFacts(f *attribute.Facts, objs *Objects, cat *fit.Catalog) { workloadFacts(f, objs, cat) }
