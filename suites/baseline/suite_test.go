package baseline

import (
	"flag"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

// updateFingerprints re-records the baselines instead of verifying them:
//
//	go test ./suites/baseline/... -args -update-fingerprints
var updateFingerprints = flag.Bool("update-fingerprints", false, "re-record fingerprints/<scenario>.yaml instead of verifying against it")

var env *suitekit.Environment

func TestBaseline(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Baseline")
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	return []byte(suitekit.StartCluster(ctx, "baseline"))
}, func(kubeconfig []byte) {
	env = suitekit.New(string(kubeconfig))
}, NodeTimeout(30*time.Minute)) // a cold machine builds the toolchain first

// The suite's report (out/suites/baseline/): the verdict table make e2e prints.
var _ = ReportAfterSuite("nodeprint report", func(r Report) {
	suitekit.WriteSuiteReport(r, "baseline")
})
