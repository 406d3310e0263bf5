package suitekit

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/cluster"
)

// pipelineLogs are, per component log of the metrics pipeline, the lines
// that say why a pod has no metrics: metrics-server's errors (a node it
// could not scrape or timed out on, a container it skipped, a duplicate
// point), the pods it left out of a scrape and how many pods and how
// long each scrape took (at -v=1, which the local cluster sets), and
// kwok-controller's errors and warnings about the metrics it
// serves (an expression that failed to evaluate, a metric it could not
// register).
var pipelineLogs = []struct {
	file string
	line *regexp.Regexp
}{
	{"metrics-server.log", regexp.MustCompile(`Failed|Skipping|duplicate|timeout|Scrape finished`)},
	{"kwok-controller.log", regexp.MustCompile(`(?i)"level":"(ERROR|WARN)".*(metric|usage|evaluat)`)},
}

// pipelineLinesKept bounds the lines quoted per log: the last ones are
// the ones about the failed command. A scrape at -v=1 logs one line, and
// up to one more per node it failed and per pod it left out, so 16 lines
// cover the last two or three scrapes of a run of a few pods.
const pipelineLinesKept = 16

// metricsDiagnosis says what the metrics pipeline logged, for a runbook
// command that stayed on kubectl top's "metrics not available" answer for
// its whole bound: the failure's message is all CI keeps of a suite's
// cluster. A log with none of those lines is named as such.
func (e *Environment) metricsDiagnosis() string {
	GinkgoHelper()
	p, err := cluster.New(cluster.KindLocal, cluster.WithName(e.ClusterName), cluster.WithToolchain(e.Toolchain))
	if err != nil {
		return fmt.Sprintf("metrics pipeline: no diagnosis: %v", err)
	}
	ex, ok := p.(cluster.LogExporter)
	if !ok {
		return fmt.Sprintf("metrics pipeline: no diagnosis: the cluster's provider (%T) keeps no logs to read", p)
	}
	dir := GinkgoT().TempDir()
	if _, err := ex.ExportLogs(dir); err != nil {
		return fmt.Sprintf("metrics pipeline: no diagnosis: %v", err)
	}
	return pipelineDiagnosis(dir)
}

// pipelineDiagnosis reads the pipeline's logs in dir (as ExportLogs
// copies them) and quotes what pipelineLogs picks of each.
func pipelineDiagnosis(dir string) string {
	var b strings.Builder
	for _, l := range pipelineLogs {
		data, err := os.ReadFile(filepath.Join(dir, l.file))
		if err != nil {
			fmt.Fprintf(&b, "metrics pipeline: %s: %v\n", l.file, err)
			continue
		}
		lines := matchingLines(string(data), l.line, pipelineLinesKept)
		if len(lines) == 0 {
			fmt.Fprintf(&b, "metrics pipeline: %s has no line about scrapes or metrics\n", l.file)
			continue
		}
		fmt.Fprintf(&b, "metrics pipeline: the last %d matching lines of %s:\n  %s\n", len(lines), l.file, strings.Join(lines, "\n  "))
	}
	return b.String()
}

// matchingLines are the last n lines of log that re matches, each made
// short (compact) and cut to 300 characters.
func matchingLines(log string, re *regexp.Regexp, n int) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if re.MatchString(line) {
			line = compact(line)
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			out = append(out, line)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// compact turns a JSON log line (kwok-controller's) into its time, level
// and message followed by its other fields as key=value, leaving out the
// source location and the process id; other lines stay as they are.
func compact(line string) string {
	var fields map[string]any
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &fields) != nil {
		return line
	}
	parts := []string{fmt.Sprint(fields["time"]), fmt.Sprint(fields["level"]), fmt.Sprint(fields["msg"])}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		switch k {
		case "time", "level", "msg", "source", "id":
		default:
			parts = append(parts, fmt.Sprintf("%s=%v", k, fields[k]))
		}
	}
	return strings.Join(parts, " ")
}
