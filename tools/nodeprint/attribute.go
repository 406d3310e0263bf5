package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	runpkg "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// wrongError marks runs whose verdict was not the expected one, or plain
// runs that found a regression (exit 1).
type wrongError struct{ n, of int }

func (e wrongError) Error() string {
	return fmt.Sprintf("%d of %d scenario(s) failed: a regression, or an attribution other than the expected one", e.n, e.of)
}

// environmentError marks scenarios that could not complete because the
// environment failed under them (exit 3).
type environmentError struct{ n, of int }

func (e environmentError) Error() string {
	return fmt.Sprintf("%d of %d scenario(s) could not complete: the environment failed (see each scenario's error)", e.n, e.of)
}

// interruptedError replaces the scenarios' own errors (a cancelled
// request, a rate limiter's wait) when a signal stopped them: they did not
// fail, they were stopped (exit 130). Only a recorded signal makes one
// (interrupted), never a cancelled context in an error chain.
type interruptedError struct{ n, of int }

func (e interruptedError) Error() string {
	return fmt.Sprintf("%d of %d scenario(s) interrupted before they completed; what they created was deleted", e.n, e.of)
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &scenarioFlags{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run PATH...",
		Short: "Run scenario files (or directories of them) and attribute what happened to a layer",
		Long: `PATH is a scenario file, a directory (its *.yaml files) or a scenario name under fixtures/scenarios/.
A fault scenario runs twice, clean and with its fault, and the faulted run is classified
against the clean one; it passes when the verdict names the expected layer (and rule).
A plain scenario runs once against its committed baseline and passes when the verdict is none.
--parallel N runs up to N scenarios at once on the one cluster (scenarios of one catalog
together, cluster-wide faults alone); --shard I/N runs every N-th scenario by name from the
I-th; --report-dir writes report.json, summary.md, junit.xml and report.html.
Exit codes: 0 all passed, 1 a wrong attribution or a regression, 2 bad input, 3 environment failure.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			paths, err := expandPaths(args)
			if err != nil {
				return usageError{err}
			}
			rep := report.New("run", time.Now())
			var mu sync.Mutex
			// A plain scenario is attributed against its committed baseline.
			f.needBaseline = func(s *scenario.Scenario) bool { return s.Spec.Fault == nil }
			err = withScenarios(cmd.Context(), f, paths, stderr, func(ctx context.Context, r *runpkg.Runner, env fingerprint.Environment, s *scenario.Scenario) error {
				started := time.Now()
				sc, err := runOne(ctx, r, f, s)
				sc.Seconds = time.Since(started).Round(time.Second).Seconds()
				if err != nil && interrupted(ctx) {
					sc.Error, sc.Verdict = "interrupted before it completed; what it created was deleted", nil
				}
				var ue usageError
				if errors.As(err, &ue) {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				rep.Environment = report.Environment{Karpenter: env.Karpenter, Kubernetes: env.Kubernetes, Cluster: f.clusterName}
				rep.Add(sc)
				if !asJSON {
					printScenario(stdout, &sc)
				}
				return err
			})
			rep.Shard, rep.Parallel = f.shard, f.parallel
			return finishReport(cmd.Context(), stdout, stderr, rep, f, asJSON, err)
		},
	}
	addScenarioFlags(cmd, f)
	addRunFlags(cmd, f)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (docs/report.schema.json) instead of text")
	return cmd
}

// finishReport decides the exit code from the scenarios' statuses and the
// error, writes the report where asked, and returns the error main maps to
// that code.
func finishReport(ctx context.Context, stdout, stderr io.Writer, rep *report.Report, f *scenarioFlags, asJSON bool, err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		return err // bad input: nothing ran, nothing to report
	}
	failed, broken := 0, 0
	for _, s := range rep.Scenarios {
		switch s.Status {
		case report.Failed:
			failed++
		case report.Error:
			broken++
		}
	}
	switch {
	case err != nil && broken == 0 && len(rep.Scenarios) == 0:
		// the cluster did not come up or was interrupted before any scenario
	case broken > 0 && interrupted(ctx):
		err = interruptedError{broken, len(rep.Scenarios)}
	case broken > 0:
		err = errors.Join(err, environmentError{broken, len(rep.Scenarios)})
	case failed > 0:
		err = errors.Join(err, wrongError{failed, len(rep.Scenarios)})
	}
	if f.karpenterVersion != "" {
		rep.Upgrade = &report.Upgrade{To: f.karpenterVersion}
	}
	rep.Finish(time.Now(), exitCode(ctx, err))
	if u := rep.Upgrade; u != nil {
		if u.From == "" {
			u.From = f.pinned // only fault scenarios ran: their baseline is the clean run
		}
		if !asJSON {
			fmt.Fprintln(stdout, rep.UpgradeLine())
		}
	}
	if asJSON {
		b, jerr := rep.JSON()
		if jerr != nil {
			return jerr
		}
		if _, werr := stdout.Write(b); werr != nil {
			return werr
		}
	}
	if f.reportDir != "" {
		if werr := rep.WriteAll(f.reportDir); werr != nil {
			return errors.Join(err, werr)
		}
		fmt.Fprintf(stderr, "report written to %s (report.json, summary.md, junit.xml, report.html)\n", f.reportDir)
	}
	return err
}

func runOne(ctx context.Context, r *runpkg.Runner, f *scenarioFlags, s *scenario.Scenario) (report.Scenario, error) {
	sc := runpkg.ReportScenario(s)
	if s.Spec.Fault != nil {
		res, err := r.RunFault(ctx, s)
		if err != nil {
			return runpkg.ReportError(s, err), err
		}
		return res.Report(), nil
	}
	bl := f.baselines[s.Metadata.Name]
	if bl == nil {
		return sc, usageError{fmt.Errorf("%s has no fault and no baseline to compare with (record one with `nodeprint record %s`)", s.Path, s.Path)}
	}
	res, err := r.Run(ctx, s)
	if err != nil {
		return runpkg.ReportError(s, err), err
	}
	d, v, err := runpkg.Attribute(s, res, bl, bl.Inputs)
	if err != nil {
		sc.Error = err.Error()
		return sc, err
	}
	// A plain run is classified too: it passes when the verdict is none.
	sc = runpkg.VerifyReport(s, res, bl, d)
	sc.Verdict, sc.Runbook = v, report.RunbookPage(v.Rule)
	sc.Status = report.Failed
	if v.Verdict == attribute.None {
		sc.Status = report.Passed
	}
	return sc, nil
}

func printScenario(w io.Writer, s *report.Scenario) {
	status := map[string]string{report.Passed: "PASS", report.Failed: "FAIL"}[s.Status]
	if status == "" {
		status = "ERROR"
	}
	if s.Error != "" {
		if s.Verdict != nil {
			// inconclusive (environment): what failed is in the error.
			fmt.Fprintf(w, "%s %s (%s): %s: %s\n", status, s.Name, s.File, s.Verdict.Label(), s.Error)
			return
		}
		fmt.Fprintf(w, "%s %s (%s): %s\n", status, s.Name, s.File, s.Error)
		return
	}
	v := s.Verdict
	fmt.Fprintf(w, "%s %s: %s", status, s.Name, v.Verdict)
	if v.Rule != "" {
		fmt.Fprintf(w, " by rule %s (%s)", v.Rule, v.Title.En)
	}
	if s.Expected != nil {
		exp := string(s.Expected.Layer)
		if s.Expected.Rule != "" {
			exp += " by " + s.Expected.Rule
		}
		fmt.Fprintf(w, "; fault %s, expected %s", s.Fault, exp)
	}
	fmt.Fprintln(w)
	printReasonAndEvidence(w, v)
	printChanges(w, s)
	if len(v.Fired) > 0 {
		if len(v.Fired) > 1 {
			var others []string
			for _, f := range v.Fired[1:] {
				others = append(others, f.Rule)
			}
			fmt.Fprintf(w, "    also fired (later in the decision order): %s\n", strings.Join(others, ", "))
		}
		fmt.Fprintf(w, "    owner: %s\n", v.Owner.En)
		if len(v.Checks) > 0 {
			fmt.Fprintf(w, "    first check: %s\n", v.Checks[0].Command)
		}
		if s.Runbook != "" {
			fmt.Fprintf(w, "    runbook: %s\n", s.Runbook)
		}
	}
}

// printChanges prints, for a plain scenario, what the run did to
// provisioning against the baseline and what changed in its inputs.
func printChanges(w io.Writer, s *report.Scenario) {
	if s.Fault != "" {
		return
	}
	if e := report.Effect(s.Baseline, s.Observed); e != "" {
		fmt.Fprintf(w, "    effect: %s\n", e)
	}
	for _, l := range s.Inputs.Lines() {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

// printReasonAndEvidence prints why a verdict is none or inconclusive, or
// the deciding rule's evidence, indented under its line.
func printReasonAndEvidence(w io.Writer, v *attribute.Verdict) {
	if v.Reason != "" {
		fmt.Fprintf(w, "    %s\n", v.Reason)
	}
	if len(v.Fired) > 0 {
		for _, e := range v.Fired[0].Evidence {
			fmt.Fprintf(w, "    evidence: %s\n", e)
		}
	}
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

func newFaultsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "faults",
		Short: "List the fault catalog: each fault's layer, mechanism and parameters",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			for _, d := range faults.Catalog() {
				fmt.Fprintf(stdout, "%s (%s)\n    %s\n", d.Name, d.Layer, d.Summary)
				for _, p := range d.Params {
					def := p.Default
					if def == "" {
						def = "-"
					}
					fmt.Fprintf(stdout, "    param %-14s %-9s default %-8s %s\n", p.Name, p.Kind, def, p.Help)
				}
			}
			return nil
		},
	}
}

func newRulesCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "List the attribution rules in decision order, and the signals they read",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			rs, err := attribute.Rules()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tLAYER\tWHEN\tTITLE")
			for _, r := range rs.Rules {
				var when []string
				for _, c := range r.When {
					when = append(when, c.String())
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Layer, strings.Join(when, " and "), r.Title.En)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "\nSignals:")
			for _, s := range attribute.Signals() {
				fmt.Fprintf(stdout, "  %-34s %s\n", s.ID, s.Help)
			}
			return nil
		},
	}
}

// recordAnomaly runs a fault scenario and writes its anomaly fingerprint,
// refusing to record a wrong attribution.
func recordAnomaly(ctx context.Context, stdout io.Writer, r *runpkg.Runner, f *scenarioFlags, s *scenario.Scenario) error {
	res, err := r.RunFault(ctx, s)
	if err != nil {
		return err
	}
	sc := res.Report()
	printScenario(stdout, &sc)
	if sc.Status != report.Passed {
		return fmt.Errorf("%s: not recorded: the verdict is not the expected one", s.Metadata.Name)
	}
	a := attribute.NewAnomaly(s.Metadata.Name, s.Spec.Fault.Name, s.Spec.Fault.Params, res.Clean.Fingerprint, res.Faulted.Fingerprint, res.Diff, res.Verdict)
	path := attribute.AnomalyPath(f.fingerprints, s.Metadata.Name)
	if err := a.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: anomaly written to %s\n", s.Metadata.Name, path)
	return nil
}

func newAttributeCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &scenarioFlags{}
	var (
		matrix bool
		runs   int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "attribute --matrix [PATH...]",
		Short: "Measure the classifier: run every fault scenario N times and print the confusion matrix",
		Long: `PATH is a fault scenario file or a directory of them (default: fixtures/scenarios/faults).
Each scenario with spec.fault.expect runs --runs times (clean, then faulted); the matrix counts
runs by expected layer and verdict, and lists the deciding rules per scenario.
Exits 1 when any run lands off the diagonal or fails.`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !matrix {
				return usageError{fmt.Errorf("attribute needs --matrix (the only mode so far)")}
			}
			if runs < 1 || runs > 50 {
				return usageError{fmt.Errorf("--runs %d is out of range 1..50", runs)}
			}
			if len(args) == 0 {
				tc, err := toolchainFind()
				if err != nil {
					return err
				}
				args = []string{repo.At(tc).FaultScenarios()}
			}
			paths, err := expandPaths(args)
			if err != nil {
				return usageError{err}
			}
			m := attribute.NewMatrix()
			err = withScenarios(cmd.Context(), f, paths, stderr, func(ctx context.Context, r *runpkg.Runner, _ fingerprint.Environment, s *scenario.Scenario) error {
				if s.Spec.Fault == nil || s.Spec.Fault.Expect == nil {
					return usageError{fmt.Errorf("%s: the matrix needs fault scenarios with spec.fault.expect", s.Path)}
				}
				for i := 0; i < runs; i++ {
					res, err := r.RunFault(ctx, s)
					if err != nil {
						if interrupted(ctx) {
							return err
						}
						fmt.Fprintf(stderr, "%s run %d: %v\n", s.Metadata.Name, i+1, err)
						m.Add(s.Metadata.Name, s.Spec.Fault.Expect.Layer, nil)
						continue
					}
					m.Add(s.Metadata.Name, s.Spec.Fault.Expect.Layer, res.Verdict)
					fmt.Fprintf(stderr, "%s run %d/%d: %s\n", s.Metadata.Name, i+1, runs, res.Verdict.Summary())
				}
				return nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(m); err != nil {
					return err
				}
			} else if err := m.Write(stdout); err != nil {
				return err
			}
			if n := m.OffDiagonal(); n > 0 {
				return wrongError{n, m.Runs}
			}
			return nil
		},
	}
	addScenarioFlags(cmd, f)
	cmd.Flags().BoolVar(&matrix, "matrix", false, "run the fault scenarios and print the confusion matrix")
	cmd.Flags().IntVar(&runs, "runs", 3, "runs per fault scenario")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the matrix as JSON")
	return cmd
}

func toolchainFind() (string, error) {
	tc, err := toolchain.Find()
	if err != nil {
		return "", err
	}
	return tc.Root, nil
}
