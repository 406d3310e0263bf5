package environment

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// StartObserver starts nodeprint's observer on the target (its namespace,
// NodePool and workloads) and stops it at the end of the spec.
func (e *Environment) StartObserver(ctx context.Context, t observe.Target) *observe.Observer {
	GinkgoHelper()
	By("starting an observer on namespace " + t.Namespace)
	cfg, err := kube.Config(e.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	ob, err := observe.Start(ctx, cfg, t)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(ob.Stop)
	return ob
}

// EventuallyExpectObserved expects the observer to record n pods within
// timeout, through its informers.
func EventuallyExpectObserved(ctx context.Context, ob *observe.Observer, n int, timeout time.Duration) {
	GinkgoHelper()
	By(fmt.Sprintf("waiting for the observer to record %d pods", n))
	Eventually(func() int { return len(ob.Snapshot().Pods) }).WithContext(ctx).WithTimeout(timeout).WithPolling(250*time.Millisecond).
		Should(Equal(n), "pods the observer recorded")
}
