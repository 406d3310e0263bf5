package toolchain

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// BuildScript builds the components from pinned module sources, relative
// to the root (the Makefile's toolchain target runs it too).
const BuildScript = "tools/toolchain/build.sh"

// components are what the build makes, in build.sh's names: the nested
// module each is built from (a module zip leaves nested modules out, so an
// installed binary fetches each at its own version; a release tags them
// all: docs/install.md) and its pinned version.
var components = []struct {
	name, module string
	version      func(Versions) string
}{
	{"kubernetes", "tools/toolchain/kubernetes", func(v Versions) string { return v.Kubernetes }},
	{"etcd", "tools/toolchain/etcd", func(v Versions) string { return v.Etcd }},
	{"kwok", "tools/toolchain/kwok", func(v Versions) string { return v.Kwok }},
	{"metrics-server", "tools/toolchain/metrics-server", func(v Versions) string { return v.MetricsServer }},
	{"karpenter", "tools/karpenter", func(v Versions) string { return v.Karpenter }},
}

// Fix is the command that builds the toolchain of this layout.
func (t *Toolchain) Fix() string {
	if t.Source == Installed {
		return "nodeprint toolchain build"
	}
	return "make tools"
}

// Check reports a *MissingError when any built file is absent.
func (t *Toolchain) Check() error {
	p := t.Paths()
	var missing []string
	for _, f := range []string{p.KubeAPIServer, p.KubeControllerManager, p.KubeScheduler, p.Kubectl, p.Etcd, p.Kwok, p.Kwokctl,
		p.MetricsServer, p.MetricsServerManifests, p.KwokKustomize, p.KwokCRDs, p.Karpenter, p.KarpenterCRDs, p.InstanceTypes} {
		if _, err := os.Stat(f); err != nil {
			// Named as under the binaries' directory (bin/kwok), or in full
			// when it is elsewhere (a --karpenter-binary).
			name := f
			if rel, err := filepath.Rel(t.Bin, f); err == nil && !strings.HasPrefix(rel, "..") {
				name = filepath.Join(filepath.Base(t.Bin), rel)
			}
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return &MissingError{Bin: t.Bin, Missing: missing, Fix: t.Fix()}
	}
	return nil
}

// Ensure builds the toolchain when Check fails, streaming the build's
// output to out, and checks again afterwards.
func (t *Toolchain) Ensure(ctx context.Context, out io.Writer) error {
	err := t.Check()
	if err == nil {
		return nil
	}
	if out != nil {
		fmt.Fprintf(out, "toolchain incomplete (%v); building it now (about 11 minutes on a cold machine)\n", err)
	}
	if err := t.Build(ctx, out); err != nil {
		return err
	}
	return t.Check()
}

// Build runs the build script for the named components (default: all,
// the script's own default), which skips each one whose stamp and outputs
// are present. An installed binary's build modules are fetched at its own
// version first.
func (t *Toolchain) Build(ctx context.Context, out io.Writer, names ...string) error {
	return t.build(ctx, out, nil, names)
}

// BuildMutant builds the pinned Karpenter with one more patch (a unified
// diff against sigs.k8s.io/karpenter, -p1) as mutant name, at
// MutantBinary(name); the build is skipped when its stamp says the same
// patch built it. make mutants and make sensitivity build through it.
func (t *Toolchain) BuildMutant(ctx context.Context, out io.Writer, name, patch string) error {
	abs, err := filepath.Abs(patch)
	if err != nil {
		return err
	}
	return t.build(ctx, out, []string{"KARPENTER_MUTANT=" + name, "KARPENTER_MUTANT_PATCH=" + abs}, []string{"karpenter-mutant"})
}

func (t *Toolchain) build(ctx context.Context, out io.Writer, extra, names []string) error {
	if out == nil {
		out = io.Discard
	}
	env := append(append(os.Environ(), t.Env()...), extra...)
	if t.Source == Installed {
		modules := filepath.Join(t.Bin, ".modules")
		fmt.Fprintf(out, "[toolchain] fetching nodeprint's build modules %s into %s\n", t.Version, modules)
		if err := t.stageModules(ctx, modules); err != nil {
			return err
		}
		env = append(env, "NODEPRINT_BUILD_MODULES="+modules)
	}
	if err := os.MkdirAll(t.Bin, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", t.Bin, err)
	}
	// bash runs it: the module cache keeps no file modes.
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(t.Root, BuildScript), t.Bin}, names...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	// The script's go builds are its children: cancelling stops the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("failed to build the toolchain into %s with %s (its output is above): %w", t.Bin, BuildScript, err)
	}
	return nil
}

// optional are the components the kind provider builds when it needs them
// (the node image; with Karpenter in the cluster, its image and helm), in
// build.sh's names, with their stamp and pinned version.
var optional = []struct {
	name    string
	stamp   func(Versions) string
	version func(Versions) string
}{
	{"kind-node", func(Versions) string { return "kind-node" }, func(v Versions) string { return v.Kubernetes }},
	{"karpenter-image", func(v Versions) string { return "karpenter-image-" + v.Karpenter }, func(v Versions) string { return v.Karpenter }},
	{"helm", func(Versions) string { return "helm" }, func(v Versions) string { return v.Helm }},
}

// Component is one built component as its stamp describes it.
type Component struct {
	// Optional components are built when the kind provider needs them;
	// Check does not ask for them.
	Optional bool
	Name     string
	// Want is the pinned version.
	Want string
	// Built is what the stamp says was built; empty when nothing was.
	Built string
}

// Current says whether the build of the pinned version is there.
func (c Component) Current() bool {
	return c.Built == c.Name+" "+c.Want || strings.HasPrefix(c.Built, c.Name+" "+c.Want+" ")
}

// Status reads the build's stamps of every component.
func (t *Toolchain) Status() []Component {
	out := make([]Component, 0, len(components))
	for _, c := range components {
		want := c.version(t.Versions)
		// build.sh stamps each Karpenter release apart: several live side by side.
		stamp := c.name
		if c.name == "karpenter" {
			stamp += "-" + want
		}
		b, _ := os.ReadFile(filepath.Join(t.Bin, ".stamps", stamp))
		out = append(out, Component{Name: c.name, Want: want, Built: strings.TrimSpace(string(b))})
	}
	for _, c := range optional {
		b, _ := os.ReadFile(filepath.Join(t.Bin, ".stamps", c.stamp(t.Versions)))
		out = append(out, Component{Optional: true, Name: c.name, Want: c.version(t.Versions), Built: strings.TrimSpace(string(b))})
	}
	return out
}

// MutantBinary is where the karpenter-mutant build puts the pinned
// Karpenter built with mutant name's patch (`make mutants`).
func (t *Toolchain) MutantBinary(name string) string {
	return filepath.Join(t.Bin, "karpenter", t.Versions.Karpenter, "mutants", name, "karpenter-kwok")
}
