package suitekit

import (
	"context"
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/explain"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/run"
)

// ExpectExplainedWhileFaulted runs the fault scenario once and, while the
// fault is in place, explains the run's namespace: the workload must be
// there with the expected layer and rule. withCatalog gives explain the
// cluster's instance catalog; without it explain is as on a cluster it
// knows nothing of (EKS), and takes what it needs from the Node objects.
func (e *Environment) ExpectExplainedWhileFaulted(ctx context.Context, scenarioFile, workload, layer, rule string, withCatalog bool) {
	GinkgoHelper()
	s, err := repo.Loader(e.Toolchain).Load(filepath.Join(e.Toolchain.Root, scenarioFile))
	Expect(err).NotTo(HaveOccurred())
	By(fmt.Sprintf("running %s with fault %s and explaining the cluster while it is in place", s.Metadata.Name, s.Spec.Fault.Name))
	catalog := e.catalogOf(ctx)
	cfg, err := kube.Config(e.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	var got []explain.Workload
	var explainErr error
	_, err = e.runner(ctx).Run(ctx, s, run.OnInject(func(inj faults.Injector) { DeferCleanup(inj.Restore) }),
		run.WhileFaulted(func(ctx context.Context, res *run.Result) {
			opts := []explain.Option{explain.InNamespaces(res.ID)}
			if withCatalog {
				opts = append(opts, explain.WithCatalog(catalog))
			}
			got, explainErr = explain.Explain(ctx, cfg, e.Client, opts...)
		}))
	Expect(err).NotTo(HaveOccurred())
	Expect(explainErr).NotTo(HaveOccurred())
	var found *explain.Workload
	for i := range got {
		fmt.Fprintf(GinkgoWriter, "explained %s/%s (%v): %s\n", got[i].Namespace, got[i].Name, got[i].Problems, got[i].Verdict.Summary())
		if got[i].Name == workload {
			found = &got[i]
		}
	}
	Expect(found).NotTo(BeNil(), "explain did not list workload %q among %d troubled workload(s)", workload, len(got))
	Expect([]string{string(found.Verdict.Layer), found.Verdict.Rule}).To(Equal([]string{layer, rule}), "verdict %s", found.Verdict.Summary())
	Expect(found.Runbook).To(Equal(repo.RunbookRulePage(rule)))
	e.ExpectNoFaultLeftovers(ctx)
}
