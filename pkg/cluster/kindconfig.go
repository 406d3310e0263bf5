package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// KindConfigFile is the kind provider's cluster configuration, relative
// to the repository.
const KindConfigFile = "kind-config/cluster.yaml"

// KindNodeImage is the node image of the pinned Kubernetes version that
// nodeprint builds locally (make kind-node, tools/toolchain/kind-node):
// no registry is needed.
func KindNodeImage(tc *toolchain.Toolchain) string {
	return "nodeprint/kind-node:" + tc.Versions.Kubernetes
}

// KindConfig renders kind-config/cluster.yaml for a cluster: its name, the
// node image of the pinned Kubernetes version on every node that names
// none, and the API server on loopback. The file is decoded strictly, so a
// misspelt field is an error naming it; a non-loopback API server address
// or another Kubernetes version than the pinned one is refused.
func KindConfig(tc *toolchain.Toolchain, name string) ([]byte, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	path := filepath.Join(tc.Root, KindConfigFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the kind configuration: %w", err)
	}
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(b, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cfg.Kind != "Cluster" || cfg.APIVersion != "kind.x-k8s.io/v1alpha4" {
		return nil, fmt.Errorf("%s: kind %q apiVersion %q: want kind Cluster, apiVersion kind.x-k8s.io/v1alpha4", path, cfg.Kind, cfg.APIVersion)
	}
	switch cfg.Networking.APIServerAddress {
	case "":
		cfg.Networking.APIServerAddress = "127.0.0.1"
	case "127.0.0.1":
	default:
		return nil, fmt.Errorf("%s: networking.apiServerAddress %q: the cluster listens on loopback only; use 127.0.0.1", path, cfg.Networking.APIServerAddress)
	}
	cfg.Name = name
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []kindv1alpha4.Node{{Role: kindv1alpha4.ControlPlaneRole}}
	}
	want := KindNodeImage(tc)
	for i := range cfg.Nodes {
		n := &cfg.Nodes[i]
		switch {
		case n.Image == "":
			n.Image = want
		case !strings.HasSuffix(strings.SplitN(n.Image, "@", 2)[0], ":"+tc.Versions.Kubernetes):
			return nil, fmt.Errorf("%s: nodes[%d].image %q is not Kubernetes %s, the pinned version (tools/toolchain/versions.mk); leave image out to use %s",
				path, i, n.Image, tc.Versions.Kubernetes, want)
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to render the kind configuration: %w", err)
	}
	return out, nil
}
