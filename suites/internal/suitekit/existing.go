package suitekit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/run"
)

// CreateSentinel creates a namespace and a ConfigMap nodeprint did not
// create, so a spec can check that a run on an "existing" cluster leaves
// them alone; ExpectCreated removes them after the spec.
func (e *Environment) CreateSentinel(ctx context.Context, name string) *corev1.ConfigMap {
	GinkgoHelper()
	By("creating objects nodeprint did not create: namespace and ConfigMap " + name)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}, Data: map[string]string{"owner": "the platform team"}}
	e.ExpectCreated(ctx, ns, cm)
	return cm
}

// ExpectSentinelUntouched expects the sentinel to exist unchanged and no
// object of any run to be left.
func (e *Environment) ExpectSentinelUntouched(ctx context.Context, cm *corev1.ConfigMap) {
	GinkgoHelper()
	By("checking that what nodeprint did not create is still there, and nothing of its runs is left")
	got := &corev1.ConfigMap{}
	Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed())
	Expect(got.Data).To(Equal(cm.Data))
	Expect(got.DeletionTimestamp).To(BeNil())
	left, err := run.Leftovers(ctx, e.Client)
	Expect(err).NotTo(HaveOccurred())
	Expect(left).To(BeEmpty())
}

// WriteUnreachableKubeconfig copies the cluster's kubeconfig with the API
// server moved to a loopback port nothing listens on.
func (e *Environment) WriteUnreachableKubeconfig(dir string) string {
	GinkgoHelper()
	cfg, err := clientcmd.LoadFromFile(e.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		Expect(c.Server).To(HavePrefix("https://127.0.0.1:"))
		c.Server = "https://127.0.0.1:1"
	}
	path := filepath.Join(dir, fmt.Sprintf("unreachable-%d.yaml", os.Getpid()))
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// ExpectStderrNames expects a CLI result's stderr to hold every part.
func ExpectStderrNames(res Result, parts ...string) {
	GinkgoHelper()
	for _, p := range parts {
		Expect(res.Stderr).To(ContainSubstring(p), "stderr:\n%s", strings.TrimSpace(res.Stderr))
	}
}
