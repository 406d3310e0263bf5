package explain

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/suites/internal/environment"
)

var env *environment.Environment

func TestExplain(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Explain")
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	return []byte(environment.StartCluster(ctx, "explain"))
}, func(kubeconfig []byte) {
	env = environment.New(string(kubeconfig))
}, NodeTimeout(30*time.Minute)) // a cold machine builds the toolchain first
