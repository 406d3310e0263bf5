// Command sensitivity is `make sensitivity`: how large a regression
// verify catches, and how often it cries wolf.
//
// -method paired (the default) measures paired verification, what verify
// does against another Karpenter build: per scenario and condition it
// builds the pinned Karpenter with fixtures/sensitivity/levers.patch
// filled in (launches or decisions slower by a known delay, CPU or memory
// multiplied, or nothing: the A/A arm), runs a pool of blocks pinned
// build against it on one local cluster in verify's order (one core kept
// busy for a loaded A/A), and replays paired verifications from each
// pool: power, pairs used and wall time, and for an A/A pool its
// independent verifications and its lean (its own test of whether the
// arms are exchangeable; the pools of one A/A condition also joined). It writes
// out/sensitivity/pools.json (-analyze re-reads it without a cluster),
// paired.md and paired.json.
//
// -method recorded measures the fallback verification against a
// baseline's recorded runs (when no reference can run): each scenario
// many times unchanged, then under KWOK stage and launch slowdowns, and
// the shipping test applied to resamples (runs.json, table.md,
// table.json).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/permtest"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sensitivity"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

type config struct {
	out       string
	scenarios []string
	pool      int
	slowed    int
	factors   []float64
	targets   []sensitivity.Target
	recorded  int
	trials    int
	analyze   bool
	// paired: -method paired's settings.
	paired     bool
	pairs      int
	maxPairs   int
	conditions []string
	pilot      int
	injections []sensitivity.Injection
}

func main() { os.Exit(mainErr()) }

