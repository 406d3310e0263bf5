package suitekit

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/paired"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sensitivity"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// ScenarioEntries makes one table entry per scenario file in dir, labelled
// scenario:<name>, with the parameters (scenario, load error). A directory
// that does not load yields one entry carrying the loader's error, so a bad
// file fails the suite instead of vanishing from it.
func ScenarioEntries(dir func(repo.Layout) string, decorators ...any) []TableEntry {
	return scenarioEntries(dir, func(*scenario.Scenario) []string { return nil }, decorators)
}

// Labels of the scale-in scenarios' entries: make test runs the smoke and
// filters the catalog out (a scale-in runs for minutes); make e2e and make
// scale-in run them all.
const (
	ScaleInSmoke   = "scale-in:smoke"
	ScaleInCatalog = "scale-in:catalog"
)

// ScaleInEntries are ScenarioEntries for the scale-in scenarios of dir:
// the one named smoke is labelled ScaleInSmoke, the others ScaleInCatalog.
func ScaleInEntries(dir func(repo.Layout) string, smoke string, decorators ...any) []TableEntry {
	return scenarioEntries(dir, func(s *scenario.Scenario) []string {
		if s.Metadata.Name == smoke {
			return []string{ScaleInSmoke}
		}
		return []string{ScaleInCatalog}
	}, decorators)
}

// scenarioEntries is ScenarioEntries with more labels per scenario.
func scenarioEntries(dirOf func(repo.Layout) string, labels func(*scenario.Scenario) []string, decorators []any) []TableEntry {
	tc, err := toolchain.Find()
	if err != nil {
		return []TableEntry{Entry("loading scenarios", append([]any{(*scenario.Scenario)(nil), err}, decorators...)...)}
	}
	dir := dirOf(repo.At(tc.Root))
	// The suites' job is the CLI's: loaded, preflighted, checked before
	// any cluster is touched.
	job, err := harness.NewJob(context.Background(), []string{dir}, harness.WithToolchain(tc), harness.WithLayout(repo.At(tc.Root)))
	if err != nil {
		return []TableEntry{Entry("loading scenarios in "+dir, append([]any{(*scenario.Scenario)(nil), err}, decorators...)...)}
	}
	var out []TableEntry
	for _, s := range job.Scenarios {
		args := append([]any{s, error(nil), Label(append([]string{"scenario:" + s.Metadata.Name}, labels(s)...)...)}, decorators...)
		// Under ginkgo -p the specs share one cluster: a cluster-wide fault,
		// a baseline's timings, or another catalog (switching it restarts
		// Karpenter) must run alone, which is what Serial means.
		if harness.RunsAlone(s) || s.CatalogPath != tc.Paths().InstanceTypes || len(s.Spec.Karpenter.Env()) > 0 {
			args = append(args, Serial)
		}
		out = append(out, Entry(s.Metadata.Name, args...))
	}
	return out
}

// harness is the spec's harness on the suite's cluster, supervised; the
// supervisor stops when the spec ends.
func (e *Environment) harness(ctx context.Context) *harness.Harness {
	GinkgoHelper()
	h, err := harness.New(ctx, harness.WithCluster(e.ClusterName), harness.WithToolchain(e.Toolchain),
		harness.WithProgress(func(msg string) { fmt.Fprintln(GinkgoWriter, msg) }))
	Expect(err).NotTo(HaveOccurred(), "the suite's cluster")
	DeferCleanup(h.Close)
	return h
}

// runner is the spec's runner on the suite's cluster.
func (e *Environment) runner(ctx context.Context) *run.Runner {
	GinkgoHelper()
	return e.harness(ctx).Runner
}

// judge is the judge of the spec's runs on the suite's cluster.
func (e *Environment) judge(ctx context.Context) *verify.Judge {
	GinkgoHelper()
	return e.harness(ctx).Judge
}

