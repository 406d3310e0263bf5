package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sensitivity"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// experiment is one scenario's conditions, their builds resolved.
type experiment struct {
	s          *scenario.Scenario
	conditions []sensitivity.Condition
}

// measurePaired is make sensitivity's default: per scenario and
// condition, a pool of blocks pinned build against the condition's lever
// build, then verifications replayed from each pool.
func measurePaired(ctx context.Context, c config, tc *toolchain.Toolchain, ss map[string]*scenario.Scenario) error {
	path := filepath.Join(c.out, "pools.json")
	if c.analyze {
		pools, err := readJSON[[]sensitivity.Pool](path)
		if err != nil {
			return err
		}
		return analysePaired(c, ss, pools)
	}
	exps, err := plan(tc, c, ss)
	if err != nil {
		return err
	}
	if exps, err = pilot(ctx, tc, c.pilot, c.conditions, exps); err != nil {
		return err
	}
	builds, err := buildLevers(ctx, tc, c.out, exps)
	if err != nil {
		return err
	}
	pools, err := runPools(ctx, tc, c, exps, builds, path)
	if err != nil {
		return err
	}
	return analysePaired(c, ss, pools)
}

// plan sizes every scenario's conditions from its committed baseline.
func plan(tc *toolchain.Toolchain, c config, ss map[string]*scenario.Scenario) ([]experiment, error) {
	var out []experiment
	for _, name := range c.scenarios {
		s := ss[strings.TrimSpace(name)]
		path := fingerprint.Path(repo.At(tc.Root).Fingerprints(), s.Metadata.Name)
		b, err := fingerprint.LoadBaseline(path)
		if err != nil {
			return nil, fmt.Errorf("the delays are sized from the scenario's baseline: %w", err)
		}
		cds, err := sizeConditions(c.conditions, b)
		if err != nil {
			return nil, fmt.Errorf("-conditions: %s: %w", path, err)
		}
		out = append(out, experiment{s: s, conditions: cds})
	}
	return out, nil
}

// sizeConditions parses the condition specs, sizing their levers from b.
func sizeConditions(specs []string, b *fingerprint.Baseline) ([]sensitivity.Condition, error) {
	var out []sensitivity.Condition
	for _, spec := range specs {
		cd, err := sensitivity.ParseCondition(spec, b)
		if err != nil {
			return nil, err
		}
		out = append(out, cd)
	}
	return out, nil
}

// pilot sizes the levers from n runs of the reference arm on this
// machine, on a temporary cluster of their own, for every experiment with
// a lever sized from a median (launch, decide, memory). Sized from the
// committed baseline, a lever realizes the factor only on a machine as
// fast as the one that recorded it (memory-heavy's launch ×1.25 realized
// NodeClaim-ready ×1.15 sized so, ×1.20 sized here; the rest of the
// shortfall is not the machine's, see docs/performance.md). n = 0 keeps
// the baseline's sizing.
func pilot(ctx context.Context, tc *toolchain.Toolchain, n int, specs []string, exps []experiment) (out []experiment, err error) {
	if n == 0 || !slices.ContainsFunc(exps, sizedByMedian) {
		return exps, nil
	}
	h, err := newHarness(ctx, tc)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.Close(context.WithoutCancel(ctx))) }()
	ref, err := h.BuildRunner(cluster.ToolchainBuild(tc))
	if err != nil {
		return nil, err
	}
	for _, e := range exps {
		if !sizedByMedian(e) {
			out = append(out, e)
			continue
		}
		var fps []*fingerprint.Fingerprint
		for i := range n {
			res, err := ref.Run(ctx, e.s)
			if err != nil {
				return nil, fmt.Errorf("%s: pilot run %d of %d: %w", e.s.Metadata.Name, i+1, n, err)
			}
			fps = append(fps, res.Fingerprint)
		}
		sized, err := resize(e, specs, fps)
		if err != nil {
			return nil, err
		}
		for i, cd := range sized.conditions {
			if cd.Lever != e.conditions[i].Lever {
				logf("%s, %s: sized from %d reference runs here: %s (from the baseline: %s)", e.s.Metadata.Name, cd.Name, n, cd.Lever.Name(), e.conditions[i].Lever.Name())
			}
		}
		out = append(out, sized)
	}
	return out, nil
}

// sizedByMedian: e has a condition whose lever is sized from a median of
// the runs (every lever but CPU's factor).
func sizedByMedian(e experiment) bool {
	return slices.ContainsFunc(e.conditions, func(cd sensitivity.Condition) bool {
		l := cd.Lever
		return l.LaunchDelay > 0 || l.DecisionDelay > 0 || l.MemoryMiB > 0
	})
}

