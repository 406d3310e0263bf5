package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// NodeImageError is a node image in kind-config/cluster.yaml that the
// Docker engine does not have and nodeprint does not build: the
// environment's failure (exit 3), found before anything is created.
type NodeImageError struct {
	Image string
	// Build is the image nodeprint builds (make kind-node).
	Build string
}

func (e *NodeImageError) Error() string {
	return fmt.Sprintf("the kind node image %s is not in the Docker engine, and nodeprint builds only %s (make kind-node); "+
		"load it into the engine (docker load -i node.tar) or leave nodes[].image out of %s", e.Image, e.Build, KindConfigFile)
}

// kindNodeImages lists the node images of a rendered kind configuration,
// each once.
func kindNodeImages(config []byte) ([]string, error) {
	cfg := &kindv1alpha4.Cluster{}
	if err := yaml.Unmarshal(config, cfg); err != nil {
		return nil, fmt.Errorf("failed to read the rendered kind configuration: %w", err)
	}
	var out []string
	for _, n := range cfg.Nodes {
		if n.Image != "" && !slices.Contains(out, n.Image) {
			out = append(out, n.Image)
		}
	}
	return out, nil
}

// DockerImagePresent reports whether the Docker engine has image.
func DockerImagePresent(ctx context.Context, image string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput()
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return false, nil // docker says: no such image
	}
	return false, fmt.Errorf("docker image inspect %s: %w: %s", image, err, firstLine(string(out)))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
