// Package modproxy writes a Go module proxy directory (GOPROXY=file://DIR)
// that serves a checkout's modules at one version, as a release publishes
// them: the root module and each nested one (tools/karpenter,
// tools/toolchain/*), every module zip holding what git would commit. It
// lets a test install nodeprint by version, exactly as a team does, from
// the tree under test rather than from a tag on GitHub.
package modproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Write serves every module of the checkout at root as version under dir
// and returns their paths. The files are those git tracks plus the
// untracked ones it does not ignore.
func Write(ctx context.Context, dir, root, version string) ([]string, error) {
	files, err := gitFiles(ctx, root)
	if err != nil {
		return nil, err
	}
	mods := map[string]string{} // module dir (slash, "" for the root) → module path
	for _, f := range files {
		if path.Base(f) != "go.mod" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, fmt.Errorf("failed to read %s: %w", f, err)
		}
		mp := modfile.ModulePath(b)
		if mp == "" {
			return nil, fmt.Errorf("%s: no module line", f)
		}
		mods[strings.TrimSuffix(path.Dir(f), ".")] = mp
	}
	var paths []string
	for d, mp := range mods {
		if err := writeModule(dir, root, d, module.Version{Path: mp, Version: version}, files); err != nil {
			return nil, err
		}
		paths = append(paths, mp)
	}
	sort.Strings(paths)
	return paths, nil
}

func gitFiles(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("failed to list the files of %s with git: %w: %s", root, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		// A tracked file deleted in the tree is not part of it.
		if f != "" {
			if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// writeModule writes the proxy's list, .info, .mod and .zip of m, whose
// files are those under moddir (zip.Create leaves out nested modules).
func writeModule(dir, root, moddir string, m module.Version, files []string) error {
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return fmt.Errorf("failed to escape %s: %w", m.Path, err)
	}
	at := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", at, err)
	}
	var zfiles []zip.File
	prefix := ""
	if moddir != "" {
		prefix = moddir + "/"
	}
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f, prefix); ok {
			zfiles = append(zfiles, file{rel: rel, abs: filepath.Join(root, filepath.FromSlash(f))})
		}
	}
	var z bytes.Buffer
	if err := zip.Create(&z, m, zfiles); err != nil {
		return fmt.Errorf("failed to zip %s: %w", m, err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(prefix+"go.mod")))
	if err != nil {
		return fmt.Errorf("failed to read %s's go.mod: %w", m.Path, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{m.Version + ".zip": z.Bytes(), m.Version + ".mod": gomod, m.Version + ".info": info, "list": []byte(m.Version + "\n")} {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			return fmt.Errorf("failed to write the proxy's %s of %s: %w", name, m.Path, err)
		}
	}
	return nil
}

type file struct{ rel, abs string }

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
