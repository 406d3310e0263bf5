package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	runpkg "github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
	"github.com/nodeprint/nodeprint/pkg/verify"
)

// These cases need no cluster: they fail before anything starts.
func TestExitCodes(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	cases := []struct {
		args    []string
		code    int
		message string
	}{
		{[]string{"cluster", "up", "--name", "Bad_Name"}, exitUsage, "invalid cluster name"},
		{[]string{"cluster", "up", "--name", strings.Repeat("a", 41)}, exitUsage, "invalid cluster name"},
		{[]string{"cluster", "up", "--nmae", "x"}, exitUsage, "unknown flag"},
		{[]string{"cluster", "status", "--provider", "eks"}, exitUsage, "unknown cluster provider"},
		{[]string{"cluster", "down", "--provider", "existing", "--kubeconfig", "/nonexistent/kubeconfig"}, exitUsage, "kubeconfig /nonexistent/kubeconfig"},
		{[]string{"cluster", "status", "--provider", "existing", "--kubeconfig", "main.go"}, exitUsage, "kubeconfig main.go"},
		{[]string{"run", "--provider", "existing", "--cluster", "x", "web-service"}, exitUsage, "--cluster names a local cluster"},
		{[]string{"run", "--provider", "kind", "--kubeconfig", "x", "web-service"}, exitUsage, "--kubeconfig and --catalog are for --provider existing"},
		{[]string{"run", "--provider", "existing", "--catalog", "/nonexistent.json", "web-service"}, exitUsage, "--catalog"},
		{[]string{"run", "--karpenter-in-cluster", "web-service"}, exitUsage, "--karpenter-in-cluster needs --provider kind"},
		{[]string{"cluster", "up", "--karpenter-in-cluster", "--name", "x"}, exitUsage, "only the kind provider can"},
		{[]string{"run", "--provider", "kind", "--karpenter-in-cluster", "--karpenter-binary", "/bin/true", "web-service"}, exitUsage, "run your binary as a process"},
		{[]string{"run", "--provider", "kind", "--karpenter-in-cluster", "../../fixtures/scenarios/faults/apiserver-degraded.yaml"}, exitUsage, "spec.fault.name: apiserver-degraded acts on Karpenter as a process"},
		{[]string{"verify", "--karpenter-version", "latest", "web-service"}, exitUsage, "want a release tag"},
		{[]string{"run", "--karpenter-binary", "/nonexistent/karpenter-kwok", "web-service"}, exitUsage, "--karpenter-binary: stat /nonexistent/karpenter-kwok"},
		{[]string{"run", "--karpenter-binary", "main.go", "web-service"}, exitUsage, "not an executable file"},
		{[]string{"run", "--karpenter-binary", "/bin/true", "web-service"}, exitUsage, "would listen on every interface"},
		{[]string{"run", "--karpenter-binary", "/bin/true", "--karpenter-version", "v1.15.0", "web-service"}, exitUsage, "give one"},
		{[]string{"verify", "--karpenter-binary", "/bin/true", "--cluster", "x", "web-service"}, exitUsage, "leave out --cluster"},
		{[]string{"cluster", "restart", "kubelet"}, exitUsage, "not a component; want one of etcd, kube-apiserver"},
		{[]string{"cluster", "restart"}, exitUsage, "accepts 1 arg"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{[]string{"cluster", "explode"}, exitUsage, "unknown command"},
		{[]string{"cluster"}, exitUsage, "needs a command"},
		{[]string{"cluster", "kubeconfig", "--name", "never-started-xyz"}, exitEnvironment, "no cluster named"},
		{[]string{"cluster", "status", "--name", "never-started-xyz"}, exitEnvironment, "no cluster named"},
		{[]string{"cluster", "down", "--name", "never-started-xyz"}, exitOK, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(context.Background(), c.args, &out, &errOut)
			if got != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, c.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.message) {
				t.Fatalf("stderr %q does not say %q", errOut.String(), c.message)
			}
		})
	}
}

