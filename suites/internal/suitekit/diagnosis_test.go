package suitekit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The diagnosis quotes the lines that say why a pod has no metrics and
// leaves out the components' routine errors; a log with none of them is
// named as silent.
func TestPipelineDiagnosisQuotesTheMetricsErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("metrics-server.log",
		`E1206 00:00:16.577652   13102 configmap_cafile_content.go:246] "Unhandled Error" err="missing content for CA bundle"`,
		`E1206 00:01:02.000000   13102 scraper.go:149] "Failed to scrape node, timeout to access kubelet" err="context deadline exceeded" node="general-purpose-x7k2p" timeout="10s"`,
		`I1206 00:01:02.100000   13102 scraper.go:121] "Scraping metrics from nodes" nodes=["general-purpose-x7k2p"] nodeCount=1`,
		`I1206 00:01:17.000000   13102 decode.go:104] "Failed getting complete Pod metric" pod="leak-x/api-1"`,
		`I1206 00:01:17.010000   13102 scraper.go:172] "Scrape finished" duration="12.3ms" nodeCount=1 podCount=0`,
	)
	write("kwok-controller.log",
		`{"level":"ERROR","msg":"failed to apply stage","err":"failed to delete pod worker-1: not found","stage":"pod-delete"}`,
		`{"level":"INFO","msg":"metrics updated"}`,
	)
	got := pipelineDiagnosis(dir)
	for _, want := range []string{"Failed to scrape node, timeout to access kubelet", `"Failed getting complete Pod metric" pod="leak-x/api-1"`, "podCount=0", "kwok-controller.log has no line about scrapes or metrics"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in the diagnosis, got:\n%s", want, got)
		}
	}
	for _, noise := range []string{"CA bundle", "Scraping metrics from nodes", "failed to apply stage", "metrics updated"} {
		if strings.Contains(got, noise) {
			t.Errorf("the diagnosis quotes a routine line (%q):\n%s", noise, got)
		}
	}

	write("kwok-controller.log", `{"time":"2026-12-06T00:10:30Z","level":"WARN","source":{"function":"f","file":"metrics.go","line":212},"msg":"pod not found","id":"vm_1","node":"n1","pod":{"Name":"api-1","Namespace":"leak-x"}}`)
	if got, want := pipelineDiagnosis(dir), "2026-12-06T00:10:30Z WARN pod not found node=n1 pod=map[Name:api-1 Namespace:leak-x]"; !strings.Contains(got, want) || strings.Contains(got, "metrics.go") {
		t.Errorf("a pod KWOK's metrics could not find: want it quoted compactly (%q), without its source, got:\n%s", want, got)
	}

	many := make([]string, 40)
	for i := range many {
		many[i] = "Failed to scrape node n" + strings.Repeat("x", i)
	}
	if got := matchingLines(strings.Join(many, "\n"), pipelineLogs[0].line, pipelineLinesKept); len(got) != pipelineLinesKept || got[len(got)-1] != many[39] {
		t.Errorf("matchingLines: want the last %d lines, got %q", pipelineLinesKept, got)
	}
}
