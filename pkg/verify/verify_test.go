package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/layer"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

func load(t *testing.T, name string) *scenario.Scenario {
	t.Helper()
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json", ValidateFault: faults.Validate}
	s, err := l.Load("../../fixtures/scenarios/" + name + ".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEnvironmentErrorIsReportedAsInconclusiveEnvironment(t *testing.T) {
	s := load(t, "web-service")
	cause := errors.New("failed to create Deployment: connection refused")
	err := error(&run.EnvironmentError{Run: "web-service-abcde", Err: cause, Incidents: []supervise.Incident{
		{At: time.Now(), Component: "kube-apiserver", What: "exited (pid 42)"},
		{At: time.Now(), Component: "kube-apiserver", What: "restarted (pid 42 → 43)"},
	}})
	if !errors.Is(err, cause) {
		t.Fatal("the run's own error must stay reachable with errors.Is")
	}
	want := "run web-service-abcde: the environment failed: kube-apiserver exited (pid 42); kube-apiserver restarted (pid 42 → 43) (then: failed to create Deployment: connection refused)"
	if err.Error() != want {
		t.Fatalf("Error() =\n%s\nwant\n%s", err.Error(), want)
	}
	sc := ReportError(s, err)
	if sc.Status != report.Error || sc.Verdict == nil || !sc.Verdict.EnvironmentFailed() || sc.Verdict.Layer != "" {
		t.Fatalf("want an error with verdict inconclusive (environment) and no layer, got status %s verdict %+v", sc.Status, sc.Verdict)
	}
	if !strings.Contains(sc.Verdict.Reason, "kube-apiserver exited (pid 42)") {
		t.Fatalf("the verdict must say what failed: %s", sc.Verdict.Reason)
	}
}

func TestEnvironmentErrorWithoutIncidentsNamesWhatIsDown(t *testing.T) {
	s := load(t, "web-service")
	sc := ReportError(s, &run.EnvironmentError{Run: "r", Down: []string{"karpenter"}})
	if !strings.Contains(sc.Error, "karpenter down") || !strings.Contains(sc.Verdict.Reason, "karpenter down") {
		t.Fatalf("got error %q, reason %q", sc.Error, sc.Verdict.Reason)
	}
}

func TestOtherErrorsCarryNoVerdict(t *testing.T) {
	sc := ReportError(load(t, "web-service"), errors.New("failed to create Namespace: forbidden"))
	if sc.Status != report.Error || sc.Verdict != nil {
		t.Fatalf("a plain error is an error without a verdict, got %s %+v", sc.Status, sc.Verdict)
	}
}

func TestPreflightCatchesFaultsThatCannotBind(t *testing.T) {
	s := load(t, "web-service")
	s.CatalogPath = "../../fixtures/catalogs/aws-small.json"
	s.Spec.Workloads[0].Limits = nil
	s.Spec.Fault = &scenario.Fault{Name: "memory-leak"}
	if err := Preflight(context.Background(), s); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("a leak without a memory limit: got %v", err)
	}
	s.Spec.Fault = &scenario.Fault{Name: "nodepool-mismatch"}
	if err := Preflight(context.Background(), s); err != nil {
		t.Fatalf("a fault that binds: %v", err)
	}
}

// One pass rule for both kinds of scenario: the CLI's run and verify and
// the suites take their status from it.
func TestPasses(t *testing.T) {
	plain := load(t, "web-service")
	fault := load(t, "web-service")
	fault.Spec.Fault = &scenario.Fault{Name: "nodepool-mismatch", Expect: &scenario.Expectation{Layer: layer.L2, Rule: "L2-nodepool-excludes-fitting-instances"}}
	anyRule := load(t, "web-service")
	anyRule.Spec.Fault = &scenario.Fault{Name: "nodepool-mismatch", Expect: &scenario.Expectation{Layer: layer.L2}}
	unexpected := load(t, "web-service")
	unexpected.Spec.Fault = &scenario.Fault{Name: "nodepool-mismatch"}
	none := &attribute.Verdict{Verdict: attribute.None}
	inconclusive := &attribute.Verdict{Verdict: attribute.Inconclusive}
	l2 := &attribute.Verdict{Verdict: attribute.LayerVerdict(layer.L2), Layer: layer.L2, Rule: "L2-nodepool-excludes-fitting-instances"}
	l2other := &attribute.Verdict{Verdict: attribute.LayerVerdict(layer.L2), Layer: layer.L2, Rule: "L2-nodepool-limits"}
	l3 := &attribute.Verdict{Verdict: attribute.LayerVerdict(layer.L3), Layer: layer.L3, Rule: "L3-crash-loop"}
	for _, c := range []struct {
		name string
		s    *scenario.Scenario
		v    *attribute.Verdict
		want bool
	}{
		{"plain, none", plain, none, true},
		{"plain, a rule fired without a regression", plain, l3, false},
		{"plain, regressed and unexplained", plain, inconclusive, false},
		{"plain, no verdict", plain, nil, false},
		{"fault, expected layer and rule", fault, l2, true},
		{"fault, expected layer, other rule", fault, l2other, false},
		{"fault expecting a layer only, any of its rules", anyRule, l2other, true},
		{"fault, other layer", fault, l3, false},
		{"fault, none", fault, none, false},
		{"fault without an expectation", unexpected, l2, false},
	} {
		if got := Passes(c.s, c.v); got != c.want {
			t.Errorf("%s: Passes = %v, want %v", c.name, got, c.want)
		}
	}
}

// verify --repeat 1 or 2 against a baseline of ten runs could never fail
// on a latency or Karpenter's usage (the smallest p is 1/11 or 1/66,
// above 0.01): refused before anything runs, as is a baseline too small
// for the runs auto would make.
func TestAVerificationThatCannotDecideIsRefused(t *testing.T) {
	s := load(t, "web-service")
	ten := &fingerprint.Baseline{Scenario: "web-service", Runs: 10}
	for _, c := range []struct {
		b      *fingerprint.Baseline
		repeat Repeat
		want   string
	}{
		{ten, 1, "use --repeat auto or at least 3"},
		{ten, 2, "use --repeat auto or at least 3"},
		{ten, 3, ""},
		{ten, RepeatAuto, ""},
		{&fingerprint.Baseline{Scenario: "web-service", Runs: 1}, RepeatAuto, "record more runs"},
	} {
		err := CheckDecidable(s, c.b, "fingerprints/web-service.yaml", c.repeat)
		var ue *UndecidableError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d recorded, repeat %d: %v, want decidable", c.b.Runs, c.repeat, err)
		case c.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "fingerprints/web-service.yaml")):
			t.Errorf("%d recorded, repeat %d: %v, want an *UndecidableError naming the baseline and saying %q", c.b.Runs, c.repeat, err, c.want)
		}
	}
}
