package environment

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/harness"
)

// New starts nothing, so what only StartCluster can use is refused rather
// than dropped.
func TestNewRefusesWhatOnlyStartClusterUses(t *testing.T) {
	for name, tc := range map[string]struct {
		opts []Option
		want string
	}{
		"harness options": {[]Option{WithHarnessOptions(harness.WithName("x"))}, "StartCluster starts"},
		"zero timeout":    {[]Option{WithTimeout(0)}, "invalid timeout 0s"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New("testdata/none.yaml", tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewNamesTheKubeconfigItCannotRead(t *testing.T) {
	_, err := New("testdata/none.yaml", WithTimeout(time.Second))
	if err == nil || !strings.Contains(err.Error(), "testdata/none.yaml") {
		t.Fatalf("New: %v, want an error naming the kubeconfig", err)
	}
}
