// Package verify is the judge: it turns the runs pkg/run makes into report
// entries. A plain scenario is compared with its recorded baseline (and
// confirmed by more runs where one cannot decide), a fault scenario with
// its own clean run; both are attributed by the rules and pass by one
// rule (Passes). It also checks scenarios before anything runs
// (Preflight) and records baselines (Record). Data flows one way: run →
// verify → report.
package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Judge runs scenarios through a runner and judges the runs.
type Judge struct {
	runner *run.Runner
	// reference, when set, runs the baseline's Karpenter build for
	// paired verification (WithReference).
	reference Arm
	// candidate and forcePaired are WithPairedArms'.
	candidate   Arm
	forcePaired bool
	kubernetes  string
	maxPairs    int
	repeat      Repeat
	progress    func(string)
}

// Option configures a Judge.
type Option func(*Judge)

// WithProgress receives progress lines (default: none).
func WithProgress(f func(string)) Option { return func(j *Judge) { j.progress = f } }

// Repeat says how many runs a plain scenario is verified with.
type Repeat int

// RepeatAuto runs once, and only when a latency or Karpenter's usage moved
// past its gate runs as many more as the test needs to decide at its
// false-alarm rate (permtest.RunsFor); every other value is the fixed
// number of runs.
const RepeatAuto Repeat = 0

// WithRepeat sets how many runs verify a plain scenario (default
// RepeatAuto).
func WithRepeat(n Repeat) Option { return func(j *Judge) { j.repeat = n } }

// New is a judge of the runs r makes.
func New(r *run.Runner, opts ...Option) *Judge {
	j := &Judge{runner: r, progress: func(string) {}}
	for _, o := range opts {
		o(j)
	}
	return j
}

// Runner is the runner the judge runs scenarios with.
func (j *Judge) Runner() *run.Runner { return j.runner }

// Outcome is a scenario's report entry and the run(s) behind it.
type Outcome struct {
	Entry report.Scenario
	// Fault is a fault scenario's clean and faulted runs (nil for a plain
	// scenario, or when the run failed): recording an anomaly needs them.
	Fault *FaultResult
}

// Entry runs the scenario and returns its report entry (status, timing,
// verdict): a fault scenario runs clean, then faulted, and is classified
// against its clean run; a plain scenario runs once and is classified
// against b, its recorded baseline. Both pass by Passes. When the run
// fails, the entry says why (an environment failure reads inconclusive
// (environment)) and the error is returned too. The options act on the
// fault (run.OnInject, run.WhileFaulted).
func (j *Judge) Entry(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, opts ...run.FaultOption) (*Outcome, error) {
	started := time.Now()
	var out *Outcome
	var err error
	if s.Spec.Fault != nil {
		out, err = j.faultEntry(ctx, s, opts)
	} else {
		out, err = j.plainEntry(ctx, s, b)
	}
	out.Entry.Seconds = time.Since(started).Round(time.Second).Seconds()
	return out, err
}

func (j *Judge) faultEntry(ctx context.Context, s *scenario.Scenario, opts []run.FaultOption) (*Outcome, error) {
	res, err := j.Fault(ctx, s, opts...)
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	return &Outcome{Entry: res.Report(), Fault: res}, nil
}