func mainErr() int {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	run := measure
	if c.paired {
		run = measurePaired
	}
	if err := setUp(ctx, c, run); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	return 0
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("sensitivity", flag.ContinueOnError)
	c := config{}
	names := fs.String("scenarios", "web-service,cpu-heavy", "the scenarios measured, by name (fixtures/scenarios/<name>.yaml)")
	fs.StringVar(&c.out, "out", repo.Out("sensitivity"), "directory for runs.json, table.md and table.json")
	fs.IntVar(&c.pool, "pool", 30, "unchanged runs per scenario (baselines and null verifications are drawn from them)")
	fs.IntVar(&c.slowed, "runs", 10, "runs per slowdown")
	factors := fs.String("factors", "1.25,1.5,2", "slowdown factors of the target's median")
	targets := fs.String("targets", "podReady,nodeClaimReady,nodeReady", "what is slowed: podReady (KWOK's pod-ready stage delayed), nodeClaimReady (Karpenter's launches delayed), nodeReady (NodeClaim-ready through KWOK's node-initialize stage delayed)")
	fs.IntVar(&c.recorded, "recorded", 10, "runs a resampled baseline holds (the committed baselines have 10)")
	fs.IntVar(&c.trials, "trials", 500, "resamples per cell")
	fs.BoolVar(&c.analyze, "analyze", false, "re-analyse the pools of -out/pools.json (-method recorded: runs.json); start no cluster")
	method := fs.String("method", "paired", "paired (verification against another build, run interleaved) or recorded (against a baseline's recorded runs)")
	fs.IntVar(&c.pairs, "pairs", 20, "-method paired: blocks per pool (scenario and condition)")
	fs.IntVar(&c.maxPairs, "max-pairs", verify.DefaultMaxPairs, "-method paired: the cap of each replayed verification, as verify --max-pairs")
	fs.IntVar(&c.pilot, "pilot", 3, "-method paired: reference runs on this machine that size the levers' delays and memory before they are built (0: size them from the committed baseline)")
	conds := fs.String("conditions", strings.Join(sensitivity.DefaultConditions, ","), "-method paired: unchanged, loaded (A/A with one core busy), and launch, decide, cpu or memory with a factor (launch:1.25)")
	inject := fs.String("inject", "decide:1.25,launch:1.25", "-method paired: regressions put into every A/A pool's candidate arm after the fact, each replayed as a condition of its own (STAGE:FACTOR; decide or launch; \"\" for none): the test's power at exactly that factor on the pool's own noise")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.scenarios = strings.Split(*names, ",")
	for _, f := range strings.Split(*factors, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 1 || v > 10 {
			return c, fmt.Errorf("-factors: %q is not a factor above 1 and at most 10", f)
		}
		c.factors = append(c.factors, v)
	}
	for _, t := range strings.Split(*targets, ",") {
		tg := sensitivity.Target(strings.TrimSpace(t))
		if !slices.Contains(sensitivity.Targets, tg) {
			return c, fmt.Errorf("-targets: %q: want %v", t, sensitivity.Targets)
		}
		c.targets = append(c.targets, tg)
	}
	if c.pool < c.recorded+5 || c.slowed < 5 || c.recorded < 2 || c.trials < 1 {
		return c, fmt.Errorf("-pool %d, -runs %d, -recorded %d, -trials %d: want a pool of at least -recorded+5, at least 5 runs per slowdown and 2 recorded runs",
			c.pool, c.slowed, c.recorded, c.trials)
	}
	switch *method {
	case "paired":
		c.paired = true
		c.conditions = strings.Split(*conds, ",")
		for _, spec := range c.conditions {
			if err := sensitivity.CheckCondition(spec); err != nil {
				return c, fmt.Errorf("-conditions: %w", err)
			}
		}
		var err error
		if c.injections, err = sensitivity.ParseInjections(*inject); err != nil {
			return c, fmt.Errorf("-inject: %w", err)
		}
		if c.pilot < 0 || c.pilot == 1 {
			return c, fmt.Errorf("-pilot %d: want 0 (size from the baseline) or at least 2 runs", c.pilot)
		}
		if c.pairs < 8 || verify.CheckMaxPairs("-max-pairs", c.maxPairs) != nil {
			return c, fmt.Errorf("-pairs %d, -max-pairs %d: want at least 8 blocks per pool and a cap of 1 to %d", c.pairs, c.maxPairs, verify.MaxPairsLimit)
		}
		return c, nil
	case "recorded":
	default:
		return c, fmt.Errorf("-method %q: want paired or recorded", *method)
	}
	return c, nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[sensitivity %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// setUp finds the toolchain and loads the scenarios, then runs measure.
func setUp(ctx context.Context, c config, measure func(context.Context, config, *toolchain.Toolchain, map[string]*scenario.Scenario) error) error {
	tc, err := toolchain.Find()
	if err != nil {
		return err
	}
	ss, err := load(tc, c.scenarios)
	if err != nil {
		return err
	}
	return measure(ctx, c, tc, ss)
}

// measure is -method recorded.
func measure(ctx context.Context, c config, tc *toolchain.Toolchain, ss map[string]*scenario.Scenario) error {
	path := filepath.Join(c.out, "runs.json")
	var all []sensitivity.Runs
	var err error
	if c.analyze {
		if all, err = readJSON[[]sensitivity.Runs](path); err != nil {
			return err
		}
	} else if all, err = measureRuns(ctx, tc, c, ss, path); err != nil {
		return err
	}
	return analyse(c, ss, all)
}

func load(tc *toolchain.Toolchain, names []string) (map[string]*scenario.Scenario, error) {
	var files []string
	for _, n := range names {
		files = append(files, repo.At(tc.Root).Scenario(strings.TrimSpace(n)))
	}
	ss, err := repo.Loader(tc).LoadFiles(files...)
	if err != nil {
		return nil, err
	}
	out := map[string]*scenario.Scenario{}
	for _, s := range ss {
		if s.Spec.Fault != nil {
			return nil, fmt.Errorf("%s is a fault scenario: sensitivity measures plain scenarios", s.Path)
		}
		out[s.Metadata.Name] = s
	}
	return out, nil
}

// measureRuns runs every scenario on one temporary cluster, writing the
// runs to path after each scenario.
func measureRuns(ctx context.Context, tc *toolchain.Toolchain, c config, ss map[string]*scenario.Scenario, path string) (all []sensitivity.Runs, err error) {
	h, err := newHarness(ctx, tc)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.Close(context.WithoutCancel(ctx))) }()
	cl, err := kube.NewClient(h.Kubeconfig())
	if err != nil {
		return nil, err
	}
	for _, name := range c.scenarios {
		s := ss[strings.TrimSpace(name)]
		r := sensitivity.Runs{Scenario: s.Metadata.Name}
		if r.Pool, err = repeat(ctx, h.Runner, s, c.pool, "unchanged"); err != nil {
			return nil, err
		}
		for _, t := range c.targets {
			for _, f := range c.factors {
				sd := sensitivity.For(t, f, medianOf(r.Pool, func(fp *fingerprint.Fingerprint) float64 { return t.Metric(fp.Timing) }))
				restore, err := sensitivity.Apply(ctx, cl, sd)
				if err != nil {
					return nil, err
				}
				runs, err := repeat(ctx, h.Runner, s, c.slowed, fmt.Sprintf("%s (+%s)", sd.Name(), sd.Delay))
				if rerr := restore(context.WithoutCancel(ctx)); err == nil {
					err = rerr
				}
				if err != nil {
					return nil, err
				}
				r.Slowed = append(r.Slowed, sensitivity.SlowedRuns{Slowdown: sd, Runs: runs})
			}
		}
		all = append(all, r)
		if err := writeJSON(path, all); err != nil {
			return nil, err
		}
	}
	return all, nil
}

