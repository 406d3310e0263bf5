package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/harness"
	runpkg "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

type scenarioFlags struct {
	cluster      string
	fingerprints string
	runs         int
	// shard ("I/N"), parallel and reportDir are set by addRunFlags.
	shard     string
	parallel  int
	reportDir string
	// clusterName is the cluster the scenarios ran on.
	clusterName string
	// provider, kubeconfig and catalog choose the cluster (addScenarioFlags).
	provider   string
	kubeconfig string
	catalog    string
	// karpenterVersion, when set, runs the scenarios with that Karpenter
	// release instead of the pinned one (the upgrade check); pinned is the
	// pinned one.
	karpenterVersion string
	pinned           string
	// karpenterBinary, when set, runs the scenarios with that build of
	// the pinned release instead of the project's own.
	karpenterBinary string
	// needBaseline says which scenarios are compared with their committed
	// baseline; withScenarios loads those into baselines before it starts
	// a cluster, so a missing or malformed fingerprint applies nothing.
	needBaseline func(*scenario.Scenario) bool
	baselines    map[string]*fingerprint.Baseline
	// add: record adds its runs to the committed baselines.
	add bool
	// repeat is --repeat: auto, or how many runs verify a plain scenario.
	repeat string
}

// repeatRuns parses --repeat: auto (the default) or a number of runs.
func (f *scenarioFlags) repeatRuns() (runpkg.Repeat, error) {
	if f.repeat == "" || f.repeat == "auto" {
		return runpkg.RepeatAuto, nil
	}
	n, err := strconv.Atoi(f.repeat)
	if err != nil || n < 1 || n > 20 {
		return 0, fmt.Errorf("--repeat %q: want auto, or a number of runs from 1 to 20", f.repeat)
	}
	return runpkg.Repeat(n), nil
}

func addRunFlags(cmd *cobra.Command, f *scenarioFlags) {
	cmd.Flags().StringVar(&f.shard, "shard", "", "run the I-th of N slices of the scenarios (I/N, 1-based; every N-th by name), for a CI matrix or an Indexed Job")
	cmd.Flags().IntVar(&f.parallel, "parallel", 1, "run up to N scenarios at once on the cluster (scenarios of one catalog together; cluster-wide faults alone)")
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "", "write report.json, summary.md, junit.xml and report.html into this directory")
	cmd.Flags().StringVar(&f.karpenterVersion, "karpenter-version", "", "upgrade check: build (or reuse) this Karpenter release (vX.Y.Z) next to the pinned one, run the scenarios with it on a temporary cluster, and report every scenario that differs from its baseline")
	cmd.Flags().StringVar(&f.repeat, "repeat", "auto", "runs that verify a plain scenario: auto (one, and as many more as the statistical test needs when a latency or Karpenter's usage moved past its gate: 3 against a baseline of 10 runs) or a fixed number; see docs/scenarios.md, How timings are verified")
	cmd.Flags().StringVar(&f.karpenterBinary, "karpenter-binary", "", "run the scenarios on a temporary cluster with this Karpenter binary (a build of the pinned release's KWOK provider with your changes, e.g. from `make mutants`) instead of the project's own; the report's inputs name the changed binary")
}

var releaseRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// upgradeToolchain is the toolchain with the Karpenter release of
// --karpenter-version, or tc itself without it.
func upgradeToolchain(f *scenarioFlags, tc *toolchain.Toolchain) (*toolchain.Toolchain, error) {
	f.pinned = tc.Versions.Karpenter
	if f.karpenterBinary != "" {
		return binaryToolchain(f, tc)
	}
	if f.karpenterVersion == "" {
		return tc, nil
	}
	if !releaseRE.MatchString(f.karpenterVersion) {
		return nil, usageError{fmt.Errorf("--karpenter-version %q: want a release tag vX.Y.Z (e.g. v1.15.0)", f.karpenterVersion)}
	}
	if f.cluster != "" || !cluster.Kind(f.provider).Owned() {
		return nil, usageError{fmt.Errorf("--karpenter-version runs a temporary local cluster with that release; leave out --cluster and --provider existing")}
	}
	up := *tc
	up.Versions.Karpenter = f.karpenterVersion
	return &up, nil
}

