package sensitivity

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/inputs"
	runner "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// SlowedArm is the candidate arm of a paired experiment whose lever is a
// slowdown: each of its runs is the runner's with the slowdown applied
// first and restored after, so the reference arm (the runner alone) runs
// on the unchanged cluster between them. It satisfies verify.Arm.
type SlowedArm struct {
	Runner   *runner.Runner
	Client   client.Client
	Slowdown Slowdown
}

// Run applies the slowdown, runs s and restores the cluster, also when the
// run fails.
func (a *SlowedArm) Run(ctx context.Context, s *scenario.Scenario, opts ...runner.FaultOption) (res *runner.Result, err error) {
	restore, err := Apply(ctx, a.Client, a.Slowdown)
	if err != nil {
		return nil, fmt.Errorf("failed to slow %s by %s: %w", a.Slowdown.Target, a.Slowdown.Delay, err)
	}
	defer func() {
		if rerr := restore(context.WithoutCancel(ctx)); rerr != nil {
			err = errors.Join(err, fmt.Errorf("failed to restore %s: %w", a.Slowdown.Target, rerr))
		}
	}()
	return a.Runner.Run(ctx, s, opts...)
}

// Karpenter is the runner's: the lever is not an input.
func (a *SlowedArm) Karpenter() inputs.Karpenter { return a.Runner.Karpenter() }
