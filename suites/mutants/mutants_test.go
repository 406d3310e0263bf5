package mutants

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/mutants"
	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

// The smoke of make mutants: one real mutant and one that changes only
// line numbers, on one scenario, through the same tool. The real one must
// be caught and attributed to L2; the other must read "missed", so the
// matrix is shown to fail when nodeprint does not see a mutant.
var _ = Describe("make mutants", Label("suite:mutants"), func() {
	It("catches a mutated Karpenter on web-service, attributes it to L2, and fails the matrix for a mutant it cannot see", func(ctx SpecContext) {
		root := cli.Toolchain.Root
		dir := GinkgoT().TempDir()
		set := filepath.Join(dir, "mutants.yaml")
		for _, f := range []string{filepath.Join(root, "fixtures", "mutants", "no-shared-claims.patch"), "testdata/line-shift.patch"} {
			b, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)).To(Succeed())
		}
		Expect(os.WriteFile(set, []byte(`apiVersion: nodeprint.dev/v1alpha1
kind: Mutants
karpenter: `+cli.Toolchain.Versions.Karpenter+`
scenarios: [web-service]
mutants:
- {name: no-shared-claims, class: over-provisioning, description: one NodeClaim per pod, patch: no-shared-claims.patch}
- {name: smoke-line-shift, class: none, description: a comment that moves line numbers and changes nothing else, patch: line-shift.patch}
`), 0o644)).To(Succeed())

		// The line-shift build changes nothing, so its paired timing test
		// runs to the cap: 7 pairs instead of run's 16 show the matrix
		// reading "missed" as well; make mutants keeps 16. 7 is the
		// smallest cap at which web-service's paired test can still
		// decide (paired.MinPairs; nodeprint run refuses a lower one).
		out := filepath.Join(dir, "out")
		res := suitekit.ExpectCommand(ctx, root, 1, "go", "run", "./tools/mutants", "-set", set, "-control=false", "-max-pairs", "7", "-out", out)
		m := suitekit.ExpectMatrix(filepath.Join(out, "matrix.json"))

		Expect(m.Rows).To(HaveLen(2))
		caught := m.Rows[0].Cells[0]
		Expect(caught.Outcome).To(Equal(mutants.Detected), "no-shared-claims × web-service: %+v", caught)
		Expect(caught.Verdict).To(HavePrefix("L2-orchestration by "))
		unseen := m.Rows[1].Cells[0]
		Expect(unseen.Outcome).To(Equal(mutants.Missed), "smoke-line-shift × web-service: %+v", unseen)
		Expect(res.Stdout).To(ContainSubstring("**smoke-line-shift × web-service: missed**"))

		By("the mutant's report names the changed Karpenter binary")
		rep := cli.ExpectReport(filepath.Join(out, "no-shared-claims"), 1, "web-service", "failed")
		Expect(rep.Scenarios[0].Inputs).NotTo(BeNil())
		var fields []string
		for _, c := range rep.Scenarios[0].Inputs.Changes {
			fields = append(fields, c.Path)
		}
		Expect(strings.Join(fields, " ")).To(ContainSubstring("karpenter.binary"))
	}, SpecTimeout(20*time.Minute))

	// make mutants builds each mutant only when it gets to it, 40 minutes
	// in; a patch that no longer applies or compiles (measured: one that
	// left a variable unused) must fail here instead, for both sets.
	It("applies and compiles every mutant of the committed sets against the pinned module", func(ctx SpecContext) {
		for _, name := range []string{"mutants.yaml", "scale-in.yaml"} {
			path := filepath.Join(cli.Toolchain.Root, "fixtures", "mutants", name)
			suitekit.ExpectCommand(ctx, cli.Toolchain.Root, 0, "go", "run", "./tools/mutants", "-set", path, "-build-only", "-out", GinkgoT().TempDir())
			set, err := mutants.Load(path)
			Expect(err).NotTo(HaveOccurred())
			for _, m := range set.Mutants {
				Expect(cli.Toolchain.MutantBinary(m.Name)).To(BeAnExistingFile(), "%s: %s", name, m.Name)
			}
		}
	}, SpecTimeout(20*time.Minute))
})
