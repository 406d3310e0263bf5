package repo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindPrefersTheTeamRepositoryAboveTheWorkingDirectory(t *testing.T) {
	team := t.TempDir()
	if err := os.WriteFile(filepath.Join(team, ProjectFile), []byte("apiVersion: nodeprint.dev/v1alpha1\nkind: Project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	below := filepath.Join(team, "scenarios", "payments")
	if err := os.MkdirAll(below, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	for _, c := range []struct {
		name, wd, checkout string
		want               Layout
	}{
		{"below a team repository", below, "/src/nodeprint", TeamAt(team)},
		{"outside one, in a checkout", elsewhere, "/src/nodeprint", At("/src/nodeprint")},
		{"outside both", elsewhere, "", TeamAt(elsewhere)},
	} {
		if diff := cmp.Diff(c.want, Find(c.wd, c.checkout)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	if got, want := TeamAt(team).Scenario("checkout"), filepath.Join(team, "scenarios", "checkout.yaml"); got != want {
		t.Errorf("a team's scenarios are at its root: %s, want %s", got, want)
	}
	if got, want := At("/src/nodeprint").Scenario("smoke"), "/src/nodeprint/fixtures/scenarios/smoke.yaml"; got != want {
		t.Errorf("nodeprint's scenarios are under fixtures/: %s, want %s", got, want)
	}
}

func TestOutputsAreUnderOut(t *testing.T) {
	if got, want := Out("bench"), "out/bench"; got != want {
		t.Errorf("a tool's output: %s, want %s", got, want)
	}
	if got, want := SuiteReports, "out/suites"; got != want {
		t.Errorf("the suites' reports: %s, want %s", got, want)
	}
}
