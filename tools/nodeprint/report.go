package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// reportScenarios runs each scenario to its report entry, prints the
// entry as the command does (nothing with asJSON) and finishes the report:
// run and verify differ only in the baselines they need and how they
// print.
func reportScenarios(ctx context.Context, command string, f *scenarioFlags, paths []string, stdout, stderr io.Writer, asJSON bool,
	print func(io.Writer, *report.Scenario)) error {
	rep := report.New(command, time.Now())
	var mu sync.Mutex
	err := withScenarios(ctx, f, paths, stderr, func(ctx context.Context, j *harness.Job, h *harness.Harness, s *scenario.Scenario) error {
		out, err := h.Judge.Entry(ctx, s, j.Baselines[s.Metadata.Name])
		sc := out.Entry
		if err != nil && interrupted(ctx) {
			sc.Error, sc.Verdict = "interrupted before it completed; what it created was deleted", nil
		}
		mu.Lock()
		defer mu.Unlock()
		rep.Stack = report.Stack{Karpenter: h.Provenance.Karpenter, Kubernetes: h.Provenance.Kubernetes, Cluster: h.Name,
			Provider: string(h.Kind()), Nodes: h.Nodes()}
		rep.Add(sc)
		if !asJSON {
			print(stdout, &sc)
		}
		return err
	})
	rep.Shard, rep.Parallel = f.shard, f.parallel
	return finishReport(ctx, stdout, stderr, rep, f, asJSON, err)
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
			u.From = pinnedKarpenter() // only fault scenarios ran: their baseline is the clean run
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
	printNotes(w, s)
	printScaleIn(w, s)
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

// printVerified prints verify's view of a scenario: the diff against its
// baseline, what changed, and the verdict when it is not none (a rule can
// fire on a run whose fingerprint matches, an L3 crash loop say).
func printVerified(w io.Writer, s *report.Scenario) {
	if s.Diff == nil {
		return
	}
	fmt.Fprint(w, s.Diff.Text())
	printChanges(w, s)
	printNotes(w, s)
	printScaleIn(w, s)
	if v := s.Verdict; v != nil && v.Verdict != attribute.None {
		fmt.Fprintf(w, "    verdict: %s", v.Label())
		if v.Rule != "" {
			fmt.Fprintf(w, " by rule %s (%s)", v.Rule, v.Title.En)
		}
		fmt.Fprintln(w)
		printReasonAndEvidence(w, v)
		if s.Runbook != "" {
			fmt.Fprintf(w, "    runbook: %s\n", s.Runbook)
		}
	}
}

// printNotes prints what of the scenario's manifests did not carry over.
func printNotes(w io.Writer, s *report.Scenario) {
	for _, n := range s.Notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
}

// printScaleIn prints what Karpenter removed in the scenario's scale-in.
func printScaleIn(w io.Writer, s *report.Scenario) {
	for _, l := range s.ScaleInLines() {
		fmt.Fprintf(w, "    %s\n", l)
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

// pinnedKarpenter is the pinned Karpenter release ("" without a toolchain).
func pinnedKarpenter() string {
	tc, err := toolchain.Find()
	if err != nil {
		return ""
	}
	return tc.Versions.Karpenter
}
