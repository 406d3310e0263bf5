// Package nodepools is a Ginkgo suite as a platform team writes it against
// its own NodePools: the cluster comes from nodeprint's harness, the
// assertions from github.com/nodeprint/nodeprint/pkg/environment.
// `nodeprint init` copies it into a team repository (suites/nodepools/),
// where `go test ./suites/...` runs it; in nodeprint's repository it runs
// under `go test ./tools/...` (docs/team-suites.md).
package nodepools

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/environment"
)

var env *environment.Environment

func TestTeamNodePools(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Team NodePools")
}

// StartCluster registers the cluster's teardown with DeferCleanup, so the
// cluster goes when the suite ends, also when a spec fails or the run is
// interrupted. The timeout allows a cold machine to build the toolchain.
var _ = BeforeSuite(func(ctx SpecContext) {
	env = environment.StartCluster(ctx, "team-ginkgo")
}, NodeTimeout(30*time.Minute))
