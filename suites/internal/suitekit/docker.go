package suitekit

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
)

// ExpectNoKindLeftovers expects the Docker engine to hold nothing of the
// kind cluster name: no node container (kind labels them with the
// cluster's name) and no image of nodeprint's privileged-container probe.
func ExpectNoKindLeftovers(ctx context.Context, name string) {
	GinkgoHelper()
	By(fmt.Sprintf("the Docker engine holds no container of kind cluster %q and no probe image", name))
	ps := ExpectCommand(ctx, "", 0, "docker", "ps", "--all", "--quiet", "--filter", "label=io.x-k8s.kind.cluster="+name)
	Expect(strings.TrimSpace(ps.Stdout)).To(BeEmpty(), "containers of kind cluster %s", name)
	images := ExpectCommand(ctx, "", 0, "docker", "images", "--quiet", "nodeprint-probe")
	Expect(strings.TrimSpace(images.Stdout)).To(BeEmpty(), "images of nodeprint's privileged-container probe")
}
