// Package suitekit is nodeprint's own suite plumbing: the suites'
// cluster per suite, scenario tables, baselines, faults, explain, the CLI
// driven as a subprocess. The team-facing assertion helpers (Expect…,
// EventuallyExpect…) are pkg/environment's, which Environment embeds, so
// nodeprint's suites and a team's use one implementation.
package suitekit

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/environment"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Environment is what nodeprint's specs use: the public Environment's
// client and helpers, and the suite's cluster as the harness names it.
type Environment struct {
	*environment.Environment
	ClusterName string
	Toolchain   *toolchain.Toolchain
}

// StartCluster brings the suite's local cluster up (building the toolchain
// if it is missing) and registers its teardown. Call it from
// SynchronizedBeforeSuite's first function; it returns the kubeconfig path
// to hand to every parallel process.
func StartCluster(ctx context.Context, suite string) string {
	GinkgoHelper()
	return environment.StartCluster(ctx, suite).Kubeconfig
}

// New connects to the cluster whose kubeconfig StartCluster returned.
func New(kubeconfig string) *Environment {
	GinkgoHelper()
	pub, err := environment.New(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	tc, err := toolchain.Find()
	Expect(err).NotTo(HaveOccurred())
	// The kubeconfig is <work root>/<name>/kwok/clusters/<name>/kubeconfig.yaml.
	return &Environment{Environment: pub, ClusterName: filepath.Base(filepath.Dir(kubeconfig)), Toolchain: tc}
}
