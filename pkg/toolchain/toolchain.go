// Package toolchain finds the binaries that `make tools` builds into bin/
// and builds them when they are missing, so that nothing in nodeprint skips
// silently for want of a binary.
package toolchain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
}

// Toolchain is a repository checkout with its bin/ directory.
type Toolchain struct {
	Root     string
	Bin      string
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
}

// MissingError lists built files that are not there.
type MissingError struct {
	Bin     string
	Missing []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the toolchain in %s is incomplete (missing %s): run `make tools` in the repository root",
		e.Bin, strings.Join(e.Missing, ", "))
}

// Option configures Find.
type Option func(*findOptions)

type findOptions struct {
	root string
	env  func(string) string
}

// WithRoot sets the repository root instead of discovering it.
func WithRoot(root string) Option { return func(o *findOptions) { o.root = root } }

// WithEnv replaces os.Getenv for version overrides (tests).
func WithEnv(getenv func(string) string) Option { return func(o *findOptions) { o.env = getenv } }

// Find locates the repository: the WithRoot option, else $NODEPRINT_ROOT,
// else the nearest directory above the working directory whose go.mod
// declares ModulePath, else the directory above the running executable's
// bin/. Versions are read from VersionsFile, with the same environment
// overrides the Makefile honours (KARPENTER_VERSION=… and so on).
func Find(opts ...Option) (*Toolchain, error) {
	o := findOptions{env: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	root := o.root
	if root == "" {
		root = o.env("NODEPRINT_ROOT")
	}
	if root == "" {
		root = discoverRoot()
	}
	if root == "" {
		return nil, errors.New("cannot find the nodeprint repository: run from inside it, or set NODEPRINT_ROOT to its path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve root %q: %w", root, err)
	}
	v, err := readVersions(filepath.Join(abs, VersionsFile), o.env)
	if err != nil {
		return nil, err
	}
	return &Toolchain{Root: abs, Bin: filepath.Join(abs, "bin"), Versions: v}, nil
}

func discoverRoot() string {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isRoot(d) {
				return d
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if d := filepath.Dir(filepath.Dir(exe)); isRoot(d) {
			return d
		}
	}
	return ""
}

func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(first) == "module "+ModulePath
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
	v := Versions{
		Kubernetes: vals["K8S_VERSION"], Etcd: vals["ETCD_VERSION"], Kwok: vals["KWOK_VERSION"],
		MetricsServer: vals["METRICS_SERVER_VERSION"], Karpenter: vals["KARPENTER_VERSION"],
	}
	for name, val := range map[string]string{"K8S_VERSION": v.Kubernetes, "ETCD_VERSION": v.Etcd, "KWOK_VERSION": v.Kwok,
		"METRICS_SERVER_VERSION": v.MetricsServer, "KARPENTER_VERSION": v.Karpenter} {
		if !strings.HasPrefix(val, "v") {
			return Versions{}, fmt.Errorf("%s: %s is %q, want a version such as v1.2.3", path, name, val)
		}
	}
	return v, nil
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
	}
}

// Check reports a *MissingError when any built file is absent.
func (t *Toolchain) Check() error {
	p := t.Paths()
	var missing []string
	for _, f := range []string{p.KubeAPIServer, p.KubeControllerManager, p.KubeScheduler, p.Kubectl, p.Etcd, p.Kwok, p.Kwokctl,
		p.MetricsServer, p.MetricsServerManifests, p.KwokKustomize, p.KwokCRDs, p.Karpenter, p.KarpenterCRDs, p.InstanceTypes} {
		if _, err := os.Stat(f); err != nil {
			rel, _ := filepath.Rel(t.Root, f)
			missing = append(missing, rel)
		}
	}
	if len(missing) > 0 {
		return &MissingError{Bin: t.Bin, Missing: missing}
	}
	return nil
}

// Ensure builds the toolchain with `make toolchain` when Check fails,
// streaming the build's output to out, and checks again afterwards.
func (t *Toolchain) Ensure(ctx context.Context, out io.Writer) error {
	if err := t.Check(); err == nil {
		return nil
	} else if out != nil {
		fmt.Fprintf(out, "toolchain incomplete (%v); building it now (about 15 minutes on a cold machine)\n", err)
	}
	cmd := exec.CommandContext(ctx, "make", "-C", t.Root, "toolchain")
	cmd.Env = append(os.Environ(), "KARPENTER_VERSION="+t.Versions.Karpenter, "K8S_VERSION="+t.Versions.Kubernetes,
		"ETCD_VERSION="+t.Versions.Etcd, "KWOK_VERSION="+t.Versions.Kwok, "METRICS_SERVER_VERSION="+t.Versions.MetricsServer)
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("failed to build the toolchain with `make -C %s toolchain`: %w", t.Root, err)
	}
	return t.Check()
}

// MutantBinary is where the karpenter-mutant build puts the pinned
// Karpenter built with mutant name's patch (`make mutants`).
func (t *Toolchain) MutantBinary(name string) string {
	return filepath.Join(t.Bin, "karpenter", t.Versions.Karpenter, "mutants", name, "karpenter-kwok")
}