// A bad scenario fails before any cluster is started: nothing is applied.
func TestBadScenarioAppliesNothing(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte(`apiVersion: nodeprint.dev/v1alpha1
kind: Scenario
metadata: {name: bad}
spec:
  policy: {nodePoolRef: general-purpose}
  workloads:
  - name: web
    replicas: 3
    requests: {cpu: abc}
    colour: blue
`), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir("../../.work/clusters")
	for _, cmd := range []string{"verify", "record"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{cmd, bad}, &out, &errOut)
		if code != exitUsage {
			t.Fatalf("%s: exit %d, want %d; stderr:\n%s", cmd, code, exitUsage, errOut.String())
		}
		for _, want := range []string{bad + ":9: spec.workloads[0].requests.cpu", bad + ":10: spec.workloads[0].colour: unknown field"} {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, want, errOut.String())
			}
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"verify", "no-such-scenario"}, &out, &errOut); code != exitUsage {
		t.Fatalf("unknown scenario: exit %d, want 2; stderr:\n%s", code, errOut.String())
	}
	after, _ := os.ReadDir("../../.work/clusters")
	if len(after) != len(before) {
		t.Fatalf("a cluster directory appeared: %v -> %v", before, after)
	}
}

func TestBadFaultScenarioAppliesNothing(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	dir := t.TempDir()
	head := `apiVersion: nodeprint.dev/v1alpha1
kind: Scenario
metadata: {name: bad}
spec:
  policy: {nodePoolRef: general-purpose}
  workloads:
  - name: web
    replicas: 3
    requests: {cpu: 1, memory: 1Gi}
  fault:
`
	cases := map[string]struct{ fault, want string }{
		"unknown fault":   {"    name: disk-full\n", ":11: spec.fault.name: unknown fault \"disk-full\""},
		"unknown param":   {"    name: memory-leak\n    params: {speed: 3}\n", ":12: spec.fault.params.speed: fault memory-leak has no parameter"},
		"bad quantity":    {"    name: memory-leak\n    params: {rate: fast}\n", "spec.fault.params.rate: \"fast\" is not a positive quantity"},
		"wrong layer":     {"    name: slow-boot\n    expect: {layer: L2}\n", "spec.fault.expect.layer: fault slow-boot is a L1 fault"},
		"no memory limit": {"    name: memory-leak\n", "workload web has no memory limit"},
	}
	before, _ := os.ReadDir("../../.work/clusters")
	for name, tc := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(path, []byte(head+tc.fault), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"run", path}, {"attribute", "--matrix", path}, {"record", path}} {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), args, &out, &errOut); code != exitUsage {
				t.Errorf("%s, %s: exit %d, want %d; stderr:\n%s", name, args[0], code, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), path) || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("%s, %s: stderr lacks %s and %q:\n%s", name, args[0], path, tc.want, errOut.String())
			}
		}
	}
	after, _ := os.ReadDir("../../.work/clusters")
	if len(after) != len(before) {
		t.Fatalf("a cluster directory appeared: %v -> %v", before, after)
	}
}

func TestFaultsAndRulesList(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"faults"}, &out, &errOut); code != exitOK {
		t.Fatalf("faults: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"memory-leak (L3)", "capacity-shortage (L1)", "nodepool-limits (L2)", "param rate",
		"kind      every fault; scenarios whose workloads scale with an HPA are refused", "existing  L2 and L3 faults only"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("faults output lacks %q", want)
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"rules"}, &out, &errOut); code != exitOK {
		t.Fatalf("rules: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"L1-insufficient-capacity", "L3-oom-killed", "pods.oomKilled"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rules output lacks %q", want)
		}
	}
}

// The run flags of the reports issue fail before any cluster starts.
func TestRunAndExplainFlags(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	cases := []struct {
		args    []string
		message string
	}{
		{[]string{"run", "web-service", "--shard", "4/3"}, "want I/N"},
		{[]string{"run", "web-service", "--shard", "x"}, "want I/N"},
		{[]string{"run", "web-service", "--parallel", "0"}, "out of range"},
		{[]string{"run", "web-service", "--parallel", "99"}, "out of range"},
		{[]string{"verify", "web-service", "--repeat", "0"}, "want auto, or a number of runs from 1 to 20"},
		{[]string{"verify", "web-service", "--repeat", "often"}, "want auto, or a number of runs from 1 to 20"},
		{[]string{"explain"}, "either --cluster"},
		{[]string{"explain", "--cluster", "a", "--kubeconfig", "b"}, "either --cluster"},
		{[]string{"explain", "extra", "--kubeconfig", "b"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(context.Background(), c.args, &out, &errOut); code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.message) {
				t.Fatalf("stderr %q does not say %q", errOut.String(), c.message)
			}
		})
	}
}

