package suitekit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
)

// KindNetworkExists says whether the Docker engine has kind's network.
func KindNetworkExists(ctx context.Context) bool {
	return exec.CommandContext(ctx, "docker", "network", "inspect", "kind").Run() == nil
}

// ExpectNoKindLeftovers expects nothing of the kind cluster name to be
// left: no node container (kind labels them with the cluster's name), no
// image of nodeprint's route probe, no work directory, and no kind network
// unless there was one before the cluster (networkBefore).
func (c *CLI) ExpectNoKindLeftovers(ctx context.Context, name string, networkBefore bool) {
	GinkgoHelper()
	By(fmt.Sprintf("nothing of kind cluster %q is left: containers, probe images, network, state", name))
	ps := ExpectCommand(ctx, "", 0, "docker", "ps", "--all", "--quiet", "--filter", "label=io.x-k8s.kind.cluster="+name)
	Expect(strings.TrimSpace(ps.Stdout)).To(BeEmpty(), "containers of kind cluster %s", name)
	images := ExpectCommand(ctx, "", 0, "docker", "images", "--quiet", "nodeprint-probe")
	Expect(strings.TrimSpace(images.Stdout)).To(BeEmpty(), "images of nodeprint's route probe")
	if !networkBefore {
		Expect(KindNetworkExists(ctx)).To(BeFalse(), "the kind network nodeprint created is left")
	}
	_, err := os.Stat(filepath.Join(c.Toolchain.Work, "kind", name))
	Expect(os.IsNotExist(err)).To(BeTrue(), "the work directory of kind cluster %s is left (%v)", name, err)
}

// ExpectKindNodeReady expects kind cluster name's node to be a real,
// Ready Kubernetes node, asked inside the node itself.
func ExpectKindNodeReady(ctx context.Context, name string) {
	GinkgoHelper()
	node := name + "-control-plane"
	By("the kind node " + node + " is Ready")
	res := ExpectCommand(ctx, "", 0, "docker", "exec", node, "kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf",
		"get", "node", node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.containerRuntimeVersion}`)
	Expect(res.Stdout).To(HavePrefix("True "), "node %s: %s", node, res.Stdout)
}

// HTTPGet is the body of a GET of url, bounded to 10 s; a failure or a
// status other than 200 fails the spec.
func HTTPGet(ctx context.Context, url string) string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred(), "GET %s", url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred(), "GET %s", url)
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", url, b)
	return string(b)
}
