package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
)

// The everyday pre-release change, which no fault scripts: a scenario is
// recorded, then one of its inputs is edited as a team would edit it, and
// `nodeprint run` must name what changed and the layer that owns it.
var _ = Describe("nodeprint run after a change nobody scripted", Label("suite:lifecycle", "attribution:change"), func() {
	It("names the changed input beside the fingerprint diff and attributes it to its layer", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-change-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
		dir := GinkgoT().TempDir()
		fps := filepath.Join(dir, "fingerprints")
		scenario := "fixtures/scenarios/web-service.yaml"

		By("recording the baseline, with its inputs")
		cli.ExpectRun(ctx, 0, "record", scenario, "--runs", "2", "--cluster", name, "--fingerprints", fps)
		Expect(os.ReadFile(filepath.Join(fps, "web-service.yaml"))).To(And(ContainSubstring(fmt.Sprintf("schemaVersion: %d\n", fingerprint.SchemaVersion)), ContainSubstring("inputs:")))
		By("adding a run to it keeps the two recorded ones")
		cli.ExpectRun(ctx, 0, "record", scenario, "--add", "--runs", "1", "--cluster", name, "--fingerprints", fps)
		Expect(os.ReadFile(filepath.Join(fps, "web-service.yaml"))).To(MatchRegexp(`(?m)^runs: 3$`))
		By("the unchanged scenario passes and says its inputs are unchanged")
		same := cli.ExpectRun(ctx, 0, "run", scenario, "--cluster", name, "--fingerprints", fps)
		Expect(same.Stdout).To(ContainSubstring("inputs: unchanged since the baseline"))

		for _, c := range []struct {
			what, old, replacement, rule, input string
		}{
			{what: "a NodePool edit (only small instances allowed) is the policy's (L2)",
				old: "    nodePoolRef: general-purpose\n", replacement: "    nodePool:\n      template:\n        spec:\n          requirements:\n" +
					"          - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n          - {key: kubernetes.io/os, operator: In, values: [linux]}\n" +
					"          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n" +
					"          - {key: node.kubernetes.io/instance-type, operator: In, values: [c-2x-amd64-linux]}\n",
				rule: "L2-policy-change", input: "nodePool.requirements[node.kubernetes.io/instance-type]: (none) → In [c-2x-amd64-linux]"},
			{what: "a release that raises the requests is the application's (L3)",
				old: "requests: {cpu: 500m, memory: 1Gi}", replacement: "requests: {cpu: 2, memory: 1Gi}",
				rule: "L3-workload-change", input: "workloads.web.containers[web].resources.requests.cpu: 500m → 2"},
		} {
			By(c.what)
			variant := cli.WriteScenarioVariant(dir, scenario, c.old, c.replacement)
			report := filepath.Join(dir, c.rule)
			res := cli.ExpectRun(ctx, 1, "run", variant, "--cluster", name, "--fingerprints", fps, "--report-dir", report)
			Expect(res.Stdout).To(And(ContainSubstring("by rule "+c.rule), ContainSubstring(c.input), ContainSubstring("effect: "),
				ContainSubstring("accept with `nodeprint record web-service`")), "stdout:\n%s", res.Stdout)
			rep := cli.ExpectReport(report, 1, "web-service", "failed")
			Expect(rep.Scenarios[0].Verdict.Rule).To(Equal(c.rule))
			Expect(rep.Scenarios[0].Inputs).NotTo(BeNil())
			Expect(rep.Scenarios[0].Inputs.Changes).NotTo(BeEmpty())
			Expect(os.ReadFile(filepath.Join(report, "summary.md"))).To(And(ContainSubstring("Effect on provisioning:"), ContainSubstring("| input | baseline | now |")))
		}
	}, SpecTimeout(8*time.Minute))
})
