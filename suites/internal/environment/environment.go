// Package environment is the suites' shared Ginkgo glue: it brings the
// cluster up once per suite and holds the assertion helpers (Expect…,
// EventuallyExpect…), in the style of Karpenter's test/pkg/environment.
// It lives under suites/ because nothing in pkg/ may know Ginkgo: the CLI
// uses pkg/ too.
package environment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/harness"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// ReuseClusterEnv names an already running local cluster to use instead of
// starting one (it is then left running). Handy while writing specs:
//
//	nodeprint cluster up --name dev && NODEPRINT_CLUSTER=dev go test ./suites/smoke/
const ReuseClusterEnv = "NODEPRINT_CLUSTER"

// Environment is what specs use: a client for the suite's cluster.
type Environment struct {
	ClusterName string
	Kubeconfig  string
	Client      client.Client
	Toolchain   *toolchain.Toolchain
}

// StartCluster brings the suite's local cluster up (building the toolchain
// if it is missing) and registers its teardown. Call it from
// SynchronizedBeforeSuite's first function; it returns the kubeconfig path
// to hand to every parallel process.
func StartCluster(ctx context.Context, suite string) string {
	GinkgoHelper()
	opts := []harness.Option{harness.WithProgress(func(msg string) { fmt.Fprintln(GinkgoWriter, msg) }),
		harness.WithClusterEvents(func(e cluster.Event) {
			if e.Done && e.Elapsed > 0 {
				fmt.Fprintf(GinkgoWriter, "cluster: %-13s done in %s\n", e.Phase, e.Elapsed.Round(10*time.Millisecond))
				return
			}
			fmt.Fprintf(GinkgoWriter, "cluster: %-13s %s\n", e.Phase, e.Message)
		})}
	if name := os.Getenv(ReuseClusterEnv); name != "" {
		By(fmt.Sprintf("reusing the running cluster %q (%s)", name, ReuseClusterEnv))
		opts = append(opts, harness.WithCluster(name))
	} else {
		name = fmt.Sprintf("%s-%d", suite, os.Getpid())
		By(fmt.Sprintf("starting the local cluster %q", name))
		// Temporary: if the suite is killed, `nodeprint cluster prune` finds it.
		opts = append(opts, harness.WithName(name), harness.WithBuildOutput(GinkgoWriter))
	}
	h, err := harness.New(ctx, opts...)
	Expect(err).NotTo(HaveOccurred())
	// Close brings down only a cluster the harness started.
	DeferCleanup(func(ctx SpecContext) {
		By(fmt.Sprintf("stopping the harness of cluster %q", h.Name))
		Expect(h.Close(ctx)).To(Succeed())
	}, NodeTimeout(2*time.Minute))
	return h.Kubeconfig()
}

// New connects to the cluster whose kubeconfig StartCluster returned.
func New(kubeconfig string) *Environment {
	GinkgoHelper()
	c, err := kube.NewClient(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	tc, err := toolchain.Find()
	Expect(err).NotTo(HaveOccurred())
	// The kubeconfig is <work root>/<name>/kwok/clusters/<name>/kubeconfig.yaml.
	return &Environment{ClusterName: filepath.Base(filepath.Dir(kubeconfig)), Kubeconfig: kubeconfig, Client: c, Toolchain: tc}
}
