package mutants

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

var cli *suitekit.CLI

func TestMutants(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Mutated Karpenters (smoke of make mutants)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	cli = suitekit.BuildCLI(ctx)
}, NodeTimeout(30*time.Minute)) // a cold machine builds the toolchain first
