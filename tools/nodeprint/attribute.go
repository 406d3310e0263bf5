package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

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
			m := attribute.NewMatrix()
			err := withScenarios(cmd.Context(), f, args, stderr, func(ctx context.Context, _ *harness.Job, h *harness.Harness, s *scenario.Scenario) error {
				if s.Spec.Fault == nil || s.Spec.Fault.Expect == nil {
					return usageError{fmt.Errorf("%s: the matrix needs fault scenarios with spec.fault.expect", s.Path)}
				}
				for i := 0; i < runs; i++ {
					res, err := h.Judge.Fault(ctx, s)
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
