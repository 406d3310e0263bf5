package sop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Vars are the values of a runbook command's placeholders.
type Vars struct {
	Namespace string
	NodePool  string
	Node      string
	// KarpenterMetrics is the URL of Karpenter's Prometheus metrics.
	KarpenterMetrics string
}

// A placeholder's value goes into a command an engineer pastes into a
// shell, so it must match its kind of value and nothing a shell reads.
type placeholderDef struct {
	value func(Vars) string
	safe  *regexp.Regexp
	what  string
	// unknown, when set, is the error for an empty value.
	unknown string
}

var (
	kubeName     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	placeholders = map[string]placeholderDef{
		"<namespace>": {value: func(v Vars) string { return v.Namespace }, safe: kubeName, what: "a Kubernetes name"},
		"<nodepool>":  {value: func(v Vars) string { return v.NodePool }, safe: kubeName, what: "a Kubernetes name"},
		"<node>":      {value: func(v Vars) string { return v.Node }, safe: kubeName, what: "a Kubernetes name"},
		"<karpenter-metrics>": {value: func(v Vars) string { return v.KarpenterMetrics },
			safe: regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._/-]*)?$`), what: "a plain http URL",
			unknown: "the cluster's Karpenter metrics URL is not known"},
	}
	placeholder = regexp.MustCompile(strings.Join(slices.Sorted(maps.Keys(placeholders)), "|"))
)

// Expand fills in a command's placeholders.
func Expand(command string, v Vars) (string, error) {
	return expand(command, v, func(s string) string { return s })
}

// ExpandShows fills in the placeholders of a shows pattern, so that a
// pattern can insist on the run's own objects (an event of another run
// must not pass for this one's).
func ExpandShows(pattern string, v Vars) (string, error) {
	return expand(pattern, v, regexp.QuoteMeta)
}

func expand(s string, v Vars, quote func(string) string) (string, error) {
	var errs []error
	out := placeholder.ReplaceAllStringFunc(s, func(p string) string {
		def := placeholders[p]
		val := def.value(v)
		switch {
		case val == "" && def.unknown != "":
			errs = append(errs, fmt.Errorf("placeholder %s: %s", p, def.unknown))
		case !def.safe.MatchString(val):
			errs = append(errs, fmt.Errorf("placeholder %s: %q is not %s", p, val, def.what))
		}
		return quote(val)
	})
	return out, errors.Join(errs...)
}

// VarsFor names the run's namespace and NodePool (both are the run id) and
// the node a node-level command should look at: a NotReady node when there
// is one (that is the node the runbook is about), else the first by name.
func VarsFor(run string, ob *observe.Observation) Vars {
	v := Vars{Namespace: run, NodePool: run}
	var names []string
	for name, n := range ob.Nodes {
		if n.Deleted.IsZero() {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if ob.Nodes[name].NotReady {
			v.Node = name
			return v
		}
	}
	if len(names) > 0 {
		v.Node = names[0]
	}
	return v
}

// CheckResult is one runbook command run against a cluster.
type CheckResult struct {
	Rule string
	// Command is the command as the runbook prints it; Ran is what ran.
	Command string
	Ran     string
	// Shows is the pattern the runbook says the output shows ("" when it
	// names none).
	Shows string
	// Clean says the command ran on a run without the fault (OnClean):
	// its evidence pattern must not show there.
	Clean  bool
	Stdout string
	Stderr string
	Err    error
}

// Unsettled says the command failed with a transient answer (kubectl
// top's "metrics not available") that lasted its whole settle bound: what
// it waited for is in the metrics pipeline, not in the command.
func (c CheckResult) Unsettled() bool { return c.Err != nil && isTransient(c.Stderr) }

// Problem says what is wrong with the result, or "" when the command
// succeeded and its output shows what the runbook says: with the fault,
// the pattern; on a clean run, not the pattern (one a healthy cluster
// matches cannot tell the fault from it).
func (c CheckResult) Problem() string {
	matched := c.Shows != "" && regexp.MustCompile(c.Shows).MatchString(c.Stdout)
	switch {
	case c.Err != nil:
		return fmt.Sprintf("%s: %s failed: %v\nstderr: %s", c.Rule, c.Ran, c.Err, strings.TrimSpace(c.Stderr))
	case c.Clean && matched:
		return fmt.Sprintf("%s: the output of %s on the clean run (no fault) shows /%s/ too: the pattern cannot tell the fault from a healthy cluster; "+
			"make it one only the fault produces, or mark the check context in rules.yaml:\n%s", c.Rule, c.Ran, c.Shows, c.Stdout)
	case !c.Clean && c.Shows != "" && !matched:
		return fmt.Sprintf("%s: the output of %s does not show /%s/:\n%s", c.Rule, c.Ran, c.Shows, c.Stdout)
	}
	return ""
}

type checkOptions struct {
	kubeconfig string
	binDir     string
	timeout    time.Duration
	noSymptom  bool
	clean      bool
	// settle bounds the re-runs of a command whose answer is transient,
	// retry is the pause between them.
	settle, retry time.Duration
}

// transient are answers that mean "ask again shortly", as an engineer
// would: metrics-server has no sample yet for pods that just (re)started,
// which a fault that restarts them (OOM kills) does all the time. kubectl
// top says so in two ways for the same condition (the namespace's metrics
// list is empty): "metrics not available yet" while every pod is younger
// than two minutes, "Metrics not available for pod <ns>/<name>, age: …"
// once one is older (k8s.io/kubectl pkg/cmd/top, verifyEmptyMetrics). Pods
// restarted in step by a leak are older than two minutes and have no sample.
var transient = []string{"metrics not available yet", "Metrics not available for pod "}

// CheckOption configures RunChecks.
type CheckOption func(*checkOptions)

// WithKubeconfig sets KUBECONFIG for the commands (default: inherited).
func WithKubeconfig(path string) CheckOption { return func(o *checkOptions) { o.kubeconfig = path } }

// WithBinDir puts dir first on PATH, so that `kubectl` is the project's
// pinned one (default: PATH as inherited).
func WithBinDir(dir string) CheckOption { return func(o *checkOptions) { o.binDir = dir } }

// WithCommandTimeout bounds each command (default 30 s).
func WithCommandTimeout(d time.Duration) CheckOption { return func(o *checkOptions) { o.timeout = d } }

// WithTransientRetry re-runs a command whose answer is transient (such
// as kubectl top's "metrics not available yet") every retry for up to
// settle (default every 5 s for up to 90 s: metrics-server scrapes every
// 15 s and needs two samples).
func WithTransientRetry(settle, retry time.Duration) CheckOption {
	return func(o *checkOptions) { o.settle, o.retry = settle, retry }
}

// WithoutSymptom checks only that the commands succeed: for a rule whose
// pattern the running fault does not reproduce.
func WithoutSymptom() CheckOption { return func(o *checkOptions) { o.noSymptom = true } }

// OnClean runs only the rule's evidence checks (attribute.Check.Evidence),
// on a run without the fault, and expects their patterns not to show: the
// other half of telling the pattern from a healthy cluster.
func OnClean() CheckOption { return func(o *checkOptions) { o.clean = true } }

// RunChecks runs a rule's commands as an engineer would paste them into
// bash (with pipefail, so that a failing kubectl before a pipe counts).
func RunChecks(ctx context.Context, r *attribute.Rule, v Vars, opts ...CheckOption) []CheckResult {
	o := &checkOptions{timeout: 30 * time.Second, settle: 90 * time.Second, retry: 5 * time.Second}
	for _, f := range opts {
		f(o)
	}
	env := os.Environ()
	if o.kubeconfig != "" {
		env = append(env, "KUBECONFIG="+o.kubeconfig)
	}
	if o.binDir != "" {
		env = append(env, "PATH="+o.binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	var out []CheckResult
	for _, c := range r.Checks {
		if o.clean && !c.Evidence() {
			continue
		}
		res := CheckResult{Rule: r.ID, Command: c.Command, Shows: c.Shows, Clean: o.clean}
		if o.noSymptom {
			res.Shows = ""
		}
		res.Ran, res.Err = Expand(c.Command, v)
		if res.Err == nil && res.Shows != "" {
			res.Shows, res.Err = ExpandShows(res.Shows, v)
		}
		if res.Err == nil {
			res.Stdout, res.Stderr, res.Err = runSettled(ctx, res.Ran, env, o)
		}
		out = append(out, res)
	}
	return out
}

// runSettled runs command, again while its answer is transient, for up
// to o.settle; the last answer is the result.
func runSettled(ctx context.Context, command string, env []string, o *checkOptions) (string, string, error) {
	deadline := time.Now().Add(o.settle)
	for {
		stdout, stderr, err := runBash(ctx, command, env, o.timeout)
		if err == nil || !isTransient(stderr) || time.Now().Add(o.retry).After(deadline) {
			return stdout, stderr, err
		}
		select {
		case <-ctx.Done():
			return stdout, stderr, err
		case <-time.After(o.retry):
		}
	}
}

func isTransient(stderr string) bool {
	for _, t := range transient {
		if strings.Contains(stderr, t) {
			return true
		}
	}
	return false
}

func runBash(ctx context.Context, command string, env []string, timeout time.Duration) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %s: %w", timeout, err)
	}
	return stdout.String(), stderr.String(), err
}

// CheckPlan says which rules' commands to run during which fault
// scenario's faulted run: each scenario runs its expected rule's commands;
// a rule that no scenario expects (no fault in the catalog reproduces it)
// runs during the first scenario of its layer, where its commands can show
// that they work but not the symptom; the baseline pages' compare command
// (CompareRule) runs during the first scenario. Unplaced lists rules whose
// layer has no scenario at all.
func CheckPlan(rs *attribute.RuleSet, faultScenarios []*scenario.Scenario) (plan map[string][]string, unplaced []string) {
	plan = map[string][]string{}
	expected := map[string]bool{}
	firstOfLayer := map[layer.Layer]string{}
	names := make([]string, 0, len(faultScenarios))
	byName := map[string]*scenario.Scenario{}
	for _, s := range faultScenarios {
		names = append(names, s.Metadata.Name)
		byName[s.Metadata.Name] = s
	}
	sort.Strings(names)
	for _, n := range names {
		f := byName[n].Spec.Fault
		if f == nil || f.Expect == nil || f.Expect.Rule == "" {
			continue
		}
		plan[n] = append(plan[n], f.Expect.Rule)
		expected[f.Expect.Rule] = true
		if _, ok := firstOfLayer[f.Expect.Layer]; !ok {
			firstOfLayer[f.Expect.Layer] = n
		}
	}
	if len(names) > 0 {
		plan[names[0]] = append(plan[names[0]], CompareRule.ID)
	}
	for _, r := range rs.Rules {
		if expected[r.ID] {
			continue
		}
		if n, ok := firstOfLayer[r.Layer]; ok {
			plan[n] = append(plan[n], r.ID)
		} else {
			unplaced = append(unplaced, r.ID)
		}
	}
	return plan, unplaced
}

// Reproduced reports whether a rule is some fault scenario's expectation,
// so that its commands are tested against the symptom.
func Reproduced(ruleID string, faultScenarios []*scenario.Scenario) bool {
	for _, s := range faultScenarios {
		if f := s.Spec.Fault; f != nil && f.Expect != nil && f.Expect.Rule == ruleID {
			return true
		}
	}
	return false
}
