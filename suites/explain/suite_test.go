package explain

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

var env *suitekit.Environment

func TestExplain(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Explain")
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	return []byte(suitekit.StartCluster(ctx, "explain"))
}, func(kubeconfig []byte) {
	env = suitekit.New(string(kubeconfig))
}, NodeTimeout(30*time.Minute)) // a cold machine builds the toolchain first
