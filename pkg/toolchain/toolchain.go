// Package toolchain finds nodeprint's own files (fixtures, pinned versions,
// the build script) and the binaries built from pinned Go module sources,
// and builds them when they are missing, so that nothing in nodeprint skips
// silently for want of a binary.
//
// It serves two layouts. In a checkout of the repository the files are the
// checkout's, the binaries go to its bin/ (`make tools`) and cluster state
// to its .work/. An installed binary (`go install
// github.com/nodeprint/nodeprint/tools/nodeprint@VERSION`) reads the files
// of its own module version from the Go module cache and builds the
// binaries into a per-user cache shared by every team repository on the
// machine (`nodeprint toolchain build`).
package toolchain

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ModulePath is the main module's path, used to recognise the repository root.
const ModulePath = "github.com/nodeprint/nodeprint"

// VersionsFile is where the pinned versions live, relative to the root.
const VersionsFile = "tools/toolchain/versions.mk"

// Versions are the pinned component versions.
type Versions struct {
	Kubernetes    string
	Etcd          string
	Kwok          string
	MetricsServer string
	Karpenter     string
	// ApprovedGo is the only newer Go the build may fetch, for a pinned
	// module that needs one.
	ApprovedGo string
	// KindNodeSuite and KindNodeMirror are the Debian suite of the kind
	// node image's root filesystem and the mirror it is read from.
	KindNodeSuite  string
	KindNodeMirror string
	// Helm is the helm release that installs Karpenter's chart in a kind
	// cluster (--karpenter-in-cluster).
	Helm string
}

// Toolchain is where nodeprint's files, binaries and state are.
type Toolchain struct {
	// Root holds nodeprint's own files (fixtures/, tools/toolchain/); it
	// is read-only for an installed binary (the Go module cache).
	Root string
	// Bin is where the binaries are built.
	Bin string
	// Work holds the state of the clusters nodeprint runs.
	Work string
	// Source says which layout this is.
	Source Source
	// Version is the module version an installed binary's files come
	// from; empty in a checkout.
	Version  string
	Versions Versions
	// KarpenterBinary, when set, replaces the pinned release's Karpenter
	// binary (a build of that release with changes: a team's fork, one
	// of `make mutants`); the CRDs and catalog stay the release's.
	KarpenterBinary string
}

// Paths of the built binaries and the files copied next to them.
type Paths struct {
	KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl string
	Etcd, Kwok, Kwokctl, MetricsServer                           string
	// MetricsServerManifests is metrics-server's own kustomize base.
	MetricsServerManifests string
	// KwokKustomize holds KWOK's stage and metrics configurations.
	KwokKustomize string
	// KwokCRDs are KWOK's CRDs (Stage, ResourceUsage, ...), which the kind
	// provider applies itself.
	KwokCRDs string
	// Karpenter is the project's Karpenter binary for Versions.Karpenter,
	// or Toolchain.KarpenterBinary.
	Karpenter string
	// KarpenterCRDs is the directory with the CRDs of that Karpenter module.
	KarpenterCRDs string
	// InstanceTypes is the KWOK provider's generic catalog of that module.
	InstanceTypes string
	// KarpenterPod is the directory of that release built to run in a pod
	// (the karpenter-image component): its static binary karpenter-kwok,
	// the file image naming the image built from it, and chart, the
	// release's kwok/charts.
	KarpenterPod string
	// Helm is the helm CLI (the helm component).
	Helm string
}

// MissingError lists built files that are not there.
type MissingError struct {
	Bin     string
	Missing []string
	// Fix is the command that builds them.
	Fix string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the toolchain in %s is incomplete (missing %s): run `%s`",
		e.Bin, strings.Join(e.Missing, ", "), e.Fix)
}

// readVersions parses the `NAME ?= value` lines of versions.mk.
func readVersions(path string, getenv func(string) string) (Versions, error) {
	f, err := os.Open(path)
	if err != nil {
		return Versions{}, fmt.Errorf("failed to read the pinned versions: %w", err)
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		k, v, ok := strings.Cut(t, "?=")
		if !ok {
			return Versions{}, fmt.Errorf("%s:%d: want `NAME ?= value`, got %q", path, line, t)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if e := getenv(k); e != "" {
			v = e
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return Versions{}, fmt.Errorf("failed to read %s: %w", path, err)
	}
	var v Versions
	for _, x := range versionVars {
		val := vals[x.name]
		if val == "" || !strings.HasPrefix(val, x.prefix) {
			return Versions{}, fmt.Errorf("%s: %s is %q, want a version such as %s", path, x.name, val, x.example)
		}
		*x.field(&v) = val
	}
	return v, nil
}

// versionVars are the variables of versions.mk, as the Makefile and
// build.sh name them, with the field each sets.
var versionVars = []struct {
	name, prefix, example string
	field                 func(*Versions) *string
}{
	{"K8S_VERSION", "v", "v1.2.3", func(v *Versions) *string { return &v.Kubernetes }},
	{"ETCD_VERSION", "v", "v1.2.3", func(v *Versions) *string { return &v.Etcd }},
	{"KWOK_VERSION", "v", "v1.2.3", func(v *Versions) *string { return &v.Kwok }},
	{"METRICS_SERVER_VERSION", "v", "v1.2.3", func(v *Versions) *string { return &v.MetricsServer }},
	{"KARPENTER_VERSION", "v", "v1.2.3", func(v *Versions) *string { return &v.Karpenter }},
	{"APPROVED_GOTOOLCHAIN", "go1.", "go1.27.3", func(v *Versions) *string { return &v.ApprovedGo }},
	{"KIND_NODE_SUITE", "", "bookworm", func(v *Versions) *string { return &v.KindNodeSuite }},
	{"KIND_NODE_MIRROR", "http", "http://deb.debian.org/debian", func(v *Versions) *string { return &v.KindNodeMirror }},
	{"HELM_VERSION", "v", "v1.2.3", func(v *Versions) *string { return &v.Helm }},
}

// Env is the pinned versions as the build script reads them.
func (t *Toolchain) Env() []string {
	env := make([]string, 0, len(versionVars))
	for _, x := range versionVars {
		env = append(env, x.name+"="+*x.field(&t.Versions))
	}
	return env
}

// Paths returns where the built files are.
func (t *Toolchain) Paths() Paths {
	b := t.Bin
	k := filepath.Join(b, "karpenter", t.Versions.Karpenter)
	karpenter := filepath.Join(k, "karpenter-kwok")
	if t.KarpenterBinary != "" {
		karpenter = t.KarpenterBinary
	}
	return Paths{
		KubeAPIServer: filepath.Join(b, "kube-apiserver"), KubeControllerManager: filepath.Join(b, "kube-controller-manager"),
		KubeScheduler: filepath.Join(b, "kube-scheduler"), Kubectl: filepath.Join(b, "kubectl"),
		Etcd: filepath.Join(b, "etcd"), Kwok: filepath.Join(b, "kwok"), Kwokctl: filepath.Join(b, "kwokctl"),
		MetricsServer: filepath.Join(b, "metrics-server"), MetricsServerManifests: filepath.Join(b, "metrics-server-manifests", "base"),
		KwokKustomize: filepath.Join(b, "kwok-kustomize"), KwokCRDs: filepath.Join(b, "kwok-kustomize", "crd", "bases"),
		Karpenter: karpenter, KarpenterCRDs: filepath.Join(k, "crds"),
		InstanceTypes: filepath.Join(k, "instance_types.json"),
		KarpenterPod:  filepath.Join(k, "in-cluster"), Helm: filepath.Join(b, "helm"),
	}
}
