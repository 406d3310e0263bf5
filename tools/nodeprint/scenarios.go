package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// scenarioFlags are the flags of the commands that run scenarios; the job
// they describe is harness.NewJob's (jobOf).
type scenarioFlags struct {
	cluster, fingerprints    string
	provider, kubeconfig     string
	catalog                  string
	shard, reportDir, repeat string
	karpenterVersion         string
	karpenterBinary          string
	inCluster                bool
	parallel, runs, maxPairs int
	add                      bool
	// verifies: the command verifies plain scenarios against their
	// baselines (run, verify), so --repeat applies and must be able to
	// decide.
	verifies bool
	// needBaseline says which scenarios are compared with their committed
	// baseline (set by the command, not a flag): the job loads those
	// before it starts a cluster, so a missing or malformed fingerprint
	// applies nothing.
	needBaseline func(*scenario.Scenario) bool
}

// repeatRuns parses --repeat: auto (the default) or a number of runs.
func (f *scenarioFlags) repeatRuns() (verify.Repeat, error) {
	if f.repeat == "" || f.repeat == "auto" {
		return verify.RepeatAuto, nil
	}
	n, err := strconv.Atoi(f.repeat)
	if err != nil || n < 1 || n > verify.MaxRepeat {
		return 0, fmt.Errorf("--repeat %q: want auto, or a number of runs from 1 to 20", f.repeat)
	}
	return verify.Repeat(n), nil
}

func addRunFlags(cmd *cobra.Command, f *scenarioFlags) {
	cmd.Flags().StringVar(&f.shard, "shard", "", "run the I-th of N slices of the scenarios (I/N, 1-based; every N-th by name), for a CI matrix or an Indexed Job")
	cmd.Flags().IntVar(&f.parallel, "parallel", 1, "run up to N scenarios at once on the cluster (scenarios of one catalog together; cluster-wide faults alone)")
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "", "write report.json, summary.md, junit.xml and report.html into this directory")
	cmd.Flags().StringVar(&f.karpenterVersion, "karpenter-version", "", "upgrade check: build (or reuse) this Karpenter release (vX.Y.Z) next to the pinned one, run the scenarios with it on a temporary cluster, and report every scenario that differs from its baseline")
	cmd.Flags().StringVar(&f.repeat, "repeat", "auto", "runs that verify a plain scenario when its timings are compared with the baseline's recorded runs (the fallback when no reference arm can run: another build recorded the baseline, or the scenario changed and its catalog with it, so the recorded inputs cannot be replayed): auto (one, and as many more as the statistical test needs when a latency or Karpenter's usage moved past its gate: 3 against a baseline of 10 runs) or a fixed number; see docs/scenarios.md, How timings are verified")
	cmd.Flags().IntVar(&f.maxPairs, "max-pairs", verify.DefaultMaxPairs, "with --karpenter-binary or --karpenter-version: the most reference/candidate pairs a scenario's paired timing test may run (each pair is two runs); see docs/scenarios.md, How timings are verified")
	cmd.Flags().StringVar(&f.karpenterBinary, "karpenter-binary", "", "run the scenarios on a temporary cluster with this Karpenter binary (a build of the pinned release's KWOK provider with your changes, e.g. from `make mutants`) instead of the project's own; the report's inputs name the changed binary")
}

func addScenarioFlags(cmd *cobra.Command, f *scenarioFlags) {
	f.parallel = 1 // commands without --parallel run one scenario at a time
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "run on this running cluster of the local or kind provider (default: start a temporary one and stop it afterwards)")
	cmd.Flags().StringVar(&f.fingerprints, "fingerprints", "", "baseline directory (default: fingerprints/ of the team repository, nodeprint.yaml, at or above the working directory, else of nodeprint's checkout)")
	cmd.Flags().StringVar(&f.provider, "provider", string(cluster.KindLocal), "cluster provider: local (a cluster nodeprint starts and owns, no Docker), kind (the same on a kind cluster; needs a Docker engine) or existing (--kubeconfig to a cluster that runs Karpenter's KWOK provider; workload-side scenarios only)")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "with --provider existing: the cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
	cmd.Flags().BoolVar(&f.inCluster, "karpenter-in-cluster", false, karpenterInClusterHelp)
	cmd.Flags().StringVar(&f.catalog, "catalog", "", "with --provider existing: the instance-type catalog the cluster's Karpenter runs with (default: the KWOK provider's generic catalog); scenarios of other catalogs are refused")
}

