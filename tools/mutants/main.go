// Command mutants is nodeprint testing itself (make mutants): it builds
// each mutated Karpenter of a mutant set (fixtures/mutants/mutants.yaml)
// from the pinned module, runs the set's scenarios with it through
// `nodeprint run --karpenter-binary`, runs them once more with the
// unmutated build (the control), and prints the matrix: every affected
// scenario must fail and be attributed to L2, the control must pass
// everything. Exit 0 when the matrix is as the set expects, 1 when not,
// 2 for bad input, 3 when a build or a run could not be completed.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodeprint/nodeprint/pkg/mutants"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

const (
	exitOK = iota
	exitMismatch
	exitUsage
	exitEnvironment
)

type config struct {
	set       string
	only      []string
	scenarios []string
	control   bool
	affected  bool
	keep      bool
	buildOnly bool
	out       string
	timeout   time.Duration
	maxPairs  int
}

func main() {
	var c config
	var only, scenarios string
	flag.StringVar(&c.set, "set", "", "mutant set file (default: <repository>/fixtures/mutants/mutants.yaml)")
	flag.StringVar(&only, "mutants", "", "comma-separated mutants to run (default: all of the set)")
	flag.StringVar(&scenarios, "scenarios", "", "comma-separated scenarios to run, a subset of the set's (default: all of them)")
	flag.BoolVar(&c.control, "control", true, "also run the unmutated build, which must pass every scenario")
	flag.BoolVar(&c.affected, "affected-only", false, "run each mutant only on the scenarios the set says it changes (plain ones not under unaffected, faults under breaks); the others read \"not run\" and are listed under the matrix. An unaffected scenario under another Karpenter build runs its paired timing test to the cap of pairs (16 pairs, 32 runs), which a scale-in scenario takes hours for")
	flag.BoolVar(&c.buildOnly, "build-only", false, "build the mutants (their patches must apply and compile against the pinned module) and run nothing")
	flag.BoolVar(&c.keep, "keep", false, "keep the rows of -out's matrix.json for the builds not run this time (re-run one mutant of a finished matrix)")
	flag.StringVar(&c.out, "out", repo.Out("mutants"), "directory for each build's report and log, matrix.md and matrix.json")
	flag.DurationVar(&c.timeout, "timeout", 0, "bound of one build's run of the scenarios (default: an hour per scenario it runs: a timing-only mutant pairs each affected scale-in scenario for 11 to 16 pairs of minutes each)")
	flag.IntVar(&c.maxPairs, "max-pairs", verify.DefaultMaxPairs, "the most reference/candidate pairs a mutant's paired timing test may run on a scenario (nodeprint run --max-pairs); the default is run's")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "mutants: unexpected arguments %v (see -h)\n", flag.Args())
		os.Exit(exitUsage)
	}
	if c.timeout < 0 {
		fmt.Fprintf(os.Stderr, "mutants: -timeout %s: want a positive duration, or 0 for an hour per scenario\n", c.timeout)
		os.Exit(exitUsage)
	}
	c.only, c.scenarios = split(only), split(scenarios)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, c, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func run(ctx context.Context, c config, stdout, stderr io.Writer) int {
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "[%6.0fs] "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	}
	tc, set, selected, err := load(c)
	if err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return exitUsage
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return exitEnvironment
	}
	if c.buildOnly {
		return buildAll(ctx, tc, set, selected, c.out, logf)
	}
	m := &mutants.Matrix{Karpenter: set.Karpenter}
	for _, sc := range set.Scenarios {
		m.Scenarios = append(m.Scenarios, mutants.ScenarioName(sc))
	}
	c.affected = c.affected || set.AffectedOnly
	var broken []string
	builds := append([]*mutants.Mutant{}, pointers(selected)...)
	if c.control {
		builds = append([]*mutants.Mutant{nil}, builds...)
	}
	for i, mu := range builds {
		name := mutants.Control
		if mu != nil {
			name = mu.Name
		}
		logf("build %d of %d: %s", i+1, len(builds), name)
		rep, err := runBuild(ctx, tc, set, mu, set.Runs(mu, c.affected), filepath.Join(c.out, name), c, logf)
		if err != nil {
			logf("%s: %v", name, err)
			broken = append(broken, name)
		}
		row := set.Evaluate(mu, rep, c.affected)
		m.Rows = append(m.Rows, row)
		logf("%s: %s", name, rowSummary(row))
		if ctx.Err() != nil {
			break
		}
	}
	if c.keep {
		if err := keepRows(c.out, set, m); err != nil {
			fmt.Fprintln(stderr, "mutants: -keep:", err)
			return exitUsage
		}
	}
	if err := write(c.out, m); err != nil {
		fmt.Fprintln(stderr, "mutants:", err)
		return exitEnvironment
	}
	fmt.Fprint(stdout, m.Markdown())
	logf("matrix written to %s (matrix.md, matrix.json)", c.out)
	switch {
	case ctx.Err() != nil || len(broken) > 0:
		fmt.Fprintf(stderr, "mutants: %d build(s) did not complete: %s\n", len(broken), strings.Join(broken, ", "))
		return exitEnvironment
	case !m.OK():
		return exitMismatch
	}
	return exitOK
}

