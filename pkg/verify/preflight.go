package verify

import (
	"cmp"
	"context"
	"fmt"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/fit"
	"github.com/nodeprint/nodeprint/pkg/permtest"
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

// UndecidableError is a verification whose statistical test cannot reach
// significance: with the baseline's runs and the runs verify would make,
// the smallest p-value the test can give is above its false-alarm rate,
// so no slowdown however large could fail it. Bad input, refused before
// anything runs.
type UndecidableError struct {
	Scenario, Baseline string
	// Recorded and New are the runs on each side; Alpha the false-alarm
	// rate; Want the fewest new runs that can decide (0: none can).
	Recorded, New int
	Alpha         float64
	Want          int
}

func (e *UndecidableError) Error() string {
	msg := fmt.Sprintf("%s: %d run(s) against the %d recorded in %s cannot decide: the smallest p-value they can reach, 1/C(%d,%d) = %.3g, is above the false-alarm rate %g, so no latency or usage regression could fail it",
		e.Scenario, e.New, e.Recorded, e.Baseline, e.Recorded+e.New, e.New, 1/permtest.Choose(e.Recorded+e.New, e.New), e.Alpha)
	if e.Want > 0 {
		return msg + fmt.Sprintf("; use --repeat auto or at least %d", e.Want)
	}
	return msg + "; record more runs (nodeprint record --runs N: --add takes runs of the same machine only) or raise spec.baseline.falseAlarm"
}

// CheckDecidable refuses a verification of s against b whose per-run test
// cannot reach significance with repeat (RepeatAuto: the runs it would
// confirm with).
func CheckDecidable(s *scenario.Scenario, b *fingerprint.Baseline, path string, repeat Repeat) error {
	rules := diff.RulesFor(s)
	alpha := cmp.Or(rules.FalseAlarm, diff.DefaultFalseAlarm)
	m := int(repeat)
	if repeat == RepeatAuto {
		m = diff.ConfirmRuns(b.Runs, rules)
	}
	if permtest.Feasible(b.Runs, m, alpha) {
		return nil
	}
	e := &UndecidableError{Scenario: s.Path, Baseline: path, Recorded: b.Runs, New: m, Alpha: alpha}
	// auto already asked for every run the test could use: only a fixed
	// --repeat has more runs to offer.
	for n := m + 1; repeat != RepeatAuto && n <= MaxRepeat; n++ {
		if permtest.Feasible(b.Runs, n, alpha) {
			e.Want = n
			break
		}
	}
	return e
}

// MaxRepeat is the most runs a verification may be given (--repeat).
const MaxRepeat = 20
