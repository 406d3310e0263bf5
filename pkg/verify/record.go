package verify

import (
	"context"
	"fmt"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Record runs a scenario n times and aggregates the runs into a baseline.
func (j *Judge) Record(ctx context.Context, env fingerprint.Provenance, s *scenario.Scenario, n int) (*fingerprint.Baseline, error) {
	var fps []*fingerprint.Fingerprint
	var applied *inputs.Inputs
	for i := 0; i < n; i++ {
		res, err := j.runner.Run(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("scenario %s, run %d of %d: %w", s.Metadata.Name, i+1, n, err)
		}
		if applied != nil {
			if d := inputs.Diff(applied, res.Inputs); len(d) > 0 {
				return nil, fmt.Errorf("scenario %s, run %d of %d applied other inputs than run 1 (%s): nothing recorded", s.Metadata.Name, i+1, n, inputs.Summary(d, 3))
			}
		}
		applied = res.Inputs
		fps = append(fps, res.Fingerprint)
		env.CatalogDigest = res.Catalog.Digest
	}
	env.Catalog = s.Spec.Catalog
	env.KarpenterSettings = s.Spec.Karpenter.Env()
	b, err := fingerprint.NewBaseline(s.Metadata.Name, env, fps)
	if err != nil {
		return nil, err
	}
	b.Inputs = applied
	return b, nil
}
