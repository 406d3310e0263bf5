package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// Job is what one invocation runs, checked before any cluster is touched:
// its scenarios (loaded, preflighted, sharded), the baselines they are
// compared with, the toolchain with the Karpenter under test, and the
// cluster they run on. The CLI builds it from its flags, a suite from its
// scenario directory; both then build the harness from it (Harness) and
// run the scenarios in phases (Run). Bad input is a *UsageError, and
// nothing was started.
type Job struct {
	// Scenarios are the job's scenarios, in the order given.
	Scenarios []*scenario.Scenario
	// Baselines are the committed baselines of the scenarios WithBaselines
	// asked for, by scenario name.
	Baselines map[string]*fingerprint.Baseline
	// Toolchain is the toolchain the scenarios run with: the pinned one,
	// or its Karpenter replaced (WithKarpenterVersion, WithKarpenterBinary).
	Toolchain *toolchain.Toolchain
	// BaselineDir holds the job's baselines: WithBaselines' directory, else
	// the layout's fingerprints.
	BaselineDir string
	// Pinned is the pinned Karpenter release, whatever runs.
	Pinned string
	// Reference is the pinned toolchain when the job replaced its
	// Karpenter (WithKarpenterVersion, WithKarpenterBinary): the reference
	// arm of paired verification runs its build; nil otherwise.
	Reference *toolchain.Toolchain
	// Layout is the repository the job's names and baselines resolve in.
	Layout repo.Layout
	o      options
}

// WithShard runs the I-th of N slices of the scenarios ("I/N", 1-based;
// every N-th by name; default all).
func WithShard(s string) Option { return func(o *options) { o.shard = s } }

// WithParallel runs up to n scenarios at once (default 1; 1..32).
func WithParallel(n int) Option { return func(o *options) { o.parallel = n } }

// WithLayout resolves scenario names and the default baseline directory
// in l (default: repo.Default, the team repository at or above the working
// directory, else nodeprint's checkout).
func WithLayout(l repo.Layout) Option { return func(o *options) { o.layout = &l } }

// WithBaselines loads, from dir (default: the layout's fingerprints), the
// committed baseline of every scenario need says is compared with one.
func WithBaselines(dir string, need func(*scenario.Scenario) bool) Option {
	return func(o *options) { o.baselineDir, o.needBaseline = dir, need }
}

// WithRepeat verifies each plain scenario with that many runs
// (verify.RepeatAuto: one, and as many more as the test needs). The job
// then refuses a scenario whose test could not reach significance with
// them (verify.CheckDecidable), and the judge runs them. Default: the
// judge's, RepeatAuto, with no check (a job that records).
func WithRepeat(n verify.Repeat) Option {
	return func(o *options) {
		o.repeat = &n
		o.judgeOpts = append(o.judgeOpts, verify.WithRepeat(n))
	}
}

// WithMaxPairs caps a paired verification (verify.WithMaxPairs; default
// verify.DefaultMaxPairs). The job refuses a scenario with which that
// cap could never declare a regression (verify.CheckPairable).
func WithMaxPairs(n int) Option {
	return func(o *options) {
		o.maxPairs = n
		o.judgeOpts = append(o.judgeOpts, verify.WithMaxPairs(n))
	}
}

// WithKarpenterVersion runs the scenarios with that Karpenter release
// (vX.Y.Z) instead of the pinned one, on a temporary cluster of an owned
// provider: the upgrade check (default: the pinned release).
func WithKarpenterVersion(v string) Option { return func(o *options) { o.karpenterVersion = v } }

// WithKarpenterBinary runs the scenarios with that build of the pinned
// release instead of the project's own (default: the project's).
func WithKarpenterBinary(path string) Option { return func(o *options) { o.karpenterBinary = path } }