// catalogOf asks the suite's cluster, through the harness like every
// command, for the catalog its Karpenter runs with.
func (e *Environment) catalogOf(ctx context.Context) string {
	GinkgoHelper()
	h, err := harness.Attach(ctx, harness.WithCluster(e.ClusterName), harness.WithToolchain(e.Toolchain))
	Expect(err).NotTo(HaveOccurred())
	cat, ok := h.Provider.(cluster.CatalogSource)
	Expect(ok).To(BeTrue(), "the suite's cluster knows its catalog")
	return cat.Catalog()
}

func (e *Environment) fingerprintsDir() string {
	return repo.At(e.Toolchain.Root).Fingerprints()
}

// ExpectMatchesBaseline runs the scenario once and fails with the readable
// diff when it deviates from its committed baseline.
func (e *Environment) ExpectMatchesBaseline(ctx context.Context, s *scenario.Scenario) {
	GinkgoHelper()
	Expect(s).NotTo(BeNil(), "no scenario")
	By(fmt.Sprintf("verifying scenario %s against its baseline", s.Metadata.Name))
	b, err := fingerprint.LoadBaseline(fingerprint.Path(e.fingerprintsDir(), s.Metadata.Name))
	Expect(err).NotTo(HaveOccurred())
	out, err := e.judge(ctx).Entry(ctx, s, b)
	recordScenario(out.Entry)
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("diff", out.Entry.Diff.Text())
	Expect(out.Entry.Status).To(Equal(report.Passed), "verdict %s\n%s%s", out.Entry.Verdict.Summary(), out.Entry.Diff.Text(), acceptHint(b))
}

// acceptHint points at nodeprint accept where a deviation may be the noise
// the baseline already knows it has; only a person can tell.
func acceptHint(b *fingerprint.Baseline) string {
	if b.Note == "" {
		return ""
	}
	return fmt.Sprintf("\nThe baseline is %s. If you trace this run's deviation to that noise, add the run to it:\n"+
		"  bin/nodeprint accept %s/baseline/report.json %s --reason \"...\"  (docs/scenarios.md: Noise a recording missed)\n", b.Note, repo.SuiteReports, b.Scenario)
}

// RecordBaseline re-records the scenario's baseline.
func (e *Environment) RecordBaseline(ctx context.Context, s *scenario.Scenario) {
	GinkgoHelper()
	Expect(s).NotTo(BeNil(), "no scenario")
	By(fmt.Sprintf("recording scenario %s from %d runs", s.Metadata.Name, s.Spec.Baseline.Runs))
	start := time.Now()
	b, err := e.judge(ctx).Record(ctx, repo.Provenance(e.Toolchain), s, s.Spec.Baseline.Runs)
	Expect(err).NotTo(HaveOccurred())
	path := fingerprint.Path(e.fingerprintsDir(), s.Metadata.Name)
	Expect(b.Save(path)).To(Succeed())
	AddReportEntry("recorded", fmt.Sprintf("%s: %d runs in %s, %d selection(s)", path, b.Runs, time.Since(start).Round(time.Second), len(b.Selections)))
}