// An environment failure is exit 3 whichever way it arrives: as a run's
// error (record stops at it) or as scenarios in error in a report, even
// beside a wrong attribution.
func TestEnvironmentFailureExitsThree(t *testing.T) {
	envErr := &runpkg.EnvironmentError{Run: "web-service-abcde", Down: []string{"karpenter"}}
	if got := exitCode(context.Background(), fmt.Errorf("scenario web-service, run 1 of 3: %w", envErr)); got != exitEnvironment {
		t.Fatalf("a wrapped EnvironmentError exits %d, want %d", got, exitEnvironment)
	}
	s := webService(t)
	rep := report.New("run", time.Now())
	rep.Add(verify.ReportError(s, envErr))
	wrong := verify.ReportScenario(s)
	wrong.Name, wrong.Status = "other", report.Failed
	rep.Add(wrong)
	var out, errOut bytes.Buffer
	got := finishReport(context.Background(), &out, &errOut, rep, &scenarioFlags{}, false, envErr)
	if code := exitCode(context.Background(), got); code != exitEnvironment {
		t.Fatalf("exit %d, want %d (%v)", code, exitEnvironment, got)
	}
	if rep.Summary.ExitCode != exitEnvironment {
		t.Fatalf("the report records exit %d, want %d", rep.Summary.ExitCode, exitEnvironment)
	}
	for i := range rep.Scenarios {
		if rep.Scenarios[i].Name == "web-service" {
			printScenario(&out, &rep.Scenarios[i])
		}
	}
	if !strings.Contains(out.String(), "ERROR web-service") || !strings.Contains(out.String(), "inconclusive (environment): run web-service-abcde") {
		t.Fatalf("the scenario line must say inconclusive (environment):\n%s", out.String())
	}
}

// Only a signal the process received makes a command "interrupted" (130).
// A run whose waits the supervisor cancelled because Karpenter died is an
// environment failure (3) even where its error chain still holds a
// context.Canceled: before the fix, finishReport turned such a chain into
// "interrupted" and the lifecycle spec "Karpenter killed while the
// workloads are applied" failed 4 of 10 times.
func TestOnlyASignalIsAnInterruption(t *testing.T) {
	cancelled := &runpkg.EnvironmentError{Run: "web-service-abcde", Down: []string{"karpenter"},
		Err: fmt.Errorf("failed to create Deployment web: %w", context.Canceled)}
	s := webService(t)
	report1 := func() *report.Report {
		rep := report.New("run", time.Now())
		rep.Add(verify.ReportError(s, cancelled))
		return rep
	}

	t.Run("no signal: environment", func(t *testing.T) {
		rep := report1()
		var out, errOut bytes.Buffer
		got := finishReport(context.Background(), &out, &errOut, rep, &scenarioFlags{}, false, cancelled)
		if code := exitCode(context.Background(), got); code != exitEnvironment {
			t.Fatalf("exit %d, want %d: %v", code, exitEnvironment, got)
		}
		if rep.Summary.ExitCode != exitEnvironment {
			t.Fatalf("the report records exit %d, want %d", rep.Summary.ExitCode, exitEnvironment)
		}
		// A context cancelled without a signal (a caller's own cancel)
		// is no interruption either.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if code := exitCode(ctx, got); code != exitEnvironment {
			t.Fatalf("with a cancelled context and no signal: exit %d, want %d", code, exitEnvironment)
		}
	})

	t.Run("SIGINT received: interrupted", func(t *testing.T) {
		ctx, stop := notifyContext(context.Background())
		defer stop()
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the signal did not cancel the command's context within 10 s")
		}
		if !strings.Contains(context.Cause(ctx).Error(), "interrupt") {
			t.Fatalf("the context's cause does not name the signal: %v", context.Cause(ctx))
		}
		rep := report1()
		var out, errOut bytes.Buffer
		got := finishReport(ctx, &out, &errOut, rep, &scenarioFlags{}, false, cancelled)
		if code := exitCode(ctx, got); code != exitInterrupted {
			t.Fatalf("exit %d, want %d: %v", code, exitInterrupted, got)
		}
		if rep.Summary.ExitCode != exitInterrupted || !strings.Contains(got.Error(), "interrupted before they completed") {
			t.Fatalf("the report records exit %d (%v), want %d and the interruption", rep.Summary.ExitCode, got, exitInterrupted)
		}
	})
}

// webService loads the committed web-service scenario, as the CLI would.
func webService(t *testing.T) *scenario.Scenario {
	t.Helper()
	t.Setenv("NODEPRINT_ROOT", "../..")
	tc, err := toolchain.Find()
	if err != nil {
		t.Fatal(err)
	}
	s, err := repo.Loader(tc).LoadFiles("../../fixtures/scenarios/web-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s[0]
}
