package sop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/lang"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/sop"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// repoInput loads the committed scenarios and fingerprints, as `make sop` does.
func repoInput(t *testing.T) *sop.Input {
	t.Helper()
	tc, err := toolchain.Find(toolchain.WithRoot("../.."))
	if err != nil {
		t.Fatal(err)
	}
	in, err := sop.Load(repo.Loader(tc), tc.Root, filepath.Join(tc.Root, "fixtures", "scenarios"), filepath.Join(tc.Root, "fingerprints"))
	if err != nil {
		t.Fatalf("loading the committed inputs (make tools builds the generic catalog they need): %v", err)
	}
	return in
}

func generate(t *testing.T, in *sop.Input) sop.Files {
	t.Helper()
	files, err := sop.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEveryRuleAndBaselineHasAPageInBothLanguages(t *testing.T) {
	in := repoInput(t)
	files := generate(t, in)
	for _, l := range lang.All {
		for _, p := range []string{l + "/README.md", l + "/runbook.html"} {
			if _, ok := files[p]; !ok {
				t.Errorf("no %s", p)
			}
		}
		html := string(files[l+"/runbook.html"])
		for _, r := range in.Rules.Rules {
			if _, ok := files[l+"/rules/"+r.ID+".md"]; !ok {
				t.Errorf("rule %s has no %s page", r.ID, l)
			}
			if !strings.Contains(html, `<section id="rule-`+r.ID+`"`) {
				t.Errorf("rule %s has no section in %s/runbook.html", r.ID, l)
			}
			page := string(files[l+"/rules/"+r.ID+".md"])
			if !strings.Contains(page, r.Title.In(l)) {
				t.Errorf("%s/rules/%s.md lacks the rule's %s title", l, r.ID, l)
			}
			// The rule's own meanwhile advice, where it has one, replaces
			// the layer's.
			meanwhile := in.Rules.Escalation[r.Layer].Meanwhile.In(l)
			if r.Meanwhile != nil {
				meanwhile = r.Meanwhile.In(l)
				if strings.Contains(page, in.Rules.Escalation[r.Layer].Meanwhile.In(l)) {
					t.Errorf("%s/rules/%s.md gives the layer's meanwhile beside the rule's own", l, r.ID)
				}
			}
			if !strings.Contains(page, meanwhile) {
				t.Errorf("%s/rules/%s.md lacks its meanwhile advice %q", l, r.ID, meanwhile)
			}
		}
		for _, b := range in.Baselines {
			if _, ok := files[l+"/baselines/"+b.Scenario+".md"]; !ok {
				t.Errorf("baseline %s has no %s page", b.Scenario, l)
			}
		}
	}
	if len(files) != 1+2*(2+len(in.Rules.Rules)+len(in.Baselines)) {
		t.Errorf("%d files, want the root README and, per language, index, HTML, %d rule and %d baseline pages: %v",
			len(files), len(in.Rules.Rules), len(in.Baselines), files.Paths())
	}
}

// The numbers on the pages are the committed fingerprints' numbers. The
// expected values are read from the YAML files directly, not through the
// generator's model.
func TestPageNumbersMatchTheCommittedFingerprints(t *testing.T) {
	in := repoInput(t)
	files := generate(t, in)
	for _, a := range in.Anomalies {
		raw := readYAML(t, repo.AnomalyPath(in.FingerprintsDir, a.Scenario))
		page := string(files["en/rules/"+a.Rule+".md"])
		if !strings.Contains(page, "### "+a.Scenario+"\n") {
			t.Errorf("en/rules/%s.md has no section for the recorded %s", a.Rule, a.Scenario)
			continue
		}
		section := page[strings.Index(page, "### "+a.Scenario+"\n")+1:]
		if end := strings.Index(section, "\n#"); end >= 0 {
			section = section[:end] // up to the next heading
		}
		for _, f := range []struct{ path, unit string }{
			{"selection.nodes", ""}, {"selection.hourlyCost", "$"}, {"outcomes.running", ""}, {"outcomes.pending", ""},
			{"outcomes.oomKilled", ""}, {"timing.podReady.p50", "s"}, {"timing.nodeClaimReady.p50", "s"},
			{"disruption.maxDisrupting", ""}, {"disruption.evicted", ""}, {"disruption.after.nodes", ""}, {"disruption.after.hourlyCost", "$"},
		} {
			clean, faulted := lookup(raw, "baseline."+f.path), lookup(raw, "faulted."+f.path)
			if clean == faulted {
				continue
			}
			want := fmt.Sprintf("| `%s`", f.path)
			row := lineWith(section, want)
			if row == "" {
				t.Errorf("%s: %s moved (%v → %v) but the page has no row for it", a.Scenario, f.path, clean, faulted)
				continue
			}
			for _, v := range []any{clean, faulted} {
				if s := format(v, f.unit); !strings.Contains(row, "| "+s+" |") {
					t.Errorf("%s: row %q lacks %s", a.Scenario, row, s)
				}
			}
		}
		for _, e := range raw["evidence"].([]any) {
			id := e.(map[string]any)["id"].(string)
			v := e.(map[string]any)["value"]
			if !strings.Contains(section, fmt.Sprintf("| `%s` | %v |", id, v)) {
				t.Errorf("%s: evidence %s = %v not on the page", a.Scenario, id, v)
			}
		}
	}
	for _, b := range in.Baselines {
		raw := readYAML(t, filepath.Join(in.FingerprintsDir, b.Scenario+".yaml"))
		page := string(files["en/baselines/"+b.Scenario+".md"])
		runs := raw["runs"]
		for _, sel := range raw["selections"].([]any) {
			m := sel.(map[string]any)
			if s := fmt.Sprintf("| %s | %s of %v runs |", format(m["hourlyCost"], "$"), fmt.Sprint(m["runs"]), runs); !strings.Contains(page, s) {
				t.Errorf("baselines/%s.md lacks %q", b.Scenario, s)
			}
		}
		for _, key := range []string{"podReadyP50", "podReadyP90", "nodeClaimReadyP50", "nodeClaimReadyP90"} {
			s := raw["timing"].(map[string]any)[key].(map[string]any)
			if want := "| " + format(s["median"], "s") + " |"; !strings.Contains(page, want) {
				t.Errorf("baselines/%s.md lacks the %s median %s", b.Scenario, key, want)
			}
		}
	}
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func lookup(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func format(v any, unit string) string {
	f, _ := v.(float64)
	switch unit {
	case "$":
		return fmt.Sprintf("$%.4f", f)
	case "s":
		return fmt.Sprintf("%v s", f)
	}
	return fmt.Sprint(f)
}

func lineWith(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestGenerateIsDeterministic(t *testing.T) {
	in := repoInput(t)
	a, b := generate(t, in), generate(t, in)
	for _, p := range a.Paths() {
		if !bytes.Equal(a[p], b[p]) {
			t.Errorf("%s differs between two generations", p)
		}
	}
}

// A changed threshold changes the rule's page, the index (triage and
// flowchart) and the HTML, and Compare reports exactly those.
func TestCompareFindsAChangedThreshold(t *testing.T) {
	in := repoInput(t)
	dir := t.TempDir()
	if err := sop.Write(dir, generate(t, in)); err != nil {
		t.Fatal(err)
	}
	if diffs := sop.Compare(dir, generate(t, in)); len(diffs) != 0 {
		t.Fatalf("fresh runbooks differ: %v", diffs)
	}
	changed := *in.Rules
	changed.Rules = append([]attribute.Rule(nil), in.Rules.Rules...)
	r := &changed.Rules[0]
	r.When = append([]attribute.Condition(nil), r.When...)
	r.When[0].Value++
	in.Rules = &changed
	got := sop.Compare(dir, generate(t, in))
	want := []string{"changed en/README.md", "changed en/rules/" + r.ID + ".md", "changed en/runbook.html",
		"changed zh/README.md", "changed zh/rules/" + r.ID + ".md", "changed zh/runbook.html"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Compare after a threshold change:\n got %v\nwant %v", got, want)
	}
}

func TestOneLanguageLeavesTheOtherAlone(t *testing.T) {
	in := repoInput(t)
	dir := t.TempDir()
	if err := sop.Write(dir, generate(t, in)); err != nil {
		t.Fatal(err)
	}
	en, err := sop.Generate(in, "en")
	if err != nil {
		t.Fatal(err)
	}
	if err := sop.Write(dir, en); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "zh", "runbook.html")); err != nil {
		t.Errorf("writing English only removed the Chinese runbook: %v", err)
	}
	for p := range en {
		if strings.HasPrefix(p, "zh/") {
			t.Errorf("--lang en generated %s", p)
		}
	}
}

func TestLoadRejectsAnAnomalyOfAnUnknownRule(t *testing.T) {
	tc, err := toolchain.Find(toolchain.WithRoot("../.."))
	if err != nil {
		t.Fatal(err)
	}
	fps := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fps, "faults"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tc.Root, "fingerprints", "faults", "crash-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(fps, "faults", "crash-loop.yaml")
	if err := os.WriteFile(bad, bytes.Replace(b, []byte("rule: L3-crash-loop"), []byte("rule: L3-gone"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = sop.Load(repo.Loader(tc), tc.Root, filepath.Join(tc.Root, "fixtures", "scenarios"), fps)
	var ie *sop.InputError
	if !errors.As(err, &ie) || ie.Path != bad || !strings.Contains(err.Error(), `"L3-gone"`) {
		t.Fatalf("err = %v, want an InputError naming %s and the rule", err, bad)
	}
}

func TestExpandRefusesWhatAShellWouldRead(t *testing.T) {
	got, err := sop.Expand("kubectl get pods -n <namespace> --field-selector spec.nodeName=<node>", sop.Vars{Namespace: "web-abcde", Node: "kwok-1.x"})
	if err != nil || got != "kubectl get pods -n web-abcde --field-selector spec.nodeName=kwok-1.x" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	for _, bad := range []string{"", "a;rm -rf /", "$(id)", "A", "a b", "-a"} {
		if _, err := sop.Expand("kubectl get ns <namespace>", sop.Vars{Namespace: bad}); err == nil {
			t.Errorf("Expand accepted namespace %q", bad)
		}
	}
	if got, err := sop.ExpandShows("nodeclaim/<nodepool>-", sop.Vars{NodePool: "a.b"}); err != nil || got != `nodeclaim/a\.b-` {
		t.Errorf("ExpandShows = %q, %v; want the value quoted", got, err)
	}
}

// Karpenter's metrics are not behind a Service on nodeprint's own cluster
// (Karpenter is a process there), so a runbook reaches them through
// <karpenter-metrics>: a plain URL, and an error where none is known.
func TestExpandKarpenterMetrics(t *testing.T) {
	got, err := sop.Expand("curl -sS <karpenter-metrics> | grep x", sop.Vars{KarpenterMetrics: "http://127.0.0.1:31077/metrics"})
	if err != nil || got != "curl -sS http://127.0.0.1:31077/metrics | grep x" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	for _, bad := range []string{"", "http://a;id", "http://a/$(id)", "file:///etc/passwd", "http://a b"} {
		if _, err := sop.Expand("curl <karpenter-metrics>", sop.Vars{KarpenterMetrics: bad}); err == nil {
			t.Errorf("Expand accepted metrics URL %q", bad)
		}
	}
}

// RunChecks runs commands as pasted into bash with pipefail: a kubectl that
// fails before a pipe is a failure, and output without the symptom is one.
func TestRunChecks(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\ncase \"$*\" in\n  *fail*) echo 'error: boom' >&2; exit 1;;\n  *) echo \"NAME STATUS\"; echo \"n1 NotReady $KUBECONFIG\";;\nesac\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &attribute.Rule{ID: "L1-x", Checks: []attribute.Check{
		{Command: "kubectl get nodes -l pool=<nodepool>", Shows: "NotReady"},
		{Command: "kubectl get fail | grep -v nothing"},
		{Command: "kubectl get nodes", Shows: "OOMKilled"},
		{Command: "kubectl get nodes <nodepool>", Shows: "/kc-<nodepool>"},
	}}
	res := sop.RunChecks(context.Background(), r, sop.Vars{NodePool: "p1"}, sop.WithBinDir(bin), sop.WithKubeconfig("/kc-p1"))
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	if p := res[0].Problem(); p != "" || res[0].Ran != "kubectl get nodes -l pool=p1" {
		t.Errorf("first check: ran %q, problem %q", res[0].Ran, p)
	}
	if p := res[1].Problem(); !strings.Contains(p, "failed") || !strings.Contains(p, "boom") {
		t.Errorf("a failing kubectl before a pipe: problem %q", p)
	}
	if p := res[2].Problem(); !strings.Contains(p, "does not show /OOMKilled/") {
		t.Errorf("missing symptom: problem %q", p)
	}
	if p := res[3].Problem(); p != "" {
		t.Errorf("shows with a placeholder: %q", p)
	}
	for _, c := range sop.RunChecks(context.Background(), r, sop.Vars{NodePool: "p1"}, sop.WithBinDir(bin), sop.WithoutSymptom()) {
		if c.Shows != "" {
			t.Errorf("WithoutSymptom kept %q", c.Shows)
		}
	}
}

// On a run without the fault, only evidence checks run, and a pattern
// that shows there is a problem: it cannot tell the fault from a healthy
// cluster (a table's header, a default expireAfter of 720h matched by
// "a number and a unit"). Context checks do not count there.
func TestEvidenceMustNotShowOnACleanRun(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'NAME CPU(cores) MEMORY'; echo 'api-1 1m 100Mi'; echo 720h\n"
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &attribute.Rule{ID: "L3-x", Checks: []attribute.Check{
		{Command: "kubectl top pods", Shows: `CPU\(cores\)`, Context: true},
		{Command: "kubectl get nodepool", Shows: "(?m)^[0-9]+[smh]"},
		{Command: "kubectl get hpa", Shows: "cpu: ([0-9]{4,}|[2-9][0-9]{2}|1[5-9][0-9])%/"},
		{Command: "kubectl get pods"},
	}}
	res := sop.RunChecks(context.Background(), r, sop.Vars{}, sop.WithBinDir(bin), sop.OnClean())
	if len(res) != 2 || res[0].Command != "kubectl get nodepool" || res[1].Command != "kubectl get hpa" || !res[0].Clean {
		t.Fatalf("on a clean run, want the two evidence checks, got %+v", res)
	}
	if p := res[0].Problem(); !strings.Contains(p, "on the clean run (no fault) shows /(?m)^[0-9]+[smh]/ too") || !strings.Contains(p, "mark the check context in rules.yaml") {
		t.Errorf("a pattern a healthy cluster matches: problem %q", p)
	}
	if p := res[1].Problem(); p != "" {
		t.Errorf("a pattern the healthy output does not match: problem %q", p)
	}
	// With the fault, a context check's pattern is still checked: it
	// says the command answered.
	faulted := sop.RunChecks(context.Background(), r, sop.Vars{}, sop.WithBinDir(bin))
	if len(faulted) != 4 || faulted[0].Problem() != "" || !strings.Contains(faulted[2].Problem(), "does not show") {
		t.Errorf("with the fault: %+v", faulted)
	}
}

// Every rule's evidence pattern is a valid one that an engineer can read;
// a check marked context says what a working command prints.
func TestContextChecksNameWhatAWorkingCommandShows(t *testing.T) {
	rs, err := attribute.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(slices.Clone(rs.Rules), *sop.CompareRule) {
		for i, c := range r.Checks {
			if c.Context && c.Shows == "" {
				t.Errorf("%s: checks[%d] is context and names nothing a working command shows", r.ID, i)
			}
		}
	}
}

// Unsettled is a command that failed with a transient answer: neither a
// failure with another answer nor a success that printed one to stderr.
func TestUnsettledIsAFailureWithATransientAnswer(t *testing.T) {
	const transient = "error: metrics not available yet"
	failed := errors.New("exit status 1")
	for _, c := range []struct {
		name string
		r    sop.CheckResult
		want bool
	}{
		{"failed, transient", sop.CheckResult{Err: failed, Stderr: transient}, true},
		{"failed, another answer", sop.CheckResult{Err: failed, Stderr: `error: the server doesn't have a resource type "nodeclaims"`}, false},
		{"succeeded, transient on stderr", sop.CheckResult{Stdout: "NAME MEMORY", Stderr: transient}, false},
	} {
		if got := c.r.Unsettled(); got != c.want {
			t.Errorf("%s: Unsettled() = %v, want %v", c.name, got, c.want)
		}
	}
}

// A transient answer (metrics-server without a sample yet) is asked again,
// within a bound; a command that stays transient fails with its answer.
func TestRunChecksAsksATransientAnswerAgain(t *testing.T) {
	// kubectl top's two messages for an empty metrics list: every pod
	// younger than two minutes, or one older (pods restarted in step).
	for _, answer := range []string{
		"error: metrics not available yet",
		"error: Metrics not available for pod leak-x/api-c8888c448-l7v44, age: 2m47.101666194s",
	} {
		t.Run(answer, func(t *testing.T) {
			bin := t.TempDir()
			seen := filepath.Join(t.TempDir(), "asked")
			fake := "#!/bin/sh\ncase \"$*\" in\n  *never*) echo '" + answer + "' >&2; exit 1;;\nesac\n" +
				"if [ -e " + seen + " ]; then echo 'NAME MEMORY'; echo 'api-1 250Mi'; else touch " + seen + "; echo '" + answer + "' >&2; exit 1; fi\n"
			if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			r := &attribute.Rule{ID: "L3-x", Checks: []attribute.Check{
				{Command: "kubectl top pods", Shows: "MEMORY"},
				{Command: "kubectl top pods never"},
			}}
			res := sop.RunChecks(context.Background(), r, sop.Vars{}, sop.WithBinDir(bin), sop.WithTransientRetry(time.Second, 10*time.Millisecond))
			if p := res[0].Problem(); p != "" {
				t.Errorf("a transient first answer: want the second one to count, got problem %q", p)
			}
			if p := res[1].Problem(); !strings.Contains(p, answer[len("error: "):]) {
				t.Errorf("an answer that stays transient: want it to fail with the answer, got %q", p)
			}
			if res[0].Unsettled() || !res[1].Unsettled() {
				t.Errorf("Unsettled: want false for the answer that settled and true for the one that stayed transient, got %v and %v", res[0].Unsettled(), res[1].Unsettled())
			}
		})
	}
}

func TestCheckPlanPlacesEveryRule(t *testing.T) {
	tc, err := toolchain.Find(toolchain.WithRoot("../.."))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := repo.Loader(tc).LoadDir(filepath.Join(tc.Root, "fixtures", "scenarios", "faults"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := attribute.Rules()
	if err != nil {
		t.Fatal(err)
	}
	plan, unplaced := sop.CheckPlan(rs, ss)
	if len(unplaced) > 0 {
		t.Fatalf("rules without a scenario to run their commands in: %v", unplaced)
	}
	placed := map[string]int{}
	for _, ids := range plan {
		for _, id := range ids {
			placed[id]++
		}
	}
	for _, r := range rs.Rules {
		if placed[r.ID] == 0 {
			t.Errorf("rule %s's commands run nowhere", r.ID)
		}
	}
	if !sop.Reproduced("L3-oom-killed", ss) || sop.Reproduced("L2-policy-violation", ss) {
		t.Errorf("Reproduced is wrong for the catalog")
	}
}

// A recorded anomaly whose evidence quotes a secret (an event message
// does) renders masked in every page.
func TestPagesAreRedacted(t *testing.T) {
	in := repoInput(t)
	if len(in.Anomalies) == 0 || len(in.Anomalies[0].Evidence) == 0 {
		t.Fatal("the repository's anomalies hold evidence")
	}
	in.Anomalies[0].Evidence[0].Detail = "event Failed: password=hunter2secret"
	files := generate(t, in)
	seen := false
	for _, p := range files.Paths() {
		if bytes.Contains(files[p], []byte("hunter2secret")) {
			t.Errorf("%s holds the secret", p)
		}
		seen = seen || bytes.Contains(files[p], []byte("password=[REDACTED]"))
	}
	if !seen {
		t.Error("no page shows the masked evidence: the test no longer reaches a page")
	}
}