func repeat(ctx context.Context, r *run.Runner, s *scenario.Scenario, n int, what string) ([]*fingerprint.Fingerprint, error) {
	var out []*fingerprint.Fingerprint
	for i := range n {
		res, err := r.Run(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("%s, %s, run %d: %w", s.Metadata.Name, what, i+1, err)
		}
		t := res.Fingerprint.Timing
		logf("%s %s %d/%d: pod-ready p50 %.3fs, NodeClaim-ready p50 %.3fs", s.Metadata.Name, what, i+1, n, t.PodReady.P50, t.NodeClaimReady.P50)
		out = append(out, res.Fingerprint)
	}
	return out, nil
}

func medianOf(fps []*fingerprint.Fingerprint, of func(*fingerprint.Fingerprint) float64) float64 {
	var xs []float64
	for _, f := range fps {
		xs = append(xs, of(f))
	}
	return permtest.Median(xs)
}

func analyse(c config, ss map[string]*scenario.Scenario, all []sensitivity.Runs) error {
	var cells []sensitivity.Cell
	for _, r := range all {
		s, ok := ss[r.Scenario]
		if !ok {
			continue
		}
		cs, err := sensitivity.Analyze(r, sensitivity.Options{Recorded: c.recorded, Trials: c.trials, Rules: diff.RulesFor(s)})
		if err != nil {
			return err
		}
		cells = append(cells, cs...)
	}
	return writeTable(filepath.Join(c.out, "table"), sensitivity.Table(cells, c.recorded, c.trials), cells)
}

// newHarness brings up the temporary cluster every pool or run goes on.
func newHarness(ctx context.Context, tc *toolchain.Toolchain) (*harness.Harness, error) {
	return harness.New(ctx, harness.WithName(fmt.Sprintf("sensitivity-%d", os.Getpid())), harness.WithToolchain(tc),
		harness.WithProgress(func(string) {}))
}

// writeTable prints the Markdown table and writes it to base.md, its
// cells to base.json.
func writeTable(base, table string, cells any) error {
	fmt.Print(table)
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(base+".md", []byte(table), 0o644); err != nil {
		return err
	}
	return writeJSON(base+".json", cells)
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// readJSON reads what a measurement wrote to path, for -analyze.
func readJSON[T any](path string) (T, error) {
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		return v, fmt.Errorf("-analyze: %w (run make sensitivity first)", err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("-analyze: %s: %w", path, err)
	}
	return v, nil
}
