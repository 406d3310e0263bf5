package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestExistingAcceptsOnlyItsOwnCatalog(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(existingKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	aws, _ := filepath.Abs("../../fixtures/catalogs/aws-small.json")
	link := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.Symlink(aws, link); err != nil {
		t.Fatal(err)
	}
	e, err := NewExisting(WithKubeconfig(kc), WithCatalog(link))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.UseKarpenter(ctx, "../../fixtures/catalogs/aws-small.json", nil); err != nil {
		t.Fatalf("UseKarpenter of its own catalog through another path: %v", err)
	}
	if err := e.UseKarpenter(ctx, "generic.json", nil); err == nil {
		t.Fatal("UseKarpenter switched an existing cluster to another catalog")
	}
	if err := e.UseKarpenter(ctx, aws, map[string]string{"BATCH_MAX_DURATION": "5s"}); err == nil {
		t.Fatal("UseKarpenter restarted an existing cluster's Karpenter with other settings")
	}
}

const existingKubeconfig = `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
`
