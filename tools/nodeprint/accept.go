package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/strictyaml"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// maxReportSize bounds a report.json read whole; a catalog-wide report with
// every timeline is a few megabytes.
const maxReportSize = 64 << 20

func newAcceptCmd(stdout io.Writer) *cobra.Command {
	var fingerprints, reason string
	cmd := &cobra.Command{
		Use:   "accept REPORT SCENARIO... --reason TEXT",
		Short: "Add a run a report observed to its scenario's baseline, after you judged its deviation noise",
		Long: `REPORT is a report.json written by verify, run or a suite (out/suites/<suite>/report.json).
Each SCENARIO's observed run is added to fingerprints/<scenario>.yaml as if it had been recorded
with the others: a selection the baseline had not seen becomes one it has, its cost widens the
cost range, its timings join the samples. The run id and --reason are written into the baseline
(accepted:), so the change is reviewed like code.

Accept only what you have traced to noise of the environment (for burst-1000: how the pods
fell into Karpenter's batch windows); a regression accepted is a regression hidden. Refused:
a scenario the report did not verify against a baseline (a fault scenario, a run that failed
before it settled), an upgrade check's run (another Karpenter), a baseline that changed since
the report was written, and a run accepted before.
Exit codes: 0 accepted, 2 bad input (nothing is written).`,
		Args: usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageError{errors.New("--reason is required: say why the deviation is noise (it is written into the baseline for its reviewer)")}
			}
			if fingerprints == "" {
				tc, err := toolchain.Find()
				if err != nil {
					return usageError{err}
				}
				fingerprints = project(tc).Fingerprints()
			}
			return accept(stdout, args[0], args[1:], fingerprints, reason)
		},
	}
	cmd.Flags().StringVar(&fingerprints, "fingerprints", "", "baseline directory (default: fingerprints/ of the team repository, nodeprint.yaml, at or above the working directory, else of nodeprint's checkout)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the deviation is noise, not a regression (required; kept in the baseline)")
	return cmd
}