// NewJob resolves args (scenario names, files or directories of *.yaml)
// and checks everything the job needs before a cluster is touched.
func NewJob(ctx context.Context, args []string, opts ...Option) (*Job, error) {
	j := &Job{o: options{kind: cluster.KindLocal, parallel: 1}}
	for _, opt := range opts {
		opt(&j.o)
	}
	if err := j.resolveToolchain(); err != nil {
		return nil, err
	}
	files, err := j.files(args)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	if j.Scenarios, err = repo.Loader(j.Toolchain).LoadFiles(files...); err != nil {
		return nil, &UsageError{Err: err}
	}
	for _, step := range []func(context.Context) error{j.checkFlags, j.shard, j.checkScenarios} {
		if err := step(ctx); err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) {
				err = &UsageError{Err: err}
			}
			return nil, err
		}
	}
	return j, nil
}

// resolveToolchain finds the toolchain and the layout.
func (j *Job) resolveToolchain() error {
	tc := j.o.toolchain
	if tc == nil {
		var err error
		if tc, err = toolchain.Find(); err != nil {
			return err
		}
	}
	j.Toolchain, j.Pinned = tc, tc.Versions.Karpenter
	j.Layout = repo.Default(tc)
	if j.o.layout != nil {
		j.Layout = *j.o.layout
	}
	return nil
}

// files turns names into the layout's scenario files and directories into
// their *.yaml files; files pass through.
func (j *Job) files(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if !strings.ContainsAny(a, "/.") {
			out = append(out, j.Layout.Scenario(a))
			continue
		}
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a)
			continue
		}
		yamls, err := yamlFiles(a)
		if err != nil {
			return nil, err
		}
		out = append(out, yamls...)
	}
	return out, nil
}

func yamlFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no *.yaml scenario files", dir)
	}
	return out, nil
}

// shard keeps the job's slice of the scenarios.
func (j *Job) shard(context.Context) error {
	if j.o.shard == "" {
		return nil
	}
	i, n, err := ParseShard(j.o.shard)
	if err != nil {
		return err
	}
	j.Scenarios = Shard(j.Scenarios, i, n)
	return nil
}

// checkFlags refuses option combinations that mean nothing and puts the
// Karpenter under test in the toolchain.
func (j *Job) checkFlags(context.Context) error {
	o := &j.o
	if o.parallel < 1 || o.parallel > 32 {
		return fmt.Errorf("--parallel %d is out of range 1..32", o.parallel)
	}
	switch o.kind {
	case cluster.KindLocal, cluster.KindKind:
		if o.kubeconfig != "" || o.catalog != "" {
			return fmt.Errorf("--kubeconfig and --catalog are for --provider existing; the %s provider writes its own kubeconfig and switches catalogs itself", o.kind)
		}
	case cluster.KindExisting:
		if o.reuse != "" {
			return errors.New("--cluster names a local cluster; with --provider existing give --kubeconfig")
		}
		if o.catalog == "" {
			o.catalog = j.Toolchain.Paths().InstanceTypes
		} else if _, err := os.Stat(o.catalog); err != nil {
			return fmt.Errorf("--catalog: %w", err)
		}
	default:
		return fmt.Errorf("unknown cluster provider %q: want local, kind or existing", o.kind)
	}
	// A running kind cluster is checked as it was started: with Karpenter
	// in it, its faults are refused before anything is applied.
	if o.kind == cluster.KindKind && o.reuse != "" && cluster.RunsKarpenterInCluster(j.Toolchain, o.reuse) {
		o.inCluster = true
	}
	if o.inCluster && o.kind != cluster.KindKind {
		return fmt.Errorf("--karpenter-in-cluster needs --provider kind: only a kind cluster runs Karpenter from its chart (the %s provider runs it as a process)", o.kind)
	}
	if o.inCluster && o.karpenterBinary != "" {
		return errors.New("--karpenter-binary with --karpenter-in-cluster: the in-cluster image is built from the release's sources (make karpenter-image); run your binary as a process: leave out --karpenter-in-cluster")
	}
	return j.karpenterUnderTest()
}

var releaseRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// karpenterUnderTest replaces the toolchain's Karpenter with the release
// or binary the job tests.
func (j *Job) karpenterUnderTest() error {
	o := j.o
	if o.karpenterVersion == "" && o.karpenterBinary == "" {
		return nil
	}
	flag := "--karpenter-version"
	if o.karpenterBinary != "" {
		flag = "--karpenter-binary"
	}
	if o.karpenterVersion != "" && o.karpenterBinary != "" {
		return fmt.Errorf("--karpenter-binary and --karpenter-version: give one (a binary is a build of the pinned %s)", j.Pinned)
	}
	if o.reuse != "" || !o.kind.Owned() {
		return fmt.Errorf("%s runs a temporary local cluster with that Karpenter; leave out --cluster and --provider existing", flag)
	}
	up := *j.Toolchain
	j.Reference = j.Toolchain
	if o.karpenterVersion != "" {
		if !releaseRE.MatchString(o.karpenterVersion) {
			return fmt.Errorf("--karpenter-version %q: want a release tag vX.Y.Z (e.g. v1.15.0)", o.karpenterVersion)
		}
		up.Versions.Karpenter = o.karpenterVersion
	} else {
		path, err := executable(o.karpenterBinary)
		if err != nil {
			return err
		}
		up.KarpenterBinary = path
	}
	j.Toolchain = &up
	return nil
}

// executable is the absolute path of a Karpenter binary, checked.
func executable(p string) (string, error) {
	path, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--karpenter-binary: %w", err)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("--karpenter-binary: %w (build one with `make mutants` or from the pinned module's kwok/ main)", err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("--karpenter-binary %s: not an executable file", path)
	}
	if err := cluster.CheckKarpenterBinary(path); err != nil {
		return "", fmt.Errorf("--karpenter-binary: %w", err)
	}
	return path, nil
}

// checkScenarios preflights every scenario, loads the baselines it is
// compared with, and refuses what the provider cannot run.
func (j *Job) checkScenarios(ctx context.Context) error {
	dir := j.o.baselineDir
	if dir == "" {
		dir = j.Layout.Fingerprints()
	}
	j.BaselineDir = dir
	j.Baselines = map[string]*fingerprint.Baseline{}
	for _, s := range j.Scenarios {
		if err := verify.Preflight(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s.Path, err)
		}
		if j.o.needBaseline != nil && j.o.needBaseline(s) {
			b, err := fingerprint.LoadBaseline(fingerprint.Path(dir, s.Metadata.Name))
			if err != nil {
				return fmt.Errorf("%s is compared with its baseline: %w", s.Path, err)
			}
			j.Baselines[s.Metadata.Name] = b
			if j.o.repeat != nil && s.Spec.Fault == nil {
				if err := verify.CheckDecidable(s, b, fingerprint.Path(dir, s.Metadata.Name), *j.o.repeat); err != nil {
					return err
				}
			}
			if j.Reference != nil && s.Spec.Fault == nil {
				if err := verify.CheckPairable(s, j.o.maxPairs); err != nil {
					return err
				}
			}
		}
		if !j.o.kind.Owned() {
			if err := CheckExisting(s, j.o.catalog); err != nil {
				return &UsageError{Err: err}
			}
		}
		if err := CheckPodMetrics(s, j.o.kind); err != nil {
			return &UsageError{Err: err}
		}
		if err := CheckKarpenterPlacement(s, j.o.inCluster); err != nil {
			return &UsageError{Err: err}
		}
	}
	return nil
}

// Harness builds the job's harness: the cluster of the job's provider with
// its toolchain, and opts after the job's own.
func (j *Job) Harness(ctx context.Context, opts ...Option) (*Harness, error) {
	o := j.o
	o.toolchain, o.reference = j.Toolchain, j.Reference
	return newHarness(ctx, o, opts)
}

// Run runs fn for each of the job's scenarios in phases (Phases), up to
// the job's parallelism at once, and returns every error.
//
// A job with a reference build runs one scenario at a time: paired
// verification switches Karpenter's binary between runs, and a run
// beside it would meet both builds.
func (j *Job) Run(ctx context.Context, fn func(context.Context, *scenario.Scenario) error) []error {
	parallel := j.o.parallel
	if j.Reference != nil {
		parallel = 1
	}
	return RunPhases(ctx, Phases(j.Scenarios), parallel, fn)
}
