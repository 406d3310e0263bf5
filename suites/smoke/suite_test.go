package smoke

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

var env *suitekit.Environment

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Smoke")
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	return []byte(suitekit.StartCluster(ctx, "smoke"))
}, func(kubeconfig []byte) {
	env = suitekit.New(string(kubeconfig))
}, NodeTimeout(30*time.Minute)) // a cold machine builds the toolchain first
