package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/lang"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/sop"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func newSOPCmd(stdout io.Writer) *cobra.Command {
	var out, scenarios, fingerprints string
	var langs []string
	var check bool
	cmd := &cobra.Command{
		Use:   "sop",
		Short: "Generate the fault-attribution runbooks (Markdown and HTML, English and Chinese) from the rules and the recorded fingerprints",
		Long: `Generate the fault-attribution runbooks: an index (decision order, triage
table, escalation matrix, fault catalog, baselines, signals), one page per
rule and one per baseline, in Markdown and as one self-contained HTML file
per language. The numbers come from the fingerprints directory, so
--scenarios and --fingerprints render a team's own runbooks.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tc, err := toolchain.Find()
			if err != nil {
				return err
			}
			layout := project(tc)
			if out == "" {
				out = layout.Runbooks()
			}
			if scenarios == "" {
				scenarios = layout.Scenarios()
			}
			if fingerprints == "" {
				fingerprints = layout.Fingerprints()
			}
			in, err := sop.Load(repo.Loader(tc), layout.Root, scenarios, fingerprints)
			var inErr *sop.InputError
			var fieldErrs scenario.ErrorList
			if errors.As(err, &inErr) || errors.As(err, &fieldErrs) {
				return usageError{err}
			}
			if err != nil {
				return usageError{fmt.Errorf("failed to read the runbooks' inputs: %w", err)}
			}
			files, err := sop.Generate(in, langs...)
			if err != nil {
				return usageError{err}
			}
			if check {
				if diffs := sop.Compare(out, files); len(diffs) > 0 {
					return staleError{dir: out, diffs: diffs}
				}
				fmt.Fprintf(stdout, "runbooks in %s are current (%d files)\n", out, len(files))
				return nil
			}
			if err := sop.Write(out, files); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %d files to %s: %d rules, %d baselines, %d fault fingerprints, languages %s\n",
				len(files), out, len(in.Rules.Rules), len(in.Baselines), len(in.Anomalies), strings.Join(orAll(langs), ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the runbooks to (default: <repository>/runbooks)")
	cmd.Flags().StringVar(&scenarios, "scenarios", "", "scenario directory, read recursively (default: <repository>/fixtures/scenarios)")
	cmd.Flags().StringVar(&fingerprints, "fingerprints", "", "fingerprint directory: baselines in it, fault fingerprints in its faults/ (default: fingerprints/ of the team repository, nodeprint.yaml, at or above the working directory, else of nodeprint's checkout)")
	cmd.Flags().StringSliceVar(&langs, "lang", nil, "languages to write, en and/or zh (default: both)")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; fail (exit 1) when the runbooks in --out differ from what would be generated")
	return cmd
}

func orAll(langs []string) []string {
	if len(langs) == 0 {
		return lang.All
	}
	return langs
}
