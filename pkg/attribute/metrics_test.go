package attribute

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/usage"
)

// A signal's help (in the runbooks, English and Chinese) that names one of
// Karpenter's metrics names one pkg/usage parses: an engineer who greps
// for it must find what the verdict counted.
func TestSignalHelpNamesTheMetricsTheCodeReads(t *testing.T) {
	metric := regexp.MustCompile(`[a-z]+(?:_[a-z]+)+_(?:total|seconds|count|sum|bucket|bytes)\b`)
	named := 0
	for _, d := range Signals() {
		for _, lang := range []string{"en", "zh"} {
			for _, m := range metric.FindAllString(d.HelpIn(lang), -1) {
				named++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_count"), "_sum"), "_bucket")
				if !slices.Contains(usage.Metrics, m) && !slices.Contains(usage.Metrics, base) {
					t.Errorf("%s (%s) names %s; the code reads %v", d.ID, lang, m, usage.Metrics)
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no signal names a metric: the pattern is wrong")
	}
}
