package verify

import (
	"context"

	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Preflight checks, without a cluster, that the scenario's objects build
// and its fault binds to them (a memory leak needs a memory limit, a named
// workload must exist), so bad input fails before anything is applied.
func Preflight(ctx context.Context, s *scenario.Scenario) error {
	objs, err := run.Build(s, s.Metadata.Name+"-preflight")
	if err != nil {
		return err
	}
	if s.Spec.Fault == nil {
		return nil
	}
	shapes, err := fit.Load(ctx, s.CatalogPath)
	if err != nil {
		return err
	}
	_, err = run.BindFault(s, objs, shapes, nil, nil)
	return err
}
