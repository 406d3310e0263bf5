package environment

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/explain"
)

// ExpectExplained explains the namespace with cfg and c and returns the
// workload's entry; it must be listed.
func (e *Environment) ExpectExplained(ctx context.Context, cfg *rest.Config, c client.Client, ns, workload string, opts ...explain.Option) explain.Workload {
	GinkgoHelper()
	got, err := explain.Explain(ctx, cfg, c, append(opts, explain.InNamespaces(ns))...)
	Expect(err).NotTo(HaveOccurred(), "explain")
	for _, w := range got {
		fmt.Fprintf(GinkgoWriter, "explained %s/%s (NodePool %q, %v): %s\n  reason: %s\n", w.Namespace, w.Name, w.NodePool, w.Problems, w.Verdict.Summary(), w.Verdict.Reason)
		if w.Name == workload {
			return w
		}
	}
	Fail(fmt.Sprintf("explain did not list workload %q among %d troubled workload(s)", workload, len(got)))
	return explain.Workload{}
}

// ExpectSignalUnavailable expects the verdict's signal to be unavailable with a
// detail containing want.
func (e *Environment) ExpectSignalUnavailable(w explain.Workload, id, want string) {
	GinkgoHelper()
	s, ok := w.Verdict.Signal(id)
	Expect(ok).To(BeTrue(), "the verdict has no signal %s", id)
	Expect(s.Available).To(BeFalse(), "signal %s = %v, want unavailable", id, s)
	Expect(strings.ToLower(s.Detail)).To(ContainSubstring(want), "signal %s", id)
}
