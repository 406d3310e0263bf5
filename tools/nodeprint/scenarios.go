package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	runpkg "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
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
}

func addRunFlags(cmd *cobra.Command, f *scenarioFlags) {
	cmd.Flags().StringVar(&f.shard, "shard", "", "run the I-th of N slices of the scenarios (I/N, 1-based; every N-th by name), for a CI matrix or an Indexed Job")
	cmd.Flags().IntVar(&f.parallel, "parallel", 1, "run up to N scenarios at once on the cluster (scenarios of one catalog together; cluster-wide faults alone)")
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "", "write report.json, summary.md, junit.xml and report.html into this directory")
	cmd.Flags().StringVar(&f.karpenterVersion, "karpenter-version", "", "upgrade check: build (or reuse) this Karpenter release (vX.Y.Z) next to the pinned one, run the scenarios with it on a temporary cluster, and report every scenario that differs from its baseline")
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
		return nil, usageError{fmt.Errorf("--karpenter-binary: %w (build one with `make mutants` or from the pinned module's kwok/ main)", err)}
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return nil, usageError{fmt.Errorf("--karpenter-binary %s: not an executable file", path)}
	}
	up := *tc
	up.KarpenterBinary = path
	return &up, nil
}

func addScenarioFlags(cmd *cobra.Command, f *scenarioFlags) {
	f.parallel = 1 // commands without --parallel run one scenario at a time
	cmd.Flags().StringVar(&f.cluster, "cluster", "", "run on this running cluster of the local or kind provider (default: start a temporary one and stop it afterwards)")
	cmd.Flags().StringVar(&f.fingerprints, "fingerprints", "", "baseline directory (default: <repository>/fingerprints)")
	cmd.Flags().StringVar(&f.provider, "provider", string(cluster.KindLocal), "cluster provider: local (a cluster nodeprint starts and owns, no Docker), kind (the same on a kind cluster; needs a Docker engine) or existing (--kubeconfig to a cluster that runs Karpenter's KWOK provider; workload-side scenarios only)")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "with --provider existing: the cluster's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
	cmd.Flags().StringVar(&f.catalog, "catalog", "", "with --provider existing: the instance-type catalog the cluster's Karpenter runs with (default: the KWOK provider's generic catalog); scenarios of other catalogs are refused")
}

func newRecordCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &scenarioFlags{}
	cmd := &cobra.Command{
		Use:   "record SCENARIO...",
		Short: "Record baselines (fingerprints/<scenario>.yaml) and fault anomalies (fingerprints/faults/<scenario>.yaml)",
		Long: `SCENARIO is a name under fixtures/scenarios/, a scenario file or a directory of them.
A plain scenario runs N times and its baseline is written; a fault scenario runs clean and
faulted once, and its anomaly fingerprint is written only when the verdict is the expected one.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := expandPaths(args)
			if err != nil {
				return usageError{err}
			}
			return withScenarios(cmd.Context(), f, paths, stderr, func(ctx context.Context, r *runpkg.Runner, env fingerprint.Environment, s *scenario.Scenario) error {
				if s.Spec.Fault != nil {
					return recordAnomaly(ctx, stdout, r, f, s)
				}
				runs := s.Spec.Baseline.Runs
				if f.runs > 0 {
					runs = f.runs
				}
				b, err := r.Record(ctx, env, s, runs)
				if err != nil {
					return err
				}
				path := fingerprint.Path(f.fingerprints, s.Metadata.Name)
				if f.add {
					recorded := f.baselines[s.Metadata.Name]
					if b, err = recorded.Merge(b); err != nil {
						return fmt.Errorf("%s: %w", path, err)
					}
					b.Accepted = recorded.Accepted
				}
				if err := b.Save(path); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s: %d run(s), %d distinct selection(s), written to %s\n", s.Metadata.Name, b.Runs, len(b.Selections), path)
				return nil
			})
		},
	}
	addScenarioFlags(cmd, f)
	cmd.Flags().IntVar(&f.runs, "runs", 0, "runs per scenario (default: the scenario's baseline.runs, itself 5 by default)")
	cmd.Flags().BoolVar(&f.add, "add", false, "add the new runs to the committed baseline instead of replacing it, as if all were recorded together (a non-deterministic scenario keeps the spread it saw); refused when the inputs or the Karpenter, Kubernetes or catalog differ")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if f.add {
			// Loaded before any cluster is touched: a missing baseline applies nothing.
			f.needBaseline = func(s *scenario.Scenario) bool { return s.Spec.Fault == nil }
		}
		return nil
	}
	return cmd
}

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &scenarioFlags{}
	cmd := &cobra.Command{
		Use:   "verify SCENARIO...",
		Short: "Run each scenario once and compare it with its committed baseline; exit 1 on a regression",
		Long: `Runs each scenario once and prints its diff against fingerprints/<name>.yaml.
--parallel, --shard and --report-dir work as for run.
Exit codes: 0 no regression, 1 a regression, 2 bad input, 3 environment failure.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := expandPaths(args)
			if err != nil {
				return usageError{err}
			}
			rep := report.New("verify", time.Now())
			var mu sync.Mutex
			f.needBaseline = func(*scenario.Scenario) bool { return true }
			err = withScenarios(cmd.Context(), f, paths, stderr, func(ctx context.Context, r *runpkg.Runner, env fingerprint.Environment, s *scenario.Scenario) error {
				b := f.baselines[s.Metadata.Name]
				started := time.Now()
				var sc report.Scenario
				res, err := r.Run(ctx, s)
				if err == nil {
					sc = runpkg.VerifyReport(s, res, b, diff.Compare(b, res.Fingerprint, diff.RulesFor(s)))
				} else {
					sc = runpkg.ReportError(s, err)
				}
				sc.Seconds = time.Since(started).Round(time.Second).Seconds()
				mu.Lock()
				defer mu.Unlock()
				rep.Environment = report.Environment{Karpenter: env.Karpenter, Kubernetes: env.Kubernetes, Cluster: f.clusterName}
				rep.Add(sc)
				if sc.Diff != nil {
					fmt.Fprint(stdout, sc.Diff.Text())
					printChanges(stdout, &sc)
				}
				return err
			})
			rep.Shard, rep.Parallel = f.shard, f.parallel
			return finishReport(cmd.Context(), stdout, stderr, rep, f, false, err)
		},
	}
	addScenarioFlags(cmd, f)
	addRunFlags(cmd, f)
	return cmd
}

// scenarioFn is what a command does with each scenario.
type scenarioFn func(context.Context, *runpkg.Runner, fingerprint.Environment, *scenario.Scenario) error

// withScenarios loads the scenarios (before touching any cluster: bad input
// applies nothing), brings up or reuses a cluster, and calls fn for each.
func withScenarios(ctx context.Context, f *scenarioFlags, args []string, stderr io.Writer, fn scenarioFn) error {
	tc, scenarios, err := loadScenarios(ctx, f, args, stderr)
	if err != nil || len(scenarios) == 0 {
		return err
	}
	start := time.Now()
	if !cluster.Kind(f.provider).Owned() {
		return onExisting(ctx, f, tc, scenarios, stderr, start, fn)
	}
	return onLocal(ctx, f, tc, scenarios, stderr, start, fn)
}

