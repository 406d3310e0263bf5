package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// A harness that cannot be built from its options is bad input: it says
// why and starts nothing.
func TestNewRefusesBadInput(t *testing.T) {
	tc := &toolchain.Toolchain{Root: t.TempDir(), Bin: t.TempDir()}
	for _, c := range []struct {
		name string
		opts []Option
		want string
	}{
		{"unknown provider", []Option{WithProvider("minikube")}, `unknown cluster provider "minikube"`},
		{"bad cluster name", []Option{WithCluster("Not_A_Name")}, "invalid cluster name"},
		{"missing kubeconfig", []Option{WithProvider(cluster.KindExisting), WithKubeconfig(filepath.Join(t.TempDir(), "none"))}, "no such file"},
		{"naming an existing cluster", []Option{WithProvider(cluster.KindExisting), WithKubeconfig(kubeconfig(t, "https://127.0.0.1:1")),
			WithCluster("theirs")}, "not nodeprint's to name"},
	} {
		h, err := New(context.Background(), append(c.opts, WithToolchain(tc))...)
		var bad *UsageError
		if !errors.As(err, &bad) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a UsageError containing %q", c.name, err, c.want)
		}
		if h != nil {
			t.Errorf("%s: a harness was returned with the error", c.name)
		}
	}
}

// A cluster that does not answer fails the build as an environment error
// (not bad input), within the provider's timeout, and leaves nothing.
func TestNewFailsOnAClusterThatDoesNotAnswer(t *testing.T) {
	tc := &toolchain.Toolchain{Root: t.TempDir(), Bin: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := New(ctx, WithProvider(cluster.KindExisting), WithKubeconfig(kubeconfig(t, "https://127.0.0.1:1")), WithToolchain(tc))
	var bad *UsageError
	var phase *cluster.PhaseError
	if err == nil || errors.As(err, &bad) || !errors.As(err, &phase) || h != nil {
		t.Fatalf("got (%v, %v), want a PhaseError and no harness", h, err)
	}
}

func TestCloseIsSafeOnNothing(t *testing.T) {
	var h *Harness
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := (&Harness{}).Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + server + `", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