func (j *Judge) plainEntry(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline) (*Outcome, error) {
	if b == nil {
		err := fmt.Errorf("%s has no fault and no baseline to compare with (record one with `nodeprint record %s`)", s.Path, s.Path)
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	t, ref, err := j.timingPlan(s, b)
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	var res *run.Result
	var d *diff.Diff
	var ids []string
	if t.Method == diff.Paired {
		res, d, ids, err = j.paired(ctx, s, b, t, ref)
	} else {
		res, d, ids, err = j.unpaired(ctx, s, b, t)
	}
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	v, err := classify(s, res, b, b.Inputs, d)
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	sc := ReportScenario(s)
	sc.Baseline, sc.Observed, sc.Diff, sc.Runs = b, res.Fingerprint, d, ids
	sc.Inputs = report.InputsOf(b, res.Inputs)
	sc.Timeline = report.TimelineOf(res.Observation, time.Time{})
	sc.Verdict, sc.Runbook = v, report.RunbookPage(v.Rule)
	sc.Status = statusOf(Passes(s, v))
	return &Outcome{Entry: sc}, nil
}

// unpaired runs the candidate alone: once when nothing recorded differs
// (the machine-dependent metrics are not compared), else confirmed
// against the baseline's recorded runs, the fallback. It returns the run
// attributed, its diff and every run's id.
func (j *Judge) unpaired(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, t *diff.Timing) (*run.Result, *diff.Diff, []string, error) {
	res, err := j.runner.Run(ctx, s)
	if err != nil {
		return nil, nil, nil, err
	}
	t = unchangedInputs(t, b, res)
	if t.Method == diff.Unchanged {
		return res, diff.CompareTiming(b, diff.RulesFor(s), res.Fingerprint, t), []string{res.ID}, nil
	}
	again, err := j.confirm(ctx, s, b, res)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := []string{res.ID}
	var more []*fingerprint.Fingerprint
	for _, x := range again {
		ids, more = append(ids, x.ID), append(more, x.Fingerprint)
	}
	d := diff.Compare(b, diff.RulesFor(s), res.Fingerprint, more...)
	d.Timing = t
	return res, d, ids, nil
}

// paired runs the reference ref and the candidate interleaved
// (pairedRuns) as plan says, and attributes the candidate's first run; every run's id is listed,
// the candidate's first.
func (j *Judge) paired(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, plan *diff.Timing, ref Arm) (*run.Result, *diff.Diff, []string, error) {
	a, t, err := j.pairedRuns(ctx, s, b, plan, ref)
	if err != nil {
		return nil, nil, nil, err
	}
	var ids []string
	for _, r := range append(append([]*run.Result{}, a.cands...), a.refs...) {
		ids = append(ids, r.ID)
	}
	res := a.cands[0]
	if t.Method != diff.Paired {
		d := diff.Compare(b, diff.RulesFor(s), res.Fingerprint)
		d.Timing = t
		return res, d, ids, nil
	}
	return res, diff.CompareTiming(b, diff.RulesFor(s), res.Fingerprint, t), ids, nil
}

// confirm runs a plain scenario again where its first run, res, cannot be
// decided alone (RepeatAuto), or up to the fixed number of runs. The first
// run stays the one attributed: the others only join the test of the
// per-run metrics.
func (j *Judge) confirm(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, res *run.Result) ([]*run.Result, error) {
	want := int(j.repeat)
	if j.repeat == RepeatAuto {
		rules := diff.RulesFor(s)
		if !diff.Compare(b, rules, res.Fingerprint).Suspect() {
			return nil, nil
		}
		want = diff.ConfirmRuns(b.Runs, rules)
		j.progress(fmt.Sprintf("run %s: a latency or Karpenter's usage moved past its gate; %d more run(s) decide whether it is a shift or noise", res.ID, want-1))
	}
	var more []*run.Result
	for len(more) < want-1 {
		again, err := j.runner.Run(ctx, s)
		if err != nil {
			return nil, err
		}
		if d := inputs.Diff(res.Inputs, again.Inputs); len(d) > 0 {
			return nil, fmt.Errorf("run %s applied other inputs than run %s (%s): the confirming runs must repeat the first", again.ID, res.ID, inputs.Summary(d, 3))
		}
		more = append(more, again)
	}
	return more, nil
}

// Attribute classifies a finished run against a baseline (a recorded one
// for a plain scenario; the clean run for a fault scenario). more are runs
// of the same inputs that confirm res: their latencies and Karpenter's
// usage are tested with res's.
func Attribute(s *scenario.Scenario, res *run.Result, bl *fingerprint.Baseline, baselineInputs *inputs.Inputs, more ...*fingerprint.Fingerprint) (*diff.Diff, *attribute.Verdict, error) {
	d := diff.Compare(bl, diff.RulesFor(s), res.Fingerprint, more...)
	v, err := classify(s, res, bl, baselineInputs, d)
	return d, v, err
}

// classify runs the rules on a run and its diff against bl.
func classify(s *scenario.Scenario, res *run.Result, bl *fingerprint.Baseline, baselineInputs *inputs.Inputs, d *diff.Diff) (*attribute.Verdict, error) {
	rs, err := attribute.Rules()
	if err != nil {
		return nil, err
	}
	v, err := attribute.Classify(rs, &attribute.Input{
		Scenario: s.Metadata.Name, Baseline: bl, Observed: res.Fingerprint, Observation: res.Observation,
		Diff: d, Facts: res.Facts, Inputs: res.Inputs, BaselineInputs: baselineInputs,
	})
	return v, err
}
