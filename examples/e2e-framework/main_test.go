// Package example is an e2e-framework suite as a platform team would
// write it against its own NodePools: the cluster comes from nodeprint's
// provider (github.com/nodeprint/nodeprint/pkg/e2eprovider), the client
// and waits from e2e-framework's klient. It runs under
// `go test ./examples/...` (docs/team-suites.md).
package example

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"

	"github.com/nodeprint/nodeprint/pkg/e2eprovider"
)

var testenv env.Environment

func TestMain(m *testing.M) {
	testenv = env.New()
	// A name of this run's own: go test runs packages side by side.
	name := envconf.RandomName("team-e2e", 16)
	provider := e2eprovider.New()
	var kubeconfig string
	testenv.Setup(envfuncs.CreateClusterWithOpts(provider, name))
	testenv.Finish(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		kubeconfig = cfg.KubeconfigFile()
		return ctx, nil
	}, envfuncs.DestroyCluster(name))
	code := testenv.Run(m)
	// e2e-framework logs a failed Finish step only at -v=2 and keeps the
	// exit code; a cluster left running would go unnoticed, so check.
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "cluster %s was not destroyed: its kubeconfig %s is still there (%v); run `nodeprint cluster prune`\n", name, kubeconfig, err)
			code = 1
		}
	}
	os.Exit(code)
}