func pointers(ms []mutants.Mutant) []*mutants.Mutant {
	out := make([]*mutants.Mutant, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}

// load reads the set and narrows it to the chosen mutants and scenarios;
// a set for another Karpenter than the pinned one is refused (its patches
// are against another module).
func load(c config) (*toolchain.Toolchain, *mutants.Set, []mutants.Mutant, error) {
	if err := verify.CheckMaxPairs("-max-pairs", c.maxPairs); err != nil {
		return nil, nil, nil, err
	}
	tc, err := toolchain.Find()
	if err != nil {
		return nil, nil, nil, err
	}
	if c.set == "" {
		c.set = repo.At(tc.Root).MutantSet()
	}
	set, err := mutants.Load(c.set)
	if err != nil {
		return nil, nil, nil, err
	}
	if set.Karpenter != tc.Versions.Karpenter {
		return nil, nil, nil, fmt.Errorf("%s: karpenter: the patches are for %s, the toolchain pins %s (tools/toolchain/versions.mk): port the patches, or set KARPENTER_VERSION=%s",
			c.set, set.Karpenter, tc.Versions.Karpenter, set.Karpenter)
	}
	selected, err := set.Select(c.only)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(c.scenarios) > 0 {
		if err := set.Narrow(c.scenarios); err != nil {
			return nil, nil, nil, err
		}
	}
	return tc, set, selected, nil
}

// runBuild builds the mutant (nil: the control needs no build) and runs
// the set's scenarios with it; the report is nil when none was written.
func runBuild(ctx context.Context, tc *toolchain.Toolchain, set *mutants.Set, mu *mutants.Mutant, scenarios []string, dir string, c config,
	logf func(string, ...any)) (*report.Report, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := []string{"run", "--report-dir", dir}
	if mu != nil {
		logf("building %s (log: %s)", mu.Name, log.Name())
		if err := build(ctx, tc, set, *mu, log); err != nil {
			return nil, err
		}
		args = append(args, "--karpenter-binary", tc.MutantBinary(mu.Name), "--max-pairs", strconv.Itoa(c.maxPairs))
	}
	if len(scenarios) == 0 {
		logf("no scenario to run: the set says the build changes none of them")
		return &report.Report{}, nil
	}
	for _, sc := range scenarios {
		args = append(args, repo.At(tc.Root).Scenario(sc))
	}
	timeout := cmp.Or(c.timeout, time.Duration(len(scenarios))*time.Hour)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logf("running %d scenario(s) (log: %s)", len(scenarios), log.Name())
	cmd := interruptible(rctx, filepath.Join(tc.Bin, "nodeprint"), args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = tc.Root, log, log
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == exitMismatch:
		err = nil // a regression or a wrong attribution: what the matrix reads
	case errors.As(err, &ee) && ee.ExitCode() == exitUsage:
		return nil, fmt.Errorf("nodeprint refused the run (exit 2): see %s", log.Name())
	case rctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("the run did not finish within %s (-timeout): see %s", timeout, log.Name())
	case err != nil:
		err = fmt.Errorf("the run failed (%v): see %s", err, log.Name())
	}
	rep, rerr := readReport(filepath.Join(dir, "report.json"))
	return rep, errors.Join(err, rerr)
}

// buildAll builds every selected mutant, each with its log in out.
func buildAll(ctx context.Context, tc *toolchain.Toolchain, set *mutants.Set, selected []mutants.Mutant, out string, logf func(string, ...any)) int {
	var failed []string
	for _, mu := range selected {
		path := filepath.Join(out, mu.Name+".build.log")
		log, err := os.Create(path)
		if err != nil {
			logf("%v", err)
			return exitEnvironment
		}
		err = build(ctx, tc, set, mu, log)
		log.Close()
		if err != nil {
			logf("%s: %v (%s)", mu.Name, err, path)
			failed = append(failed, mu.Name)
			continue
		}
		logf("%s: built %s", mu.Name, tc.MutantBinary(mu.Name))
	}
	if len(failed) > 0 {
		logf("%d of %d mutant(s) did not build: %s", len(failed), len(selected), strings.Join(failed, ", "))
		return exitMismatch
	}
	return exitOK
}

// build runs the project's toolchain build for one mutant.
func build(ctx context.Context, tc *toolchain.Toolchain, set *mutants.Set, mu mutants.Mutant, log io.Writer) error {
	if err := tc.BuildMutant(ctx, log, mu.Name, set.PatchPath(mu)); err != nil {
		return fmt.Errorf("failed to build mutant %s (%v): see the log", mu.Name, err)
	}
	return nil
}

// interruptible stops nodeprint with SIGINT, so that it tears its cluster
// down, and kills it only if it has not finished five minutes later.
func interruptible(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Minute
	return cmd
}

func readReport(path string) (*report.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no report: %w", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	return &r, nil
}

func rowSummary(r mutants.Row) string {
	counts := map[mutants.Outcome]int{}
	for _, c := range r.Cells {
		counts[c.Outcome]++
	}
	var parts []string
	for _, o := range []mutants.Outcome{mutants.Detected, mutants.Unaffected, mutants.Held, mutants.NotRun, mutants.Missed, mutants.Misattributed, mutants.Unexpected, mutants.Errored} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	status := "as expected"
	if !r.OK() {
		status = "NOT as expected"
	}
	return status + " (" + strings.Join(parts, ", ") + ")"
}

// keepRows adds the rows of the matrix already in dir for the builds m
// does not have, in the set's order (control first); a matrix of other
// scenarios cannot be merged.
func keepRows(dir string, set *mutants.Set, m *mutants.Matrix) error {
	b, err := os.ReadFile(filepath.Join(dir, "matrix.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var old mutants.Matrix
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("failed to read %s: %w", filepath.Join(dir, "matrix.json"), err)
	}
	if strings.Join(old.Scenarios, ",") != strings.Join(m.Scenarios, ",") || old.Karpenter != m.Karpenter {
		return fmt.Errorf("%s has other scenarios or another Karpenter than this run: leave out -keep", filepath.Join(dir, "matrix.json"))
	}
	rows := map[string]mutants.Row{}
	for _, r := range old.Rows {
		rows[r.Mutant] = r
	}
	for _, r := range m.Rows {
		rows[r.Mutant] = r
	}
	order := []string{mutants.Control}
	for _, mu := range set.Mutants {
		order = append(order, mu.Name)
	}
	m.Rows = nil
	for _, name := range order {
		if r, ok := rows[name]; ok {
			m.Rows = append(m.Rows, r)
		}
	}
	return nil
}

func write(dir string, m *mutants.Matrix) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "matrix.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "matrix.md"), []byte(m.Markdown()), 0o644)
}