// accept checks every scenario before it writes any baseline: bad input
// leaves the fingerprints as they were.
func accept(stdout io.Writer, reportPath string, names []string, dir, reason string) error {
	rep, err := loadReport(reportPath)
	if err != nil {
		return usageError{err}
	}
	if rep.Upgrade != nil {
		return usageError{fmt.Errorf("%s is an upgrade check's report (Karpenter %s against baselines of %s): its runs are of another Karpenter and belong in no baseline", reportPath, rep.Upgrade.To, rep.Upgrade.From)}
	}
	type update struct {
		path string
		old  *fingerprint.Baseline
		new  *fingerprint.Baseline
		run  string
		seen bool
	}
	var updates []update
	for _, name := range names {
		i := slices.IndexFunc(rep.Scenarios, func(s report.Scenario) bool { return s.Name == name })
		if i < 0 {
			have := make([]string, len(rep.Scenarios))
			for j, s := range rep.Scenarios {
				have[j] = s.Name
			}
			return usageError{fmt.Errorf("%s has no scenario %q (it has: %s)", reportPath, name, strings.Join(have, ", "))}
		}
		sc := rep.Scenarios[i]
		switch {
		case sc.Fault != "":
			return usageError{fmt.Errorf("%s: scenario %s is a fault scenario: its anomaly is recorded by `nodeprint record %s`, not accepted", reportPath, name, name)}
		case sc.Baseline == nil || sc.Observed == nil || len(sc.Runs) == 0:
			return usageError{fmt.Errorf("%s: scenario %s has no run compared with a baseline (status %s%s): only a verified run can be accepted", reportPath, name, sc.Status, errorSuffix(sc))}
		case sc.Inputs != nil && len(sc.Inputs.Changes) > 0:
			// A deviation that comes with a change is the change's, not noise.
			return usageError{fmt.Errorf("%s: scenario %s ran with other inputs than its baseline (%s): accepting would hide the change; if it is intended, re-record with `nodeprint record %s`",
				reportPath, name, inputs.Summary(sc.Inputs.Changes, 3), name)}
		}
		run := sc.Runs[len(sc.Runs)-1]
		path := fingerprint.Path(dir, name)
		committed, err := fingerprint.LoadBaseline(path)
		if err != nil {
			return usageError{err}
		}
		if slices.ContainsFunc(committed.Accepted, func(a fingerprint.AcceptedRun) bool { return a.Run == run }) {
			return usageError{fmt.Errorf("%s: run %s is accepted already", path, run)}
		}
		if !sameBaseline(committed, sc.Baseline) {
			return usageError{fmt.Errorf("%s changed since %s was written (it has %d runs, the report compared with %d): verify %s again and accept that report", path, reportPath, committed.Runs, sc.Baseline.Runs, name)}
		}
		seen := slices.ContainsFunc(committed.Selections, func(s fingerprint.SeenSelection) bool {
			return s.Key() == sc.Observed.Selection.Key()
		})
		nb, err := committed.Add(sc.Observed)
		if err != nil {
			return usageError{fmt.Errorf("%s: run %s cannot join %s: %w", reportPath, run, path, err)}
		}
		nb.Accepted = append(nb.Accepted, fingerprint.AcceptedRun{Run: run, Reason: strings.TrimSpace(reason)})
		updates = append(updates, update{path: path, old: committed, new: nb, run: run, seen: seen})
	}
	for _, u := range updates {
		if err := u.new.Save(u.path); err != nil {
			return err
		}
		sel := u.new.Selections
		lo, hi := sel[0].HourlyCost, sel[0].HourlyCost
		for _, s := range sel {
			lo, hi = min(lo, s.HourlyCost), max(hi, s.HourlyCost)
		}
		what := "a selection the baseline had seen"
		if !u.seen {
			what = "a selection the baseline had not seen"
		}
		fmt.Fprintf(stdout, "%s: accepted run %s (%s): %d runs (was %d), %d distinct selection(s), $%.4f-$%.4f an hour; written to %s: review the diff and commit it\n",
			u.new.Scenario, u.run, what, u.new.Runs, u.old.Runs, len(sel), lo, hi, u.path)
	}
	return nil
}

func errorSuffix(sc report.Scenario) string {
	if sc.Error != "" {
		return ": " + sc.Error
	}
	return ""
}

// sameBaseline reports whether the committed baseline is the one a report
// compared with: a report's copy went through JSON, the file through YAML.
func sameBaseline(committed, compared *fingerprint.Baseline) bool {
	a, b := *committed, *compared
	// An empty settings map is written as {} and may come back as nil.
	if len(a.Provenance.KarpenterSettings) == 0 && len(b.Provenance.KarpenterSettings) == 0 {
		a.Provenance.KarpenterSettings, b.Provenance.KarpenterSettings = nil, nil
	} else if !maps.Equal(a.Provenance.KarpenterSettings, b.Provenance.KarpenterSettings) {
		return false
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// loadReport reads a report.json strictly: a file of another tool, or of a
// newer nodeprint, is refused with the field that did not fit.
func loadReport(path string) (*report.Report, error) {
	data, err := strictyaml.ReadFile(path, maxReportSize)
	if err != nil {
		return nil, err
	}
	rep := &report.Report{}
	if errs, _ := strictyaml.DecodeJSON(path, data, rep, "not a report of this nodeprint"); len(errs) > 0 {
		return nil, errs
	}
	if rep.Tool != "nodeprint" || rep.SchemaVersion != report.SchemaVersion {
		return nil, &strictyaml.FieldError{File: path, Path: "schemaVersion", Msg: fmt.Sprintf("tool %q schema %d: want a report.json of nodeprint, schema %d", rep.Tool, rep.SchemaVersion, report.SchemaVersion)}
	}
	return rep, nil
}
