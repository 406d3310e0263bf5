package e2eprovider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// repoRoot is the checkout the tests run in; Create reads its pinned
// versions before it starts anything.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// What the local cluster cannot do is refused before anything starts,
// with the reason, never dropped.
func TestCreateRefusesWhatTheLocalClusterCannotHonour(t *testing.T) {
	pinned, err := toolchain.Find(toolchain.WithRoot(repoRoot(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, tc := range map[string]struct {
		create func(p *Provider) (string, error)
		want   string
	}{
		"arguments": {func(p *Provider) (string, error) { return p.Create(ctx, "--wait", "1m") }, "takes no arguments"},
		"a config file": {func(p *Provider) (string, error) { return p.CreateWithConfig(ctx, "kind.yaml") },
			"reads no configuration file"},
		"another Kubernetes": {func(p *Provider) (string, error) {
			return p.WithVersion("v1.20.0").(*Provider).Create(ctx)
		}, "Kubernetes v1.20.0 was asked for, but the toolchain in " + filepath.Join(repoRoot(t), "bin") + " runs " + pinned.Versions.Kubernetes},
		"no checkout": {func(p *Provider) (string, error) {
			return p.WithPath(filepath.Join(t.TempDir(), "none")).Create(ctx)
		}, "failed to find the nodeprint toolchain"},
	} {
		t.Run(name, func(t *testing.T) {
			p := New().WithName("np-e2e-unit").WithPath(repoRoot(t)).(*Provider)
			p.SetDefaults()
			p.out = nilWriter{t}
			kubeconfig, err := tc.create(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"np-e2e-unit"`) {
				t.Fatalf("got %q, %v; want an error naming the cluster and containing %q", kubeconfig, err, tc.want)
			}
			if p.Harness() != nil || p.GetKubeconfig() != "" {
				t.Error("a refused Create left a harness behind")
			}
		})
	}
}

// The version check takes the pinned version with or without its "v": it
// is the refusal above that must not fire for it. Create then goes on to
// the harness, so this stops at the name check, which fails before any
// process starts.
func TestCreateAcceptsThePinnedVersionSpelledEitherWay(t *testing.T) {
	tc, err := toolchain.Find(toolchain.WithRoot(repoRoot(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{tc.Versions.Kubernetes, strings.TrimPrefix(tc.Versions.Kubernetes, "v")} {
		p := New().WithName("Not_A_Name").WithPath(repoRoot(t)).WithVersion(v).(*Provider)
		p.SetDefaults()
		p.out = nilWriter{t}
		_, err := p.Create(context.Background())
		if err == nil || strings.Contains(err.Error(), "was asked for") || !strings.Contains(err.Error(), "invalid cluster name") {
			t.Errorf("version %s: %v; want only the harness's refusal of the name", v, err)
		}
	}
}

func TestNothingCreatedIsAnErrorNotANoOp(t *testing.T) {
	p := New().WithName("np-e2e-unit").(*Provider)
	ctx := context.Background()
	for name, err := range map[string]error{
		"Destroy":             p.Destroy(ctx),
		"ExportLogs":          p.ExportLogs(ctx, t.TempDir()),
		"WaitForControlPlane": p.WaitForControlPlane(ctx, nil),
		"GenerateKubeconfig":  func() error { _, err := p.GenerateKubeconfig(); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), `cluster "np-e2e-unit": it is not created`) {
			t.Errorf("%s before Create: %v; want an error saying the cluster is not created", name, err)
		}
	}
	if p.KubernetesRestConfig() != nil || p.GetKubectlContext() != "" {
		t.Error("a provider with no cluster answers with a rest config or context")
	}
}

func TestSetDefaultsKeepsWhatWasSet(t *testing.T) {
	p := New().WithName("mine").WithOpts(WithWaitTimeout(5), WithOutput(os.Stdout)).SetDefaults().(*Provider)
	if p.name != "mine" || p.waitTimeout != 5 || p.out != os.Stdout {
		t.Errorf("SetDefaults overrode what was set: %+v", p)
	}
	d := New().SetDefaults().(*Provider)
	if !strings.HasPrefix(d.name, "np-e2e-") || d.waitTimeout != DefaultWaitTimeout || d.out != os.Stderr {
		t.Errorf("defaults: %+v", d)
	}
}

// nilWriter fails the test if the provider writes progress: every case
// here must be refused before anything runs.
type nilWriter struct{ t *testing.T }

func (w nilWriter) Write(b []byte) (int, error) {
	w.t.Errorf("unexpected output: %s", b)
	return len(b), nil
}
