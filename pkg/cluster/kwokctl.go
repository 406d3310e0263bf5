package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// kwokctlConfig is the subset of kwokctl's KwokctlConfiguration nodeprint
// sets. Field names follow config.kwok.x-k8s.io/v1alpha1.
type kwokctlConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Options    kwokctlOptions `json:"options"`
}

type kwokctlOptions struct {
	Runtime                     string   `json:"runtime"`
	BindAddress                 string   `json:"bindAddress"`
	KubeVersion                 string   `json:"kubeVersion,omitempty"`
	KubeApiserverBinary         string   `json:"kubeApiserverBinary"`
	KubeControllerManagerBinary string   `json:"kubeControllerManagerBinary"`
	KubeSchedulerBinary         string   `json:"kubeSchedulerBinary"`
	KubectlBinary               string   `json:"kubectlBinary"`
	EtcdBinary                  string   `json:"etcdBinary"`
	KwokControllerBinary        string   `json:"kwokControllerBinary"`
	MetricsServerBinary         string   `json:"metricsServerBinary"`
	MetricsServerManifests      []string `json:"metricsServerManifests"`
	EnableMetricsServer         bool     `json:"enableMetricsServer"`
	DisableQPSLimits            bool     `json:"disableQPSLimits"`
	CacheDir                    string   `json:"cacheDir"`
	// EnableCRDs makes kwok-controller read these kinds from the API server
	// instead of from its start-up configuration, so the harness can add and
	// remove stages and resource usages (faults) while the cluster runs.
	EnableCRDs []string `json:"enableCRDs"`
}

// dynamicKinds are the KWOK kinds served as CRDs (see kwokctlOptions.EnableCRDs).
var dynamicKinds = []string{"Stage", "ResourceUsage", "ClusterResourceUsage", "Metric"}

// writeKwokctlConfig writes the configuration kwokctl starts the control
// plane from: local binaries only (kwokctl downloads nothing), every
// component on loopback, client QPS limits off, metrics-server from its own
// manifests in bin/.
func writeKwokctlConfig(path string, tc *toolchain.Toolchain, cacheDir string) error {
	p := tc.Paths()
	cfg := kwokctlConfig{
		APIVersion: "config.kwok.x-k8s.io/v1alpha1",
		Kind:       "KwokctlConfiguration",
		Options: kwokctlOptions{
			Runtime:                     "binary",
			BindAddress:                 "127.0.0.1",
			KubeVersion:                 tc.Versions.Kubernetes,
			KubeApiserverBinary:         p.KubeAPIServer,
			KubeControllerManagerBinary: p.KubeControllerManager,
			KubeSchedulerBinary:         p.KubeScheduler,
			KubectlBinary:               p.Kubectl,
			EtcdBinary:                  p.Etcd,
			KwokControllerBinary:        p.Kwok,
			MetricsServerBinary:         p.MetricsServer,
			MetricsServerManifests:      []string{p.MetricsServerManifests},
			EnableMetricsServer:         true,
			DisableQPSLimits:            true,
			CacheDir:                    cacheDir,
			EnableCRDs:                  dynamicKinds,
		},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("failed to encode the kwokctl configuration: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("failed to write the kwokctl configuration: %w", err)
	}
	return nil
}

// kwokPorts are the ports kwokctl chose, read back from the configuration it
// saved in its work directory.
type kwokPorts struct {
	KubeApiserverPort         int   `json:"kubeApiserverPort"`
	KubeControllerManagerPort int   `json:"kubeControllerManagerPort"`
	KubeSchedulerPort         int   `json:"kubeSchedulerPort"`
	KwokControllerPort        int   `json:"kwokControllerPort"`
	MetricsServerPort         int   `json:"metricsServerPort"`
	EtcdPort                  int   `json:"etcdPort"`
	SecurePort                *bool `json:"securePort"`
}

func readKwokPorts(clusterDir string) (kwokPorts, error) {
	path := filepath.Join(clusterDir, "kwok.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return kwokPorts{}, fmt.Errorf("failed to read kwokctl's saved configuration: %w", err)
	}
	for _, doc := range strings.Split(string(b), "\n---") {
		var d struct {
			Kind    string    `json:"kind"`
			Options kwokPorts `json:"options"`
		}
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			continue
		}
		if d.Kind == "KwokctlConfiguration" {
			return d.Options, nil
		}
	}
	return kwokPorts{}, fmt.Errorf("%s has no KwokctlConfiguration", path)
}