// resize parses e's condition specs again against a baseline of the pilot
// runs.
func resize(e experiment, specs []string, fps []*fingerprint.Fingerprint) (experiment, error) {
	b, err := fingerprint.NewBaseline(e.s.Metadata.Name, fingerprint.Provenance{}, fps)
	if err != nil {
		return e, fmt.Errorf("%s: the pilot runs do not make a baseline: %w", e.s.Metadata.Name, err)
	}
	cds, err := sizeConditions(specs, b)
	if err != nil {
		return e, fmt.Errorf("%s: sizing from the pilot runs: %w", e.s.Metadata.Name, err)
	}
	return experiment{s: e.s, conditions: cds}, nil
}

// buildLevers builds every lever the experiments need, before any run: a
// build beside the runs would slow them. The A/A conditions' candidate is
// the pinned build itself (every run starts Karpenter afresh, so its runs
// are the reference's, run again).
func buildLevers(ctx context.Context, tc *toolchain.Toolchain, out string, exps []experiment) (map[string]cluster.Build, error) {
	builds := map[string]cluster.Build{}
	dir := filepath.Join(out, "levers")
	for _, e := range exps {
		for _, cd := range e.conditions {
			name := cd.Lever.Name()
			if _, ok := builds[name]; ok {
				continue
			}
			if cd.Lever == (sensitivity.Lever{}) {
				builds[name] = cluster.ToolchainBuild(tc)
				continue
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			log, err := os.Create(filepath.Join(dir, name+".log"))
			if err != nil {
				return nil, err
			}
			logf("building Karpenter with lever %s (log: %s)", name, log.Name())
			b, err := cd.Lever.Build(ctx, tc, dir, log)
			log.Close()
			if err != nil {
				return nil, fmt.Errorf("%w (see %s)", err, log.Name())
			}
			builds[name] = b
		}
	}
	return builds, nil
}

// poolAttempts bounds how often a pool is started on a fresh cluster
// after its environment failed (see runPools).
const poolAttempts = 2

// stoppedPool is a pool whose environment failed part of the way: the
// blocks it had, kept as evidence in stopped.json but not analysed (a
// verification replayed from them would draw from fewer blocks than the
// others).
type stoppedPool struct {
	sensitivity.Pool
	Reason string `json:"reason"`
}

// runPools runs every pool on a temporary cluster, writing the pools to
// path after each. A pool whose environment fails is kept in stopped.json
// beside path and started over on a fresh cluster (see attemptPool); the
// pools after it still run.
func runPools(ctx context.Context, tc *toolchain.Toolchain, c config, exps []experiment, builds map[string]cluster.Build, path string) (pools []sensitivity.Pool, err error) {
	var (
		h       *harness.Harness
		ref     *run.Runner
		stopped []stoppedPool
		failed  []string
	)
	closeHarness := func() error {
		if h == nil {
			return nil
		}
		cerr := h.Close(context.WithoutCancel(ctx))
		h = nil
		return cerr
	}
	defer func() { err = errors.Join(err, closeHarness()) }()
	keep := func(sp stoppedPool) error {
		stopped = append(stopped, sp)
		if err := writeJSON(filepath.Join(filepath.Dir(path), "stopped.json"), stopped); err != nil {
			return err
		}
		return closeHarness()
	}
	for _, e := range exps {
		for _, cd := range e.conditions {
			p, ok, err := attemptPool(ctx, poolAttempts, func() (sensitivity.Pool, error) {
				if h == nil {
					var err error // not runPools' own: a failed attempt returns it through attemptPool
					if h, err = newHarness(ctx, tc); err != nil {
						return sensitivity.Pool{}, err
					}
					if ref, err = h.BuildRunner(cluster.ToolchainBuild(tc)); err != nil {
						return sensitivity.Pool{}, err
					}
				}
				cand, err := h.BuildRunner(builds[cd.Lever.Name()])
				if err != nil {
					return sensitivity.Pool{}, err
				}
				return runPool(ctx, e.s, cd, ref, cand, c.pairs)
			}, keep)
			if err != nil {
				return nil, err
			}
			if !ok {
				failed = append(failed, fmt.Sprintf("%s, %s", e.s.Metadata.Name, cd.Name))
				continue
			}
			pools = append(pools, p)
			if err := writeJSON(path, pools); err != nil {
				return nil, err
			}
		}
	}
	if len(failed) > 0 {
		logf("not measured, their environment failed %d times each (stopped.json): %s", poolAttempts, strings.Join(failed, "; "))
	}
	return pools, nil
}

// attemptPool runs a pool up to attempts times. When a run's environment
// fails (a component died or restarted: run.EnvironmentError), what the
// pool had is handed to keep, which also drops the cluster, and the pool
// starts over; after the last attempt ok is false and the error is only in
// what keep was given. Any other error, or one after ctx ended, is
// returned.
func attemptPool(ctx context.Context, attempts int, pool func() (sensitivity.Pool, error), keep func(stoppedPool) error) (p sensitivity.Pool, ok bool, err error) {
	for attempt := 1; attempt <= attempts; attempt++ {
		p, err = pool()
		var env *run.EnvironmentError
		if err == nil || !errors.As(err, &env) || ctx.Err() != nil {
			return p, err == nil, err
		}
		logf("%v: attempt %d of %d stopped; its %d blocks are kept in stopped.json and its cluster dropped", err, attempt, attempts, len(p.Pairs))
		if err := keep(stoppedPool{Pool: p, Reason: err.Error()}); err != nil {
			return p, false, err
		}
	}
	return sensitivity.Pool{}, false, nil
}

// runPool runs n blocks in verify's order, with one core kept busy for the
// whole pool under a loaded condition.
func runPool(ctx context.Context, s *scenario.Scenario, cd sensitivity.Condition, ref, cand *run.Runner, n int) (sensitivity.Pool, error) {
	p := sensitivity.Pool{Scenario: s.Metadata.Name, Condition: cd}
	if cd.Load {
		stop := busy(ctx)
		defer stop()
	}
	for b := range n {
		start := time.Now()
		arms := []*run.Runner{ref, cand}
		if !verify.ReferenceFirst(b) {
			arms[0], arms[1] = cand, ref
		}
		var fps [2]*fingerprint.Fingerprint
		for i, r := range arms {
			res, err := r.Run(ctx, s)
			if err != nil {
				return p, fmt.Errorf("%s, %s, block %d: %w", s.Metadata.Name, cd.Name, b+1, err)
			}
			fps[i] = res.Fingerprint
		}
		if !verify.ReferenceFirst(b) {
			fps[0], fps[1] = fps[1], fps[0]
		}
		pr := sensitivity.Pair{RefFirst: verify.ReferenceFirst(b), Ref: fps[0], Cand: fps[1], Seconds: time.Since(start).Seconds()}
		p.Pairs = append(p.Pairs, pr)
		logf("%s, %s: block %d/%d in %.0fs: %s", s.Metadata.Name, cd.Name, b+1, n, pr.Seconds, ratios(cd, pr))
	}
	return p, nil
}

// ratios prints a block's candidate/reference ratio of the condition's
// target (pod-ready and Karpenter's CPU for an A/A condition).
func ratios(cd sensitivity.Condition, p sensitivity.Pair) string {
	paths := []string{"timing.podReady.p50", "karpenter.cpuSeconds"}
	if cd.Target != "" {
		paths = []string{cd.Target}
	}
	var out []string
	for _, path := range paths {
		m, _ := sensitivity.RunMetric(path)
		r, rok := m.Of(p.Ref)
		c, cok := m.Of(p.Cand)
		if rok && cok && r > 0 {
			out = append(out, fmt.Sprintf("%s %.2f×", path, c/r))
		} else {
			out = append(out, path+" –")
		}
	}
	return strings.Join(out, ", ")
}

// busy keeps one core busy until stop: the machine slower for both arms.
func busy(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		x := 0
		for ctx.Err() == nil {
			for i := range 1 << 20 {
				x += i
			}
		}
		_ = x
	}()
	return func() { cancel(); <-done }
}

