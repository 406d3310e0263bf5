package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &scenarioFlags{verifies: true}
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
Exit codes: 0 all passed, 1 a wrong attribution or a plain scenario whose verdict is not none, 2 bad input,
3 environment failure.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A plain scenario is attributed against its committed baseline.
			f.needBaseline = func(s *scenario.Scenario) bool { return s.Spec.Fault == nil }
			return reportScenarios(cmd.Context(), "run", f, args, stdout, stderr, asJSON, printScenario)
		},
	}
	addScenarioFlags(cmd, f)
	addRunFlags(cmd, f)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (docs/report.schema.json) instead of text")
	return cmd
}
