package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// privilegedProbeTimeout bounds each docker command of the probe (an
// import of an empty image and one container that never starts: about a
// second together on the project's machines).
const privilegedProbeTimeout = 30 * time.Second

// PrivilegedError is a Docker engine that refuses privileged containers
// and also the unprivileged route's flags: no kind node can start there,
// the environment's failure (exit 3), found before anything is built or
// created.
type PrivilegedError struct {
	// Engine is what `docker run --privileged` said, first line.
	Engine string
	// Route is what `docker run` with the wrapper's flags said, and the
	// flags.
	Route, Flags string
}

func (e *PrivilegedError) Error() string {
	return fmt.Sprintf("the Docker engine refuses privileged containers, which kind runs every node as "+
		"(docker run --privileged: %s), and also nodeprint's way round it "+
		"(docker run %s: %s); an engine whose own capability bounding set lacks a capability "+
		"(CapBnd in /proc/<dockerd pid>/status) cannot grant one; "+
		"use the local provider, which needs no privileges (docs/cluster.md#providers)", e.Engine, e.Flags, e.Route)
}

// emptyTar is a tar archive of no files: `docker import` makes an image of
// zero bytes from it.
func emptyTar() []byte {
	var b bytes.Buffer
	_ = tar.NewWriter(&b).Close() // writing to a buffer cannot fail
	return b.Bytes()
}

// decideKindRoute finds how kind's nodes can start on this engine: as kind
// starts them (privileged) when the engine grants that, else with the
// wrapper's flags (every capability the engine has), else a
// *PrivilegedError naming both refusals.
func decideKindRoute(ctx context.Context) (KindRoute, error) {
	route := KindRoute{CgroupV1: engineCgroupV1(ctx)}
	image := fmt.Sprintf("nodeprint-probe:privileged-%d", os.Getpid())
	ictx, cancel := context.WithTimeout(ctx, privilegedProbeTimeout)
	defer cancel()
	imp := exec.CommandContext(ictx, "docker", "import", "--message", "nodeprint: does the engine grant privileged containers", "-", image)
	imp.Stdin = bytes.NewReader(emptyTar())
	if out, err := imp.CombinedOutput(); err != nil {
		return route, probeFailed(ctx, ictx, "docker import", err, out)
	}
	defer func() {
		// A fresh context: the caller's may be what ended the probe.
		rctx, cancel := context.WithTimeout(context.Background(), privilegedProbeTimeout)
		defer cancel()
		_ = exec.CommandContext(rctx, "docker", "rmi", image).Run()
	}()
	refused, err := probeRun(ctx, image, "--privileged")
	if err != nil || refused == "" {
		route.Privileged = true
		return route, err
	}
	route.Dropped, _ = engineLacks(ctx)
	flags := route.wrapperRunFlags()
	why, err := probeRun(ctx, image, flags...)
	if err != nil {
		return route, err
	}
	if why != "" {
		return route, &PrivilegedError{Engine: refused, Route: why, Flags: strings.Join(flags, " ")}
	}
	return route, nil
}

// probeRun runs image (no files) with flags and an entrypoint that does
// not exist. The runtime applies the capabilities before it looks for the
// entrypoint, so an engine that grants them fails with docker's exit code
// 127 (command not found), and probeRun returns ""; one that refuses fails
// before, with 125, and probeRun returns its reason.
func probeRun(ctx context.Context, image string, flags ...string) (refused string, err error) {
	rctx, cancel := context.WithTimeout(ctx, privilegedProbeTimeout)
	defer cancel()
	args := append(append([]string{"run", "--rm", "--network", "none"}, flags...), "--entrypoint", "/nodeprint-probe", image)
	out, err := exec.CommandContext(rctx, "docker", args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "", fmt.Errorf("docker run %s of an image of no files succeeded: this engine is not understood; use the local provider", strings.Join(flags, " "))
	case rctx.Err() != nil || !errors.As(err, &ee):
		return "", probeFailed(ctx, rctx, "docker run "+strings.Join(flags, " "), err, out)
	case ee.ExitCode() == 127:
		return "", nil // the capabilities were granted; only the entrypoint is missing
	}
	msg := strings.TrimPrefix(firstLine(string(out)), "docker: ")
	if msg == "" {
		msg = err.Error()
	}
	return msg, nil
}

// engineCgroupV1 says whether the engine runs containers under cgroup v1.
func engineCgroupV1(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, privilegedProbeTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.CgroupVersion}}").Output()
	return err == nil && strings.TrimSpace(string(out)) == "1"
}

// probeFailed says why a docker command of the probe gave no answer.
func probeFailed(ctx, cmdCtx context.Context, what string, err error, out []byte) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cmdCtx.Err() != nil {
		return fmt.Errorf("failed to ask the Docker engine for a privileged container: %s gave no answer within %s", what, privilegedProbeTimeout)
	}
	return fmt.Errorf("failed to ask the Docker engine for a privileged container: %s: %w: %s", what, err, firstLine(string(out)))
}
