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

// imagePullTimeout bounds one `docker pull` of a node image (about 1 GB
// compressed on a runner with a registry; it fails in milliseconds on an
// engine without one).
const imagePullTimeout = 15 * time.Minute

// NodeImageError is a kind node image the Docker engine does not have and
// cannot pull: the environment's failure (exit 3), found before anything
// is built or created.
type NodeImageError struct {
	Image string
	// Pull is what `docker pull` said, first line.
	Pull string
}

func (e *NodeImageError) Error() string {
	return fmt.Sprintf("the kind node image %s is not in the Docker engine and cannot be pulled (docker pull: %s); "+
		"load it into the engine (`docker load -i node.tar`, saved with `docker save %s` on a machine with a registry), "+
		"or use the local provider, which needs no image; nodeprint cannot build the node image itself yet",
		e.Image, e.Pull, e.Image)
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

// ensureImage makes sure the engine has image: present, or pulled now
// (which is what kind would do, so a runner with a registry behaves as
// before), or a *NodeImageError.
func ensureImage(ctx context.Context, image string, progress func(string)) error {
	present, err := DockerImagePresent(ctx, image)
	if err != nil {
		return err
	}
	if present {
		progress("node image " + image + " is in the engine")
		return nil
	}
	progress(fmt.Sprintf("node image %s is not in the engine: pulling it (up to %s)", image, imagePullTimeout))
	pctx, cancel := context.WithTimeout(ctx, imagePullTimeout)
	defer cancel()
	out, err := exec.CommandContext(pctx, "docker", "pull", image).CombinedOutput()
	if err == nil {
		progress("pulled " + image)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := firstLine(string(out))
	if pctx.Err() != nil {
		msg = fmt.Sprintf("no answer within %s", imagePullTimeout)
	}
	if msg == "" {
		msg = err.Error()
	}
	return &NodeImageError{Image: image, Pull: msg}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
