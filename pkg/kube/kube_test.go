package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeKubeconfig(t *testing.T, dir, user string) string {
	t.Helper()
	p := filepath.Join(dir, "kubeconfig.yaml")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: ` + user + `
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A client certificate given as files is read once into the config, so
// client-go starts no reloading goroutine that outlives the cluster.
func TestConfigInlinesClientCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	crt, key := filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	if err := os.WriteFile(crt, []byte("CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc := writeKubeconfig(t, dir, `{client-certificate: `+crt+`, client-key: `+key+`}`)
	cfg, err := Config(kc)
	if err != nil {
		t.Fatal(err)
	}
	tls := cfg.TLSClientConfig
	if tls.CertFile != "" || tls.KeyFile != "" || string(tls.CertData) != "CERT" || string(tls.KeyData) != "KEY" {
		t.Fatalf("files not inlined: CertFile %q KeyFile %q CertData %q KeyData %q", tls.CertFile, tls.KeyFile, tls.CertData, tls.KeyData)
	}

	// Down removed the key: the error names the kubeconfig and the file.
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	_, err = Config(kc)
	if err == nil || !strings.Contains(err.Error(), kc) || !strings.Contains(err.Error(), key) {
		t.Fatalf("missing key: %v, want an error naming %s and %s", err, kc, key)
	}
}

func TestConfigKeepsInlineAndTokenCredentials(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Config(writeKubeconfig(t, dir, `{client-certificate-data: Q0VSVA==, client-key-data: S0VZ}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.TLSClientConfig.CertData) != "CERT" || string(cfg.TLSClientConfig.KeyData) != "KEY" {
		t.Fatalf("inline data changed: %q %q", cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData)
	}
	cfg, err = Config(writeKubeconfig(t, dir, `{token: abc}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "abc" || len(cfg.TLSClientConfig.CertData) != 0 {
		t.Fatalf("token config changed: %+v", cfg.TLSClientConfig)
	}
}
