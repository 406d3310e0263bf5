package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/inputs"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

// ReportScenario starts a scenario's report entry: its name, file, and for
// a fault scenario the fault and the expected attribution. The status is
// Error until a result says otherwise. The CLI and the suites share it.
func ReportScenario(s *scenario.Scenario) report.Scenario {
	sc := report.Scenario{Name: s.Metadata.Name, File: s.Path, Status: report.Error, Notes: s.Notes}
	if f := s.Spec.Fault; f != nil {
		sc.Fault = f.Name
		if e := f.Expect; e != nil {
			sc.Expected = &report.Expectation{Layer: e.Layer, Rule: e.Rule}
		}
	}
	return sc
}

// ReportError is the report entry of a scenario whose run failed with
// err. An environment failure carries the verdict inconclusive
// (environment): the scenario is an error (exit 3), never a layer's fault.
func ReportError(s *scenario.Scenario, err error) report.Scenario {
	sc := ReportScenario(s)
	sc.Error = err.Error()
	var ee *EnvironmentError
	if errors.As(err, &ee) {
		what := supervise.Incidents(ee.Incidents)
		if what == "" {
			what = strings.Join(ee.Down, ", ") + " down"
		}
		sc.Verdict = attribute.EnvironmentVerdict(s.Metadata.Name, what)
	}
	return sc
}

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
// fault (OnInject, WhileFaulted).
func (r *Runner) Entry(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, opts ...FaultOption) (*Outcome, error) {
	started := time.Now()
	var out *Outcome
	var err error
	if s.Spec.Fault != nil {
		out, err = r.faultEntry(ctx, s, opts)
	} else {
		out, err = r.plainEntry(ctx, s, b)
	}
	out.Entry.Seconds = time.Since(started).Round(time.Second).Seconds()
	return out, err
}

func (r *Runner) faultEntry(ctx context.Context, s *scenario.Scenario, opts []FaultOption) (*Outcome, error) {
	res, err := r.RunFault(ctx, s, opts...)
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	return &Outcome{Entry: res.Report(), Fault: res}, nil
}

func (r *Runner) plainEntry(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline) (*Outcome, error) {
	if b == nil {
		err := fmt.Errorf("%s has no fault and no baseline to compare with (record one with `nodeprint record %s`)", s.Path, s.Path)
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	res, err := r.Run(ctx, s)
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	again, err := r.confirm(ctx, s, b, res)
	if err != nil {
		return &Outcome{Entry: ReportError(s, err)}, err
	}
	ids := []string{res.ID}
	var more []*fingerprint.Fingerprint
	for _, x := range again {
		ids, more = append(ids, x.ID), append(more, x.Fingerprint)
	}
	d, v, err := Attribute(s, res, b, b.Inputs, more...)
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

// Repeat says how many runs a plain scenario is verified with.
type Repeat int

// RepeatAuto runs once, and only when a latency or Karpenter's usage moved
// past its gate runs as many more as the test needs to decide at its
// false-alarm rate (permtest.RunsFor); every other value is the fixed
// number of runs.
const RepeatAuto Repeat = 0

// WithRepeat sets how many runs verify a plain scenario (default
// RepeatAuto).
func WithRepeat(n Repeat) Option { return func(r *Runner) { r.repeat = n } }

// confirm runs a plain scenario again where its first run, res, cannot be
// decided alone (RepeatAuto), or up to the fixed number of runs. The first
// run stays the one attributed: the others only join the test of the
// per-run metrics.
func (r *Runner) confirm(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, res *Result) ([]*Result, error) {
	want := int(r.repeat)
	if r.repeat == RepeatAuto {
		rules := diff.RulesFor(s)
		if !diff.Compare(b, rules, res.Fingerprint).Suspect() {
			return nil, nil
		}
		want = diff.ConfirmRuns(b.Runs, rules)
		r.progress(fmt.Sprintf("run %s: a latency or Karpenter's usage moved past its gate; %d more run(s) decide whether it is a shift or noise", res.ID, want-1))
	}
	var more []*Result
	for len(more) < want-1 {
		again, err := r.Run(ctx, s)
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

// Passes is the one pass rule: a fault scenario passes when the verdict
// names its expected layer (and rule, where it names one), a plain
// scenario when the verdict is none: no rule fired and the fingerprint
// did not regress from its baseline.
func Passes(s *scenario.Scenario, v *attribute.Verdict) bool {
	if v == nil {
		return false
	}
	f := s.Spec.Fault
	if f == nil {
		return v.Verdict == attribute.None
	}
	e := f.Expect
	return e != nil && v.Layer == e.Layer && (e.Rule == "" || v.Rule == e.Rule)
}

func statusOf(passed bool) string {
	if passed {
		return report.Passed
	}
	return report.Failed
}

// Report is the fault scenario's report entry (Passes decides its status).
func (f *FaultResult) Report() report.Scenario {
	sc := ReportScenario(f.Scenario)
	sc.Verdict, sc.Baseline, sc.Observed, sc.Diff = f.Verdict, f.CleanFingerprint, f.Faulted.Fingerprint, f.Diff
	sc.Runs = []string{f.Clean.ID, f.Faulted.ID}
	sc.Timeline = report.TimelineOf(f.Faulted.Observation, f.Faulted.Injected)
	sc.Runbook = report.RunbookPage(f.Verdict.Rule)
	sc.Status = statusOf(Passes(f.Scenario, f.Verdict))
	return sc
}
