package diff

import (
	"os"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
)

// docs/scenarios.md says how many per-run metrics verification tests and
// names each: the count and the list are the code's (RunMetrics less the
// untested ones and the scale-in's, which only a paired test reads), so
// the docs cannot drift from them again.
func TestDocsNameEveryTestedPerRunMetric(t *testing.T) {
	b, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
		"thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}
	tested := 0
	for _, m := range fingerprint.RunMetrics {
		if m.Untested {
			if !strings.Contains(doc, "`"+m.Path+"`") {
				t.Errorf("docs/scenarios.md does not name %s, recorded but not tested", m.Path)
			}
			continue
		}
		if !strings.Contains(doc, "`"+m.Path+"`") {
			t.Errorf("docs/scenarios.md does not name the tested metric %s", m.Path)
		}
		if !m.ScaleIn { // the scale-in's are paired only, not in the recorded runs' family
			tested++
		}
	}
	if want := "over the " + words[tested] + " per-run metrics"; !strings.Contains(doc, want) {
		t.Errorf("docs/scenarios.md must say %q: the code tests %d", want, tested)
	}
}