// binaryToolchain is tc with the Karpenter binary of --karpenter-binary.
func binaryToolchain(f *scenarioFlags, tc *toolchain.Toolchain) (*toolchain.Toolchain, error) {
	if f.karpenterVersion != "" {
		return nil, usageError{fmt.Errorf("--karpenter-binary and --karpenter-version: give one (a binary is a build of the pinned %s)", tc.Versions.Karpenter)}
	}
	if f.cluster != "" || !cluster.Kind(f.provider).Owned() {
		return nil, usageError{fmt.Errorf("--karpenter-binary runs a temporary local cluster with that binary; leave out --cluster and --provider existing")}
	}
	path, err := filepath.Abs(f.karpenterBinary)
	if err != nil {
		return nil, usageError{fmt.Errorf("--karpenter-binary: %w", err)}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, usageError{fmt.Errorf("--karpenter-binary: %w (build one with `make mutants`)", err)}
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return nil, usageError{fmt.Errorf("--karpenter-binary %s: not an executable file", path)}
	}
	if err := cluster.CheckKarpenterBinary(path); err != nil {
		return nil, usageError{fmt.Errorf("--karpenter-binary: %w", err)}
	}
	up := *tc
	up.KarpenterBinary = path
	return &up, nil
}

func addScenarioFlags(cmd *cobra.Command, f *scenarioFlags) {
	f.parallel = 1 // commands without --parallel run one scenario at a time
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "run on this running cluster of the local or kind provider (default: start a temporary one and stop it afterwards)")
	cmd.Flags().StringVar(&f.fingerprints, "fingerprints", "", "baseline directory (default: fingerprints/ of the team repository, nodeprint.yaml, at or above the working directory, else of nodeprint's checkout)")
	cmd.Flags().StringVar(&f.provider, "provider", string(cluster.KindLocal), "cluster provider: local (a cluster nodeprint starts and owns, no Docker), kind (the same on a kind cluster; needs a Docker engine) or existing (--kubeconfig to a cluster that runs Karpenter's KWOK provider; workload-side scenarios only)")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "with --provider existing: the cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
	cmd.Flags().StringVar(&f.catalog, "catalog", "", "with --provider existing: the instance-type catalog the cluster's Karpenter runs with (default: the KWOK provider's generic catalog); scenarios of other catalogs are refused")
}

// scenarioFn is what a command does with each scenario.
type scenarioFn func(context.Context, *runpkg.Runner, fingerprint.Provenance, *scenario.Scenario) error