// loadScenarios reads and checks every input of the run (the scenarios,
// their shard, the flags, the baselines they are compared with) and
// returns the toolchain to run them with.
func loadScenarios(ctx context.Context, f *scenarioFlags, args []string, stderr io.Writer) (*toolchain.Toolchain, []*scenario.Scenario, error) {
	tc, err := toolchain.Find()
	if err != nil {
		return nil, nil, err
	}
	if f.fingerprints == "" {
		f.fingerprints = repo.At(tc.Root).Fingerprints()
	}
	loader := runpkg.Loader(tc)
	var files []string
	for _, a := range args {
		if strings.ContainsAny(a, "/.") {
			files = append(files, a)
		} else {
			files = append(files, repo.At(tc.Root).Scenario(a))
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

// onLocal runs the scenarios on a cluster of the local or kind provider:
// a temporary one it brings up and tears down, or the running one
// --cluster names.
func onLocal(ctx context.Context, f *scenarioFlags, tc *toolchain.Toolchain, scenarios []*scenario.Scenario, stderr io.Writer, start time.Time, fn scenarioFn) error {
	progress := func(e cluster.Event) { printEvent(stderr, start, e) }
	name := f.cluster
	if name == "" {
		name = fmt.Sprintf("np-%d", os.Getpid())
	}
	f.clusterName = name
	opts := []cluster.Option{cluster.WithName(name), cluster.WithProgress(progress), cluster.WithBuildOutput(stderr), cluster.WithToolchain(tc)}
	if f.cluster == "" {
		// A cluster of this run only: if the run is killed, prune finds it.
		opts = append(opts, cluster.WithTemporary())
		reportStale(stderr)
	}
	local, err := cluster.New(cluster.Kind(f.provider), opts...)
	if err != nil {
		return usageError{err}
	}
	catalogs, ok := local.(runpkg.CatalogSwitcher)
	if !ok {
		return usageError{fmt.Errorf("the %s provider cannot switch Karpenter's catalog", f.provider)}
	}
	if f.cluster == "" {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if derr := local.Down(dctx); derr != nil {
				fmt.Fprintln(stderr, "error:", derr)
			}
		}()
		if err := local.Up(ctx); err != nil {
			return err
		}
	} else if st, err := local.Status(ctx); err != nil || !st.Healthy() {
		if err == nil {
			err = fmt.Errorf("cluster %q is not healthy", name)
		}
		return &cluster.PhaseError{Phase: "status", Err: err}
	}
	w, err := supervised(ctx, local, stderr, start)
	if err != nil {
		return err
	}
	defer w.Stop()
	k, err := runpkg.KarpenterOf(tc)
	if err != nil {
		return err
	}
	ropts := []runpkg.Option{runpkg.WithSupervisor(w), runpkg.WithKarpenter(k), runpkg.WithProgress(func(msg string) {
		fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), msg)
	})}
	if f.cluster == "" {
		// Nobody restarts a component of this run's own cluster, and
		// its teardown removes whatever a failed cleanup leaves.
		ropts = append(ropts, runpkg.WithRecoveryGrace(0))
	}
	r, err := runpkg.NewRunner(local.Kubeconfig(), catalogs, ropts...)
	if err != nil {
		return err
	}
	return runScenarios(ctx, f, scenarios, r, runpkg.Environment(tc), fn)
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

// onExisting runs the scenarios on a cluster nodeprint does not own: it
// checks the cluster, never stops it, and each run deletes only what it
// created.
func onExisting(ctx context.Context, f *scenarioFlags, tc *toolchain.Toolchain, scenarios []*scenario.Scenario, stderr io.Writer, start time.Time,
	fn scenarioFn) error {
	ex, err := cluster.NewExisting(cluster.WithKubeconfig(f.kubeconfig), cluster.WithName("existing"),
		cluster.WithProgress(func(e cluster.Event) { printEvent(stderr, start, e) }))
	if err != nil {
		return usageError{err}
	}
	if err := ex.Up(ctx); err != nil {
		return err
	}
	st, err := ex.Status(ctx)
	if err != nil {
		return &cluster.PhaseError{Phase: "status", Err: err}
	}
	f.clusterName = "existing (" + ex.Kubeconfig() + ")"
	w, err := supervised(ctx, ex, stderr, start)
	if err != nil {
		return err
	}
	defer w.Stop()
	// Another's Karpenter: its version is what status read; its binary
	// is not ours to digest.
	r, err := runpkg.NewRunner(ex.Kubeconfig(), runpkg.FixedCatalog(f.catalog), runpkg.WithProgress(func(msg string) {
		fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), msg)
	}), runpkg.WithSupervisor(w), runpkg.WithKarpenter(inputs.Karpenter{Version: st.KarpenterVersion}))
	if err != nil {
		return err
	}
	env := runpkg.Environment(tc)
	env.Karpenter, env.Kubernetes = st.KarpenterVersion, st.KubernetesVersion
	return runScenarios(ctx, f, scenarios, r, env, fn)
}

// supervised starts watching the cluster's components for the runs: a
// component that dies, restarts or stops answering makes the run it
// happens under inconclusive (environment), exit 3.
func supervised(ctx context.Context, src supervise.Source, stderr io.Writer, start time.Time) (*supervise.Watcher, error) {
	w, err := supervise.Start(ctx, src, supervise.WithProgress(func(msg string) {
		fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), msg)
	}))
	if err != nil {
		return nil, &cluster.PhaseError{Phase: "status", Err: err}
	}
	return w, nil
}

// runScenarios runs the scenarios in phases; a usage error wins over the rest.
func runScenarios(ctx context.Context, f *scenarioFlags, scenarios []*scenario.Scenario, r *runpkg.Runner, env fingerprint.Environment,
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
