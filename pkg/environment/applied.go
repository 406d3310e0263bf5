package environment

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

// Applied are objects a platform team applied itself (kubectl, GitOps),
// not through a nodeprint run: no run label, their own names.
type Applied struct {
	// Suffix makes the names unique on the suite's shared cluster.
	Suffix    string
	Namespace string
}

// NewApplied creates a namespace for a spec's own objects and deletes it,
// and every cluster-wide object created through Applied, after the spec.
func (e *Environment) NewApplied(ctx context.Context, prefix string) *Applied {
	GinkgoHelper()
	a := &Applied{Suffix: fmt.Sprintf("%d-%d", os.Getpid(), GinkgoParallelProcess()), Namespace: fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)}
	e.ExpectCreated(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Namespace}})
	return a
}

// Admin is the suite's own access to the cluster: its REST config and
// client, for what takes both (explain, an observer).
func (e *Environment) Admin() (*rest.Config, client.Client) {
	GinkgoHelper()
	cfg, err := kube.Config(e.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	return cfg, e.Client
}