func analysePaired(c config, ss map[string]*scenario.Scenario, pools []sensitivity.Pool) error {
	var cells []sensitivity.PairedCell
	all := slices.Concat(pools, sensitivity.PoolAA(pools))
	injected, err := sensitivity.InjectAll(all, c.injections)
	if err != nil {
		return err
	}
	for _, p := range slices.Concat(all, injected) {
		s, ok := ss[p.Scenario]
		if !ok {
			continue
		}
		cell, err := sensitivity.ReplayPaired(s, p, sensitivity.PairedOptions{Trials: c.trials, MaxPairs: c.maxPairs, Seed: 1})
		if err != nil {
			return err
		}
		cells = append(cells, cell)
	}
	if err := writeTable(filepath.Join(c.out, "paired"), sensitivity.PairedTable(cells, c.trials), cells); err != nil {
		return err
	}
	measured := slices.DeleteFunc(slices.Clone(pools), func(p sensitivity.Pool) bool { return ss[p.Scenario] == nil })
	rows, err := sensitivity.Premise(measured, func(name string) (*scenario.Scenario, error) { return ss[name], nil })
	if err != nil || len(rows) == 0 {
		return err
	}
	fmt.Println()
	return writeTable(filepath.Join(c.out, "premise"), sensitivity.PremiseTable(rows), rows)
}
