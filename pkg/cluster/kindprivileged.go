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

// PrivilegedError is a Docker engine that refuses privileged containers.
// kind runs every node as one (`docker run --privileged`, fixed in kind's
// docker provider), so no kind cluster can start there: the environment's
// failure (exit 3), found before anything is built or created.
type PrivilegedError struct {
	// Engine is what `docker run --privileged` said, first line.
	Engine string
}

func (e *PrivilegedError) Error() string {
	return fmt.Sprintf("the Docker engine refuses privileged containers, and kind runs every node as one "+
		"(docker run --privileged: %s); an engine whose own capability bounding set lacks a capability "+
		"(CapBnd in /proc/<dockerd pid>/status) cannot grant one and refuses with 'unable to apply caps'; "+
		"use the local provider, which needs no privileges (docs/cluster.md#providers)", e.Engine)
}

// emptyTar is a tar archive of no files: `docker import` makes an image of
// zero bytes from it.
func emptyTar() []byte {
	var b bytes.Buffer
	_ = tar.NewWriter(&b).Close() // writing to a buffer cannot fail
	return b.Bytes()
}

// checkPrivileged asks the engine for the one thing kind cannot do
// without: a privileged container. It imports an image of no files under
// a name of this process and runs it privileged with an entrypoint that
// does not exist. The runtime applies the capabilities before it looks
// for the entrypoint, so an engine that grants them fails with docker's
// exit code 127 (command not found) and one that refuses fails before,
// with 125 and its reason. The image is removed again; a probe killed
// half-way leaves that empty image behind, named nodeprint-probe.
func checkPrivileged(ctx context.Context) error {
	image := fmt.Sprintf("nodeprint-probe:privileged-%d", os.Getpid())
	ictx, cancel := context.WithTimeout(ctx, privilegedProbeTimeout)
	defer cancel()
	imp := exec.CommandContext(ictx, "docker", "import", "--message", "nodeprint: does the engine grant privileged containers", "-", image)
	imp.Stdin = bytes.NewReader(emptyTar())
	if out, err := imp.CombinedOutput(); err != nil {
		return probeFailed(ctx, ictx, "docker import", err, out)
	}
	defer func() {
		// A fresh context: the caller's may be what ended the probe.
		rctx, cancel := context.WithTimeout(context.Background(), privilegedProbeTimeout)
		defer cancel()
		_ = exec.CommandContext(rctx, "docker", "rmi", image).Run()
	}()
	rctx, cancel := context.WithTimeout(ctx, privilegedProbeTimeout)
	defer cancel()
	out, err := exec.CommandContext(rctx, "docker", "run", "--rm", "--network", "none", "--privileged",
		"--entrypoint", "/nodeprint-probe", image).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return fmt.Errorf("docker run --privileged of an image of no files succeeded: this engine is not understood; use the local provider")
	case rctx.Err() != nil || !errors.As(err, &ee):
		return probeFailed(ctx, rctx, "docker run --privileged", err, out)
	case ee.ExitCode() == 127:
		return nil // the capabilities were granted; only the entrypoint is missing
	}
	msg := strings.TrimPrefix(firstLine(string(out)), "docker: ")
	if msg == "" {
		msg = err.Error()
	}
	return &PrivilegedError{Engine: msg}
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
