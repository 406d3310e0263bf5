package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

func kindToolchain(t *testing.T, config string) *toolchain.Toolchain {
	t.Helper()
	root := t.TempDir()
	if config != "" {
		if err := os.MkdirAll(filepath.Join(root, "kind-config"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, KindConfigFile), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &toolchain.Toolchain{Root: root, Versions: toolchain.Versions{Kubernetes: "v1.36.3"}}
}

// The committed kind-config/cluster.yaml renders: loopback API server,
// the cluster's name, the pinned node image.
func TestKindConfigFromTheRepository(t *testing.T) {
	tc, err := toolchain.Find(toolchain.WithRoot("../.."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := KindConfig(tc, "ci-1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(b, cfg); err != nil {
		t.Fatalf("rendered config does not decode: %v\n%s", err, b)
	}
	if cfg.Name != "ci-1" || cfg.Networking.APIServerAddress != "127.0.0.1" || len(cfg.Nodes) != 1 ||
		cfg.Nodes[0].Image != "nodeprint/kind-node:"+tc.Versions.Kubernetes || cfg.Nodes[0].Role != kindv1alpha4.ControlPlaneRole {
		t.Errorf("rendered config:\n%s", b)
	}
}

func TestKindConfigRefusals(t *testing.T) {
	head := "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"
	cases := []struct{ name, config, clusterName, message string }{
		{"public API server", head + "networking: {apiServerAddress: 0.0.0.0}\n", "a", "loopback only"},
		{"unknown field", head + "netwrking: {}\n", "a", "netwrking"},
		{"other version", head + "nodes: [{role: control-plane, image: kindest/node:v1.30.0}]\n", "a", "not Kubernetes v1.36.3"},
		{"not a kind config", "kind: Pod\napiVersion: v1\n", "a", "want kind Cluster"},
		{"bad name", head, "Bad_Name", "invalid cluster name"},
		{"no file", "", "a", "failed to read the kind configuration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := KindConfig(kindToolchain(t, c.config), c.clusterName)
			if err == nil || !strings.Contains(err.Error(), c.message) {
				t.Fatalf("err = %v, want one saying %q", err, c.message)
			}
		})
	}
	// An image pinned by digest on the right version is fine.
	b, err := KindConfig(kindToolchain(t, head+"nodes: [{role: control-plane, image: 'kindest/node:v1.36.3@sha256:abc'}]\n"), "a")
	if err != nil || !strings.Contains(string(b), "@sha256:abc") {
		t.Errorf("digest-pinned image: %v\n%s", err, b)
	}
}