// ExpectLeverCaught verifies the scenario paired, as verify does with
// another Karpenter build: the reference arm runs the pinned build, the
// candidate arm the pinned build with make sensitivity's lever spec
// (decide:2, …; sized from the scenario's committed baseline), built
// first and interleaved A B B A. It fails unless the verification failed
// on the lever's target by the paired test, with the ratio's interval
// above 1, and every run began on a Karpenter just started: the smoke of
// make sensitivity.
func (e *Environment) ExpectLeverCaught(ctx context.Context, s *scenario.Scenario, spec string) {
	GinkgoHelper()
	b, err := fingerprint.LoadBaseline(fingerprint.Path(e.fingerprintsDir(), s.Metadata.Name))
	Expect(err).NotTo(HaveOccurred())
	cd, err := sensitivity.ParseCondition(spec, b)
	Expect(err).NotTo(HaveOccurred())
	Expect(cd.Target).NotTo(BeEmpty(), "the smoke's lever %s must regress something", spec)
	By(fmt.Sprintf("building Karpenter with lever %s (%s)", cd.Lever.Name(), cd.Name))
	build, err := cd.Lever.Build(ctx, e.Toolchain, filepath.Join(GinkgoT().TempDir(), "levers"), GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	h := e.harness(ctx)
	ref, err := h.BuildRunner(cluster.ToolchainBuild(e.Toolchain))
	Expect(err).NotTo(HaveOccurred())
	cand, err := h.BuildRunner(build)
	Expect(err).NotTo(HaveOccurred())
	var runs []*run.Result
	j := verify.New(cand, verify.WithPairedArms(recordingArm{ref, &runs}, recordingArm{cand, &runs}), verify.WithProgress(func(l string) { GinkgoWriter.Println(l) }))
	By(fmt.Sprintf("verifying scenario %s paired: the pinned build against lever %s", s.Metadata.Name, cd.Lever.Name()))
	out, err := j.Entry(ctx, s, b)
	Expect(err).NotTo(HaveOccurred())
	d := out.Entry.Diff
	AddReportEntry("diff", d.Text())
	Expect(out.Entry.Status).To(Equal(report.Failed), "lever %s must fail verification:\n%s", cd.Name, d.Text())
	Expect(d.Timing).NotTo(BeNil(), "a paired verification says how it judged the timings")
	Expect(d.Timing.Method).To(Equal(diff.Paired), d.Text())
	Expect(d.Timing.Decided(paired.Regressed)).To(ContainElement(cd.Target), "the lever's target must be the regression:\n%s", d.Text())
	for _, m := range d.Timing.Metrics {
		if m.Path == cd.Target {
			Expect(m.Lo).To(BeNumerically(">", 1), "the ratio's interval lies above 1: %s", m)
		}
	}
	Expect(out.Entry.Runs).To(HaveLen(2*d.Timing.Pairs), "every pair is one reference and one candidate run")
	ExpectEveryRunOnAFreshKarpenter(runs)
}

// recordingArm is a paired verification's arm that keeps every run's
// result, both arms' in the order they ran.
type recordingArm struct {
	verify.Arm
	runs *[]*run.Result
}

func (a recordingArm) Run(ctx context.Context, s *scenario.Scenario, opts ...run.FaultOption) (*run.Result, error) {
	r, err := a.Arm.Run(ctx, s, opts...)
	if r != nil {
		*a.runs = append(*a.runs, r)
	}
	return r, err
}

// ExpectEveryRunOnAFreshKarpenter fails unless every run after the first
// began on a Karpenter started after the run before it had applied its
// objects: its uptime when its usage window opened is under half the time
// between the two runs' applies (a Karpenter kept from the run before
// has run at least about that whole time).
func ExpectEveryRunOnAFreshKarpenter(runs []*run.Result) {
	GinkgoHelper()
	Expect(len(runs)).To(BeNumerically(">=", 2), "a paired verification runs both arms")
	for i := 1; i < len(runs); i++ {
		k := runs[i].Fingerprint.Karpenter
		Expect(k).NotTo(BeNil(), "run %s recorded no Karpenter usage", runs[i].ID)
		gap := runs[i].Applied.Sub(runs[i-1].Applied).Seconds()
		Expect(k.UptimeSeconds).To(And(BeNumerically(">", 0), BeNumerically("<", gap/2)),
			"run %s began on a Karpenter that had run %.1f s, and the run before it applied %.1f s earlier: it was not started afresh", runs[i].ID, k.UptimeSeconds, gap)
	}
}

// LoadScenario loads fixtures/scenarios/<name>.yaml.
func LoadScenario(name string) (*scenario.Scenario, error) {
	tc, err := toolchain.Find()
	if err != nil {
		return nil, err
	}
	ss, err := repo.Loader(tc).LoadFiles(repo.At(tc.Root).Scenario(name))
	if err != nil {
		return nil, err
	}
	return ss[0], nil
}
