package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func newVerifyCmd(stdout, stderr io.Writer) *cobra.Command {
	f := &scenarioFlags{verifies: true}
	cmd := &cobra.Command{
		Use:   "verify SCENARIO...",
		Short: "Run each scenario once and compare it with its committed baseline; exit 1 unless the verdict is none",
		Long: `Runs each scenario once, prints its diff against fingerprints/<name>.yaml and classifies
the run against it. A scenario passes by the same rule as in run: when the verdict is none (no
regression, and no rule fired: a crash loop with an unchanged fingerprint fails too).
--parallel, --shard and --report-dir work as for run.
Exit codes: 0 all passed, 1 a verdict other than none, 2 bad input, 3 environment failure.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.needBaseline = func(*scenario.Scenario) bool { return true }
			return reportScenarios(cmd.Context(), "verify", f, args, stdout, stderr, false, printVerified)
		},
	}
	addScenarioFlags(cmd, f)
	addRunFlags(cmd, f)
	return cmd
}
