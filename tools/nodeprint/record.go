package main

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// recordAnomaly runs a fault scenario and writes its anomaly fingerprint,
// refusing to record a wrong attribution.
func recordAnomaly(ctx context.Context, stdout io.Writer, j *harness.Job, h *harness.Harness, s *scenario.Scenario) error {
	out, err := h.Judge.Entry(ctx, s, nil)
	if err != nil {
		return err
	}
	printScenario(stdout, &out.Entry)
	if out.Entry.Status != report.Passed {
		return fmt.Errorf("%s: not recorded: the verdict is not the expected one", s.Metadata.Name)
	}
	res := out.Fault
	a := attribute.NewAnomaly(s.Metadata.Name, s.Spec.Fault.Name, s.Spec.Fault.Params, res.Clean.Fingerprint, res.Faulted.Fingerprint, res.Diff, res.Verdict)
	path := repo.AnomalyPath(j.BaselineDir, s.Metadata.Name)
	if err := a.Save(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: anomaly written to %s\n", s.Metadata.Name, path)
	return nil
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
			return withScenarios(cmd.Context(), f, args, stderr, func(ctx context.Context, j *harness.Job, h *harness.Harness, s *scenario.Scenario) error {
				if s.Spec.Fault != nil {
					return recordAnomaly(ctx, stdout, j, h, s)
				}
				runs := s.Spec.Baseline.Runs
				if f.runs > 0 {
					runs = f.runs
				}
				b, err := h.Judge.Record(ctx, h.Provenance, s, runs)
				if err != nil {
					return err
				}
				path := fingerprint.Path(j.BaselineDir, s.Metadata.Name)
				if f.add {
					recorded := j.Baselines[s.Metadata.Name]
					if b, err = recorded.Merge(b); err != nil {
						return fmt.Errorf("%s: %w", path, err)
					}
					b.Accepted = recorded.Accepted
				}
				if err := b.Save(path); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s: %d run(s), %d distinct selection(s), written to %s\n", s.Metadata.Name, b.Runs, len(b.Selections), path)
				printRecordedSpread(stdout, s, b)
				return nil
			})
		},
	}
	addScenarioFlags(cmd, f)
	cmd.Flags().IntVar(&f.runs, "runs", 0, "runs per scenario (default: the scenario's baseline.runs, itself 10 by default: verify's test needs them)")
	cmd.Flags().BoolVar(&f.add, "add", false, "add the new runs to the committed baseline instead of replacing it, as if all were recorded together (a non-deterministic scenario keeps the spread it saw); refused when the inputs, the Karpenter, Kubernetes or catalog, or the machine class (CPU model, cores) differ")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if f.add {
			// Loaded before any cluster is touched: a missing baseline applies nothing.
			f.needBaseline = func(s *scenario.Scenario) bool { return s.Spec.Fault == nil }
		}
		return nil
	}
	return cmd
}

// printRecordedSpread says what a baseline of few runs costs verify: its
// test decides a suspect latency only with enough runs of its own.
func printRecordedSpread(w io.Writer, s *scenario.Scenario, b *fingerprint.Baseline) {
	rules := diff.RulesFor(s)
	confirm := diff.ConfirmRuns(b.Runs, rules)
	fmt.Fprintf(w, "%s: verify runs it once, and %d times in all when a latency or Karpenter's usage moves past its gate (false-alarm rate %g)\n",
		s.Metadata.Name, confirm, cmp.Or(rules.FalseAlarm, diff.DefaultFalseAlarm))
	if confirm > 3 {
		fmt.Fprintf(w, "%s: warning: %d recorded runs hold little spread; with %d, verify would decide with 3 (record --add --runs %d)\n",
			s.Metadata.Name, b.Runs, scenario.DefaultRuns, max(scenario.DefaultRuns-b.Runs, 1))
	}
}
