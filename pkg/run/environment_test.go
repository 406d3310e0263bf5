package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/supervise"
)

func TestEnvironmentErrorIsReportedAsInconclusiveEnvironment(t *testing.T) {
	s := load(t, "web-service")
	cause := errors.New("failed to create Deployment: connection refused")
	err := error(&EnvironmentError{Run: "web-service-abcde", Err: cause, Incidents: []supervise.Incident{
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
	sc := ReportError(s, &EnvironmentError{Run: "r", Down: []string{"karpenter"}})
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
