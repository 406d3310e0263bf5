package toolchain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/module"
)

// ModuleError is a module the go command could not fetch.
type ModuleError struct {
	Module string
	Err    error
}

func (e *ModuleError) Error() string {
	return fmt.Sprintf("failed to fetch %s with `go mod download` (check GOPROXY and that the version exists): %v", e.Module, e.Err)
}

func (e *ModuleError) Unwrap() error { return e.Err }

// downloadModule returns the directory of path@version in the module
// cache, fetching it through GOPROXY when it is not there yet. The one an
// installed binary came from is there already (go install put it there):
// it is read without asking the proxy or the checksum database again.
func downloadModule(ctx context.Context, path, version string) (string, error) {
	mod := path + "@" + version
	if dir := cachedModule(path, version); dir != "" {
		return dir, nil
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	// Outside any module, so a team repository's go.mod (or go.work) has no say.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off", "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if errors.Is(runErr, exec.ErrNotFound) {
		return "", &ModuleError{Module: mod, Err: errors.New("the go command is not on PATH; an installed nodeprint builds its toolchain from Go module sources and needs Go")}
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil || info.Error != "" || info.Dir == "" {
		msg := strings.TrimSpace(info.Error)
		if msg == "" {
			msg = strings.TrimSpace(stderr.String())
		}
		if msg == "" && runErr != nil {
			msg = runErr.Error()
		}
		return "", &ModuleError{Module: mod, Err: errors.New(msg)}
	}
	return info.Dir, nil
}

// stageModules copies the nested build modules of t.Version from the
// module cache (read-only) into dir, where the build may edit go.mod for
// another pinned version.
func (t *Toolchain) stageModules(ctx context.Context, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to clear %s: %w", dir, err)
	}
	for _, m := range components {
		src, err := downloadModule(ctx, ModulePath+"/"+m.module, t.Version)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, m.name)
		// CopyFS writes files 0666 less the umask: the copy is writable.
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			return fmt.Errorf("failed to copy %s into %s: %w", src, dst, err)
		}
	}
	return nil
}

// requiredModule is a module as `go list -m -json` describes it.
type requiredModule struct {
	Version, Dir string
	Replace      *struct{ Version, Dir string }
}

// moduleRequiredAt asks the go command, in dir, which version of path the
// module there requires and where its files are; nil when dir is in no
// module or the module does not require path.
func moduleRequiredAt(ctx context.Context, dir, path string) (*requiredModule, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, nil //nolint:nilerr // no module here, or one without nodeprint: nothing to use
	}
	var m requiredModule
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("failed to read `go list -m -json %s` in %s: %w", path, dir, err)
	}
	if m.Dir == "" && (m.Replace == nil || m.Replace.Dir == "") {
		return nil, nil
	}
	return &m, nil
}

// cachedModule is path@version's directory in the module cache, or ""
// when it is not there (complete: the go command writes the directory
// only after it has verified the zip).
func cachedModule(path, version string) string {
	esc, err := module.EscapePath(path)
	if err != nil {
		return ""
	}
	escv, err := module.EscapeVersion(version)
	if err != nil {
		return ""
	}
	cache, err := goModCache()
	if err != nil {
		return ""
	}
	dir := filepath.Join(cache, filepath.FromSlash(esc)+"@"+escv)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return ""
	}
	return dir
}

// goModCache is `go env GOMODCACHE`, asked once per process: every Find
// of an installed binary and every build module looks there first.
var goModCache = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	return strings.TrimSpace(string(out)), err
})
