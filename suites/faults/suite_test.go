package faults

import (
	"flag"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

// updateFingerprints re-records fingerprints/faults/<scenario>.yaml:
//
//	go test ./suites/faults/... -args -update-fingerprints
var updateFingerprints = flag.Bool("update-fingerprints", false, "re-record fingerprints/faults/<scenario>.yaml from this run")

var env *suitekit.Environment

func TestFaults(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Faults")
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	return []byte(suitekit.StartCluster(ctx, "faults"))
}, func(kubeconfig []byte) {
	env = suitekit.New(string(kubeconfig))
}, NodeTimeout(30*time.Minute)) // a cold machine builds the toolchain first

// The suite's report (out/suites/faults/): the verdict table make e2e prints.
var _ = ReportAfterSuite("nodeprint report", func(r Report) {
	suitekit.WriteSuiteReport(r, "faults")
})
