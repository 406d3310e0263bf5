package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/attribute"
)

// JSON is the report as versioned JSON, redacted.
func (r *Report) JSON() ([]byte, error) {
	red, err := r.Redacted()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(red, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Markdown is a summary fit for a pull-request comment or
// $GITHUB_STEP_SUMMARY: a status line, one table row per scenario, and the
// deviations and evidence of the ones that did not pass.
func (r *Report) Markdown() ([]byte, error) {
	var b bytes.Buffer
	r.markdownHeader(&b)
	b.WriteString("| | scenario | verdict | expected | seconds |\n|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %.0f |\n", statusIcon(s.Status), s.Name, cell(verdictText(&s)), cell(expectedText(&s)), s.Seconds)
	}
	markdownTiming(&b, r.Scenarios)
	markdownScaleIn(&b, r.Scenarios)
	for i := range r.Scenarios {
		if r.Scenarios[i].Status != Passed {
			markdownScenario(&b, &r.Scenarios[i])
		}
	}
	return b.Bytes(), nil
}

// markdownTiming says, for every scenario that has one, how its
// machine-dependent metrics were judged (paired, not compared, or against
// recorded runs): a fallback is never silent, passed or not.
func markdownTiming(b *bytes.Buffer, scs []Scenario) {
	first := true
	for i := range scs {
		line := scs[i].TimingLine()
		if line == "" {
			continue
		}
		if first {
			b.WriteString("\nTiming:\n\n")
			first = false
		}
		fmt.Fprintf(b, "- `%s`: %s\n", scs[i].Name, cell(line))
	}
}

// markdownScaleIn says what Karpenter removed in each scenario with a
// scale-in, passed or not.
func markdownScaleIn(b *bytes.Buffer, scs []Scenario) {
	first := true
	for i := range scs {
		lines := scs[i].ScaleInLines()
		if len(lines) == 0 {
			continue
		}
		if first {
			b.WriteString("\nScale-in:\n\n")
			first = false
		}
		fmt.Fprintf(b, "- `%s`: %s\n", scs[i].Name, cell(lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintf(b, "  - %s\n", cell(strings.TrimSpace(l)))
		}
	}
}

// markdownHeader is the summary line, the environment and the upgrade.
func (r *Report) markdownHeader(b *bytes.Buffer) {
	icon := "✅"
	if r.Summary.Failed > 0 || r.Summary.Errors > 0 {
		icon = "❌"
	}
	fmt.Fprintf(b, "## %s nodeprint %s: %d passed, %d failed, %d errors\n\n", icon, r.Command, r.Summary.Passed, r.Summary.Failed, r.Summary.Errors)
	var meta []string
	if r.Stack.Karpenter != "" {
		meta = append(meta, "Karpenter "+r.Stack.Karpenter)
	}
	if r.Stack.Kubernetes != "" {
		meta = append(meta, "Kubernetes "+r.Stack.Kubernetes)
	}
	if r.Stack.Provider != "" {
		meta = append(meta, "provider "+r.Stack.Provider)
	}
	if r.Stack.Nodes != "" {
		meta = append(meta, r.Stack.Nodes)
	}
	if r.Shard != "" {
		meta = append(meta, "shard "+r.Shard)
	}
	if r.Parallel > 1 {
		meta = append(meta, fmt.Sprintf("parallel %d", r.Parallel))
	}
	meta = append(meta, fmt.Sprintf("%s, exit code %d", r.Finished.Sub(r.Started).Round(1e9), r.Summary.ExitCode))
	fmt.Fprintf(b, "%s\n\n", strings.Join(meta, " · "))
	if line := r.UpgradeLine(); line != "" {
		fmt.Fprintf(b, "**%s**\n\n", line)
	}
}

// markdownScenario is a scenario that did not pass, in detail: its error,
// or its verdict, diff, effect, input changes and runbook.
func markdownScenario(b *bytes.Buffer, s *Scenario) {
	fmt.Fprintf(b, "\n### %s `%s`\n\n", statusIcon(s.Status), s.Name)
	if s.Error != "" {
		fmt.Fprintf(b, "Error: %s\n", s.Error)
		return
	}
	if v := s.Verdict; v != nil {
		markdownVerdict(b, v)
	}
	if s.Diff != nil && len(s.Diff.Deviations) > 0 {
		b.WriteString("| field | baseline | observed | severity |\n|---|---|---|---|\n")
		for _, d := range s.Diff.Deviations {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", d.Path, cell(d.Baseline), cell(d.Observed), d.Severity)
		}
		b.WriteString("\n")
	}
	if e := Effect(s.Baseline, s.Observed); e != "" && s.Fault == "" {
		fmt.Fprintf(b, "Effect on provisioning: %s\n\n", e)
	}
	if ic := s.Inputs; ic != nil {
		markdownInputs(b, ic)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "- note: %s\n", cell(n))
	}
	if len(s.Notes) > 0 {
		b.WriteString("\n")
	}
	if s.Failure != "" {
		fmt.Fprintf(b, "Failure: %s\n\n", cell(s.Failure))
	}
	if s.Runbook != "" {
		fmt.Fprintf(b, "Runbook: `%s`\n", s.Runbook)
	}
}

func markdownVerdict(b *bytes.Buffer, v *attribute.Verdict) {
	fmt.Fprintf(b, "Verdict **%s**", v.Verdict)
	if v.Rule != "" {
		fmt.Fprintf(b, " by `%s` (%s); owner: %s", v.Rule, v.Title.En, v.Owner.En)
	}
	b.WriteString("\n\n")
	if v.Reason != "" {
		fmt.Fprintf(b, "%s\n\n", v.Reason)
	}
	if len(v.Fired) > 0 {
		for _, e := range v.Fired[0].Evidence {
			fmt.Fprintf(b, "- evidence: `%s`\n", e.String())
		}
		b.WriteString("\n")
	}
}

func markdownInputs(b *bytes.Buffer, ic *InputChanges) {
	switch {
	case ic.Unknown != "":
		fmt.Fprintf(b, "Inputs not compared: %s\n\n", ic.Unknown)
	case len(ic.Changes) > 0:
		b.WriteString("| input | baseline | now |\n|---|---|---|\n")
		for _, c := range ic.Changes {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", c.Path, cell(orNone(c.Was)), cell(orNone(c.Now)))
		}
		fmt.Fprintf(b, "\nIf the change is intended, accept it as the new baseline: `%s`\n\n", ic.Accept)
	default:
		b.WriteString("Inputs: unchanged since the baseline.\n\n")
	}
}

func statusIcon(s string) string {
	switch s {
	case Passed:
		return "✅"
	case Failed:
		return "❌"
	}
	return "⚠️"
}

func verdictText(s *Scenario) string {
	switch {
	case s.Error != "":
		return "error"
	case s.Verdict == nil && s.Diff != nil && s.Diff.Regressed():
		return "regression" // verify: diffed, not classified
	case s.Verdict == nil && s.Diff != nil:
		return "matches the baseline"
	case s.Verdict == nil:
		return "–"
	case s.Verdict.Rule != "":
		return s.Verdict.Verdict + " (" + s.Verdict.Rule + ")"
	}
	return s.Verdict.Verdict
}

func expectedText(s *Scenario) string {
	switch {
	case s.Expected == nil:
		return "none (baseline)"
	case s.Expected.Rule != "":
		return string(s.Expected.Layer) + " (" + s.Expected.Rule + ")"
	}
	return string(s.Expected.Layer)
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}

// junit is the subset of the JUnit XML format CI systems read (GitLab,
// Jenkins, GitHub test reporters).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      float64     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// JUnit is the report as JUnit XML: one test case per scenario.
func (r *Report) JUnit() ([]byte, error) {
	secs := r.Finished.Sub(r.Started).Seconds()
	suite := junitSuite{Name: "nodeprint " + r.Command, Tests: r.Summary.Total, Failures: r.Summary.Failed, Errors: r.Summary.Errors,
		Time: secs, Timestamp: r.Started.Format("2006-01-02T15:04:05Z")}
	for _, s := range r.Scenarios {
		c := junitCase{Name: s.Name, Classname: "nodeprint." + r.Command, File: s.File, Time: s.Seconds, SystemOut: verdictText(&s)}
		if line := s.TimingLine(); line != "" {
			c.SystemOut += "\ntiming: " + line
		}
		for _, l := range s.ScaleInLines() {
			c.SystemOut += "\n" + l
		}
		switch s.Status {
		case Failed:
			c.Failure = &junitProblem{Message: "got " + verdictText(&s) + ", expected " + expectedText(&s), Type: "regression", Body: detail(&s)}
		case Error:
			c.Error = &junitProblem{Message: s.Error, Type: "environment", Body: s.Error}
		}
		suite.Cases = append(suite.Cases, c)
	}
	out := junitSuites{Name: "nodeprint", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: secs, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// detail is a failure's evidence and deviations as plain text.
func detail(s *Scenario) string {
	var b strings.Builder
	if v := s.Verdict; v != nil {
		if v.Reason != "" {
			b.WriteString(v.Reason + "\n")
		}
		if len(v.Fired) > 0 {
			for _, e := range v.Fired[0].Evidence {
				b.WriteString("evidence: " + e.String() + "\n")
			}
		}
	}
	if s.Diff != nil {
		for _, d := range s.Diff.Deviations {
			fmt.Fprintf(&b, "%s: baseline %s, observed %s (%s)\n", d.Path, d.Baseline, d.Observed, d.Severity)
		}
	}
	if line := s.TimingLine(); line != "" {
		b.WriteString("timing: " + line + "\n")
	}
	for _, l := range s.ScaleInLines() {
		b.WriteString(l + "\n")
	}
	if e := Effect(s.Baseline, s.Observed); e != "" && s.Fault == "" {
		b.WriteString("effect: " + e + "\n")
	}
	for _, l := range s.Inputs.Lines() {
		b.WriteString(l + "\n")
	}
	if s.Failure != "" {
		b.WriteString("failure: " + s.Failure + "\n")
	}
	if s.Runbook != "" {
		b.WriteString("runbook: " + s.Runbook + "\n")
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