// withScenarios loads the scenarios (before touching any cluster: bad input
// applies nothing), builds the harness (a cluster brought up for the
// command, or the running one --cluster or --kubeconfig names) and calls fn
// for each.
func withScenarios(ctx context.Context, f *scenarioFlags, args []string, stderr io.Writer, fn scenarioFn) error {
	tc, scenarios, err := loadScenarios(ctx, f, args, stderr)
	if err != nil || len(scenarios) == 0 {
		return err
	}
	start := time.Now()
	kind := cluster.Kind(f.provider)
	if f.cluster == "" && kind.Owned() {
		reportStale(stderr)
	}
	repeat, err := f.repeatRuns()
	if err != nil {
		return usageError{err}
	}
	h, err := harness.New(ctx, harness.WithProvider(kind), harness.WithCluster(f.cluster), harness.WithToolchain(tc),
		harness.WithRunnerOptions(runpkg.WithRepeat(repeat)),
		harness.WithKubeconfig(f.kubeconfig), harness.WithCatalog(f.catalog), harness.WithBuildOutput(stderr),
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
	f.clusterName = h.Name
	return runScenarios(ctx, f, scenarios, h.Runner, h.Provenance, fn)
}

// loadScenarios reads and checks every input of the run (the scenarios,
// their shard, the flags, the baselines they are compared with) and
// returns the toolchain to run them with.
func loadScenarios(ctx context.Context, f *scenarioFlags, args []string, stderr io.Writer) (*toolchain.Toolchain, []*scenario.Scenario, error) {
	tc, err := toolchain.Find()
	if err != nil {
		return nil, nil, err
	}
	layout := project(tc)
	if f.fingerprints == "" {
		f.fingerprints = layout.Fingerprints()
	}
	loader := runpkg.Loader(tc)
	var files []string
	for _, a := range args {
		if strings.ContainsAny(a, "/.") {
			files = append(files, a)
		} else {
			files = append(files, layout.Scenario(a))
		}
	}
	scenarios, err := loader.LoadFiles(files...)
	if err != nil {
		return nil, nil, usageError{err}
	}
	if f.parallel < 1 || f.parallel > 32 {
		return nil, nil, usageError{fmt.Errorf("--parallel %d is out of range 1..32", f.parallel)}
	}
	if f.shard != "" {
		i, n, err := runpkg.ParseShard(f.shard)
		if err != nil {
			return nil, nil, usageError{err}
		}
		scenarios = runpkg.Shard(scenarios, i, n)
		fmt.Fprintf(stderr, "shard %s: %d scenario(s)\n", f.shard, len(scenarios))
		if len(scenarios) == 0 {
			return tc, nil, nil
		}
	}
	if err := checkProviderFlags(f, tc); err != nil {
		return nil, nil, err
	}
	if tc, err = upgradeToolchain(f, tc); err != nil {
		return nil, nil, err
	}
	f.baselines = map[string]*fingerprint.Baseline{}
	for _, s := range scenarios {
		if err := runpkg.Preflight(ctx, s); err != nil {
			return nil, nil, usageError{fmt.Errorf("%s: %w", s.Path, err)}
		}
		if f.needBaseline != nil && f.needBaseline(s) {
			b, err := fingerprint.LoadBaseline(fingerprint.Path(f.fingerprints, s.Metadata.Name))
			if err != nil {
				return nil, nil, usageError{fmt.Errorf("%s is compared with its baseline: %w", s.Path, err)}
			}
			f.baselines[s.Metadata.Name] = b
		}
		if !cluster.Kind(f.provider).Owned() {
			if err := runpkg.CheckExisting(s, f.catalog); err != nil {
				return nil, nil, usageError{err}
			}
		}
	}
	return tc, scenarios, nil
}

// checkProviderFlags refuses flag combinations that mean nothing, before
// any cluster is touched.
func checkProviderFlags(f *scenarioFlags, tc *toolchain.Toolchain) error {
	switch cluster.Kind(f.provider) {
	case cluster.KindLocal, cluster.KindKind:
		if f.kubeconfig != "" || f.catalog != "" {
			return usageError{fmt.Errorf("--kubeconfig and --catalog are for --provider existing; the %s provider writes its own kubeconfig and switches catalogs itself", f.provider)}
		}
	case cluster.KindExisting:
		if f.cluster != "" {
			return usageError{fmt.Errorf("--cluster names a local cluster; with --provider existing give --kubeconfig")}
		}
		if f.catalog == "" {
			f.catalog = tc.Paths().InstanceTypes
		} else if _, err := os.Stat(f.catalog); err != nil {
			return usageError{fmt.Errorf("--catalog: %w", err)}
		}
	default:
		return usageError{fmt.Errorf("unknown cluster provider %q: want local, kind or existing", f.provider)}
	}
	return nil
}

// runScenarios runs the scenarios in phases; a usage error wins over the rest.
func runScenarios(ctx context.Context, f *scenarioFlags, scenarios []*scenario.Scenario, r *runpkg.Runner, env fingerprint.Provenance,
	fn scenarioFn) error {
	errs := runpkg.RunPhases(ctx, runpkg.Phases(scenarios), f.parallel, func(ctx context.Context, s *scenario.Scenario) error {
		return fn(ctx, r, env, s)
	})
	for _, err := range errs {
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
	}
	return errors.Join(errs...)
}

// expandPaths turns directories into their *.yaml files; names and files
// pass through.
func expandPaths(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", a, err)
		}
		n := 0
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				out = append(out, filepath.Join(a, e.Name()))
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s holds no *.yaml scenario files", a)
		}
	}
	return out, nil
}
