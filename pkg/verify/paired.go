package verify

import (
	"cmp"
	"context"
	"fmt"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/paired"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// DefaultMaxPairs caps a paired verification: 16 pairs (32 runs) give
// 97.9% power for a 1.25× shift of one metric among twelve in pkg/paired's
// simulation, where 12 gave 76%.
const DefaultMaxPairs = 16

// MaxPairsLimit bounds a cap of pairs a user may ask for: 64 pairs are
// 128 runs of a scenario.
const MaxPairsLimit = 64

// CheckMaxPairs refuses a cap of pairs outside 1 to MaxPairsLimit; flag
// names the option for the message.
func CheckMaxPairs(flag string, n int) error {
	if n < 1 || n > MaxPairsLimit {
		return fmt.Errorf("%s %d: want 1 to %d pairs (default %d)", flag, n, MaxPairsLimit, DefaultMaxPairs)
	}
	return nil
}

// Arm runs one side of a paired verification: a *run.Runner bound to one
// Karpenter build (make sensitivity's arms are runners of the pinned
// build and of a lever build).
type Arm interface {
	Run(ctx context.Context, s *scenario.Scenario, opts ...run.FaultOption) (*run.Result, error)
	// Karpenter is the build the arm's runs record in their inputs.
	Karpenter() inputs.Karpenter
}

// Replayer is an arm that can run recorded inputs in place of a
// scenario's (a *run.Runner): the reference arm when the scenario changed
// since its baseline.
type Replayer interface {
	Replaying(in *inputs.Inputs) *run.Replay
}

// WithReference makes the judge pair: a plain scenario whose candidate
// Karpenter build (the runner's) differs from ref's, the baseline's build,
// runs on both, interleaved A B B A, and the machine-dependent metrics are
// decided by pkg/paired (default: no reference arm).
func WithReference(ref Arm) Option { return func(j *Judge) { j.reference = ref } }

// WithPairedArms pairs every plain scenario's runs on ref and cand,
// whatever their builds and inputs: the A/A comparison (both arms one
// build) and the smoke of make sensitivity (the pinned build against a
// lever build). The runner stays the one for fault scenarios.
func WithPairedArms(ref, cand Arm) Option {
	return func(j *Judge) { j.reference, j.candidate, j.forcePaired = ref, cand, true }
}

// cand is the candidate arm: WithPairedArms', else the runner.
func (j *Judge) cand() Arm {
	if j.candidate != nil {
		return j.candidate
	}
	return j.runner
}

// WithKubernetes is the cluster's Kubernetes version: a baseline recorded
// on another is not "nothing changed" (default: unknown, not compared).
func WithKubernetes(version string) Option { return func(j *Judge) { j.kubernetes = version } }

// WithMaxPairs caps a paired verification (default DefaultMaxPairs).
func WithMaxPairs(n int) Option { return func(j *Judge) { j.maxPairs = n } }

// pairedOptions are the paired test's settings for scenario s.
func (j *Judge) pairedOptions(s *scenario.Scenario) []paired.Option {
	return []paired.Option{paired.WithAlpha(cmp.Or(s.Spec.Baseline.FalseAlarm, diff.DefaultFalseAlarm)),
		paired.WithMaxPairs(cmp.Or(j.maxPairs, DefaultMaxPairs))}
}

// PairedMetrics is how many metrics a paired verification of s tests:
// every per-run metric verification tests, the scale-in's where s has one.
func PairedMetrics(s *scenario.Scenario) int {
	n := 0
	for _, m := range fingerprint.RunMetrics {
		if !m.Untested && (!m.ScaleIn || s.Spec.ScaleIn != nil) {
			n++
		}
	}
	return n
}

// CheckPairable refuses a paired verification of s that could never
// declare a regression: its falseAlarm and the cap of pairs leave no look
// at which the smallest p-value reaches its share.
func CheckPairable(s *scenario.Scenario, maxPairs int) error {
	j := &Judge{maxPairs: maxPairs}
	if paired.MinPairs(PairedMetrics(s), j.pairedOptions(s)...) > 0 {
		return nil
	}
	return fmt.Errorf("%s: a paired verification with at most %d pairs and falseAlarm %g can never declare a regression (the smallest p-value of n pairs is 2^-n, for the whole family of %d metrics): raise --max-pairs or the scenario's baseline.falseAlarm",
		s.Path, cmp.Or(maxPairs, DefaultMaxPairs), cmp.Or(s.Spec.Baseline.FalseAlarm, diff.DefaultFalseAlarm), PairedMetrics(s))
}

// timingPlan decides, before any run, how s's machine-dependent metrics
// are judged against b, and with which reference arm when paired: the
// arm of the baseline's build, replaying the baseline's recorded inputs
// when the scenario's differ from them (see TimingPlan).
func (j *Judge) timingPlan(s *scenario.Scenario, b *fingerprint.Baseline) (*diff.Timing, Arm, error) {
	if j.forcePaired {
		return &diff.Timing{Method: diff.Paired}, j.reference, nil
	}
	now, err := run.ScenarioInputs(s, j.cand().Karpenter())
	if err != nil {
		return nil, nil, err
	}
	var ref *inputs.Karpenter
	if j.reference != nil {
		k := j.reference.Karpenter()
		ref = &k
	}
	var replayable error
	if b.Inputs != nil {
		replayable = run.CheckReplayable(b.Inputs, s)
	}
	t := TimingPlan(b, now, ref, j.kubernetes, replayable)
	if t.Method != diff.Paired {
		return t, nil, nil
	}
	arm := j.reference
	if arm == nil || arm.Karpenter().Binary != b.Inputs.Karpenter.Binary {
		arm = j.cand() // the candidate runs the baseline's build
	}
	if !t.Replayed {
		return t, arm, nil
	}
	rp, ok := arm.(Replayer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: the reference arm of build %s cannot replay recorded inputs", s.Path, build(arm.Karpenter()))
	}
	return t, rp.Replaying(b.Inputs), nil
}

// TimingPlan is timingPlan's decision from what it reads: the baseline,
// the inputs a run of the scenario as it is now records (with the
// candidate's Karpenter), the reference arm's Karpenter (nil: none), the
// cluster's Kubernetes version ("": unknown) and whether the baseline's
// recorded inputs can be replayed here (nil: they can).
//
//   - Paired when an arm of the baseline's build is here and something
//     differs: the build (another candidate build) or the scenario's
//     inputs, whose recorded version the reference arm then replays.
//   - Unchanged when nothing recorded differs.
//   - Recorded, with why, when no reference arm can run.
func TimingPlan(b *fingerprint.Baseline, now *inputs.Inputs, ref *inputs.Karpenter, kubernetes string, replayable error) *diff.Timing {
	if b.Inputs == nil {
		return recorded("the baseline records no inputs (schema 1), so no run here can be said to repeat it; re-record it")
	}
	rec, cand := b.Inputs.Karpenter, now.Karpenter
	changed := scenarioChanges(b.Inputs, now)
	if ref != nil && ref.Binary != cand.Binary {
		if ref.Binary != rec.Binary {
			return recorded("the baseline was recorded with Karpenter %s, the reference build here is %s: the baseline's build is not here to run as the reference arm", build(rec), build(*ref))
		}
		return pairedFor(changed, replayable, true)
	}
	switch {
	case cand.Binary == "":
		return recorded("Karpenter runs outside nodeprint here (its binary cannot be read), so no reference arm can run beside it")
	case cand.Binary != rec.Binary:
		return recorded("the baseline was recorded with Karpenter %s and this run uses %s; the recorded build is not here to run as a reference arm (give the new build with --karpenter-binary to pair it with the pinned one)", build(rec), build(cand))
	case len(changed) > 0:
		return pairedFor(changed, replayable, false)
	case kubernetes != "" && b.Provenance.Kubernetes != "" && kubernetes != b.Provenance.Kubernetes:
		return recorded("the baseline was recorded on Kubernetes %s and this cluster runs %s; replaying it on the recorded Kubernetes is not built", b.Provenance.Kubernetes, kubernetes)
	}
	return &diff.Timing{Method: diff.Unchanged,
		Reason: fmt.Sprintf("nothing recorded differs (inputs, Karpenter %s and its settings, Kubernetes): a reference arm would be this run twice, so a timing difference would be the machine's or the harness's, not a regression; the machine-independent checks decide", build(cand))}
}

func recorded(format string, args ...any) *diff.Timing {
	return &diff.Timing{Method: diff.Recorded, Reason: fmt.Sprintf(format, args...)}
}

// pairedFor is the plan when an arm of the baseline's build is here and
// the scenario's inputs differ from the recorded ones by changed (beyond
// the build); otherBuild says whether the candidate is another build.
func pairedFor(changed []inputs.Change, replayable error, otherBuild bool) *diff.Timing {
	switch {
	case len(changed) == 0:
		return &diff.Timing{Method: diff.Paired, Reason: "the reference arm runs the baseline's build on the baseline's inputs"}
	case replayable == nil:
		return &diff.Timing{Method: diff.Paired, Replayed: true, Reason: fmt.Sprintf(
			"the scenario's inputs changed since the baseline (%s): the reference arm replays the baseline's recorded inputs on its build", inputs.Summary(changed, 3))}
	case otherBuild:
		return &diff.Timing{Method: diff.Paired, Reason: fmt.Sprintf(
			"the scenario's inputs changed since the baseline (%s) and the recorded ones cannot be replayed (%v): the reference arm runs the scenario as it is now on the baseline's build, so the pairs measure the build alone, and the input change is judged by the machine-independent checks and the change rules", inputs.Summary(changed, 3), replayable)}
	}
	return recorded("the scenario's inputs changed since the baseline (%s) and the recorded ones cannot be replayed here (%v), so latencies and Karpenter's usage are compared with the recorded runs (another session's numbers)", inputs.Summary(changed, 3), replayable)
}

// scenarioChanges are the changes from the recorded inputs to now's
// beyond the Karpenter build (its version and binary), which the arms
// cover: what a replay has to put back.
func scenarioChanges(was, now *inputs.Inputs) []inputs.Change {
	var out []inputs.Change
	for _, c := range inputs.Diff(was, now) {
		if c.Path != "karpenter.version" && c.Path != "karpenter.binary" {
			out = append(out, c)
		}
	}
	return out
}

// build names a Karpenter build: "v1.14.1 (sha256 5c331774cafe)".
func build(k inputs.Karpenter) string {
	d := k.Binary
	if len(d) > 12 {
		d = d[:12]
	}
	if d == "" {
		d = "unknown"
	}
	return fmt.Sprintf("%s (sha256 %s)", cmp.Or(k.Version, "unknown version"), d)
}

// unchangedInputs turns an Unchanged plan into Recorded when the run's
// inputs differ from the baseline's although the scenario's, computed
// before the run, did not: then the run is not the baseline's repeat.
func unchangedInputs(t *diff.Timing, b *fingerprint.Baseline, res *run.Result) *diff.Timing {
	d := inputs.Diff(b.Inputs, res.Inputs)
	if t.Method != diff.Unchanged || len(d) == 0 {
		return t
	}
	return recorded("the run applied other inputs than the baseline's (%s), which the scenario's did not before the run, so latencies and Karpenter's usage are compared with the recorded runs (another session's numbers)", inputs.Summary(d, 3))
}

// arms is a paired verification's runs so far: refs[i] and cands[i] are
// block i's.
type arms struct {
	refs, cands []*run.Result
}

func (a *arms) fingerprints() (refs, cands []*fingerprint.Fingerprint) {
	for i := range a.refs {
		refs, cands = append(refs, a.refs[i].Fingerprint), append(cands, a.cands[i].Fingerprint)
	}
	return refs, cands
}

// ReferenceFirst reports whether block i (from 0) runs the reference
// first: A B, B A, A B, B A … so that neither arm is always the one after
// a switch of Karpenter build, or the one a drifting machine favours.
func ReferenceFirst(block int) bool { return block%2 == 0 }

// pair runs one block, in ReferenceFirst's order, and checks that each
// arm repeats its first run's inputs.
func (j *Judge) pair(ctx context.Context, s *scenario.Scenario, refArm Arm, a *arms) error {
	var ref, cand *run.Result
	steps := []func() error{
		func() (err error) { ref, err = refArm.Run(ctx, s); return err },
		func() (err error) { cand, err = j.cand().Run(ctx, s); return err },
	}
	if !ReferenceFirst(len(a.refs)) {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		arm       string
		now, were *run.Result
	}{{"reference", ref, firstOr(a.refs, ref)}, {"candidate", cand, firstOr(a.cands, cand)}} {
		if d := inputs.Diff(c.were.Inputs, c.now.Inputs); len(d) > 0 {
			return fmt.Errorf("%s run %s applied other inputs than run %s (%s): an arm's runs must repeat its first", c.arm, c.now.ID, c.were.ID, inputs.Summary(d, 3))
		}
	}
	a.refs, a.cands = append(a.refs, ref), append(a.cands, cand)
	return nil
}

func firstOr(rs []*run.Result, r *run.Result) *run.Result {
	if len(rs) > 0 {
		return rs[0]
	}
	return r
}

// pairedRuns runs blocks until the paired test decides every metric, the
// cap is reached, a metric regresses, or the first candidate run already
// regresses on what does not depend on the machine (more pairs cannot
// undo that). It returns the arms and the timing judgement.
func (j *Judge) pairedRuns(ctx context.Context, s *scenario.Scenario, b *fingerprint.Baseline, plan *diff.Timing, refArm Arm) (*arms, *diff.Timing, error) {
	a := &arms{}
	opts := j.pairedOptions(s)
	ref, cand := build(refArm.Karpenter()), build(j.cand().Karpenter())
	if plan.Replayed {
		ref = "the baseline's recorded inputs on " + ref
	}
	for {
		if err := j.pair(ctx, s, refArm, a); err != nil {
			return nil, nil, err
		}
		if err := faithful(plan, b, a); err != nil {
			return nil, nil, err
		}
		refs, cands := a.fingerprints()
		res, excluded, err := look(refs, cands, opts)
		if err != nil {
			return nil, nil, err
		}
		if res == nil {
			return a, &diff.Timing{Method: diff.Recorded, Reason: "no machine-dependent metric has a value in every run: " + fmt.Sprint(excluded)}, nil
		}
		t := diff.PairedTiming(res, ref, cand, excluded)
		t.Replayed = plan.Replayed
		if plan.Reason != "" {
			t.Reason = plan.Reason + "; " + t.Reason
		}
		if len(a.refs) == 1 && diff.CompareStatic(b, diff.RulesFor(s), cands[0]).Regressed() {
			t.Stopped = "stopped after 1 pair: the candidate's selection or outcomes regressed already, which more pairs cannot undo"
			return a, t, nil
		}
		j.progress(fmt.Sprintf("%s: pair %d of at most %d: %s", s.Metadata.Name, res.Pairs, res.MaxPairs, progressOf(res)))
		if !res.NeedMore() {
			if n := len(res.Undecided()); n > 0 && len(res.Regressed()) == 0 {
				t.Stopped = fmt.Sprintf("%d metric(s) still undecided at the cap of %d pairs: %v", n, res.MaxPairs, res.Undecided())
			}
			return a, t, nil
		}
	}
}

// PairedLook is one look of a paired verification of s after the pairs
// (refs[i], cands[i]), with the judge's settings for s and a cap of
// maxPairs (0: DefaultMaxPairs): the result, and the metrics left out
// because a pair lacks them (nil result: every metric). The judge stops
// when the result needs no more pairs; make sensitivity replays
// verifications through it.
func PairedLook(s *scenario.Scenario, maxPairs int, refs, cands []*fingerprint.Fingerprint) (*paired.Result, []string, error) {
	j := &Judge{maxPairs: maxPairs}
	return look(refs, cands, j.pairedOptions(s))
}

func look(refs, cands []*fingerprint.Fingerprint, opts []paired.Option) (*paired.Result, []string, error) {
	ms, excluded := diff.PairedSamples(refs, cands)
	if len(ms) == 0 {
		return nil, excluded, nil
	}
	res, err := paired.Test(ms, opts...)
	return res, excluded, err
}

// faithful checks a replay: the reference arm's first run must record
// the baseline's inputs (its build's own), or the pairs would compare the
// candidate with something the baseline never ran.
func faithful(plan *diff.Timing, b *fingerprint.Baseline, a *arms) error {
	if !plan.Replayed || len(a.refs) != 1 {
		return nil
	}
	if d := inputs.Diff(b.Inputs, a.refs[0].Inputs); len(d) > 0 {
		return fmt.Errorf("run %s replayed the baseline's recorded inputs but recorded others (%s): the replay is not faithful, and the pairs would not measure the change; please report this with the baseline", a.refs[0].ID, inputs.Summary(d, 3))
	}
	return nil
}

func progressOf(r *paired.Result) string {
	if reg := r.Regressed(); len(reg) > 0 {
		return fmt.Sprintf("regressed: %v", reg)
	}
	if u := r.Undecided(); len(u) > 0 {
		return fmt.Sprintf("%d undecided (%v)", len(u), u)
	}
	return "every metric decided"
}