// scenarioFn is what a command does with each scenario of the job, on the
// job's harness.
type scenarioFn func(context.Context, *harness.Job, *harness.Harness, *scenario.Scenario) error

// jobOf is the job the flags describe, checked before any cluster is
// touched: bad input applies nothing.
func jobOf(ctx context.Context, f *scenarioFlags, args []string) (*harness.Job, error) {
	tc, err := toolchain.Find()
	if err != nil {
		return nil, err
	}
	opts := []harness.Option{}
	if f.inCluster {
		opts = append(opts, harness.WithKarpenterInCluster())
	}
	if f.verifies {
		repeat, err := f.repeatRuns()
		if err != nil {
			return nil, usageError{err}
		}
		if err := verify.CheckMaxPairs("--max-pairs", f.maxPairs); err != nil {
			return nil, usageError{err}
		}
		opts = append(opts, harness.WithRepeat(repeat), harness.WithMaxPairs(f.maxPairs))
	}
	j, err := harness.NewJob(ctx, args, append(opts, harness.WithToolchain(tc), harness.WithLayout(project(tc)),
		harness.WithProvider(cluster.Kind(f.provider)), harness.WithCluster(f.cluster),
		harness.WithKubeconfig(f.kubeconfig), harness.WithCatalog(f.catalog),
		harness.WithShard(f.shard), harness.WithParallel(f.parallel), harness.WithBaselines(f.fingerprints, f.needBaseline),
		harness.WithKarpenterVersion(f.karpenterVersion), harness.WithKarpenterBinary(f.karpenterBinary))...)
	var bad *harness.UsageError
	if errors.As(err, &bad) {
		return nil, usageError{err}
	}
	return j, err
}

// withScenarios builds the job (before touching any cluster), its harness
// (a cluster brought up for the command, or the running one --cluster or
// --kubeconfig names) and calls fn for each scenario.
func withScenarios(ctx context.Context, f *scenarioFlags, args []string, stderr io.Writer, fn scenarioFn) error {
	j, err := jobOf(ctx, f, args)
	if err != nil {
		return err
	}
	if f.shard != "" {
		fmt.Fprintf(stderr, "shard %s: %d scenario(s)\n", f.shard, len(j.Scenarios))
	}
	if len(j.Scenarios) == 0 {
		return nil
	}
	start := time.Now()
	if f.cluster == "" && cluster.Kind(f.provider).Owned() {
		reportStale(stderr)
	}
	h, err := j.Harness(ctx, harness.WithBuildOutput(stderr),
		harness.WithClusterEvents(func(e cluster.Event) { printEvent(stderr, start, e) }),
		harness.WithProgress(func(msg string) { fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), msg) }))
	var bad *harness.UsageError
	if errors.As(err, &bad) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := h.Close(ctx); cerr != nil {
			fmt.Fprintln(stderr, "error:", cerr)
		}
	}()
	return runScenarios(ctx, j, h, fn)
}

// runScenarios runs the job's scenarios in phases; a usage error wins over
// the rest.
func runScenarios(ctx context.Context, j *harness.Job, h *harness.Harness, fn scenarioFn) error {
	errs := j.Run(ctx, func(ctx context.Context, s *scenario.Scenario) error { return fn(ctx, j, h, s) })
	for _, err := range errs {
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
	}
	return errors.Join(errs...)
}
