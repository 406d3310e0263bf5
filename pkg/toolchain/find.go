package toolchain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// Source is where a toolchain's files come from.
type Source int

const (
	// Checkout: a clone of the repository; binaries in its bin/, state in
	// its .work/.
	Checkout Source = iota
	// Installed: a binary installed with go install; its files are its
	// module version in the Go module cache, binaries and state in the
	// per-user cache (CacheDir).
	Installed
)

func (s Source) String() string {
	if s == Installed {
		return "installed"
	}
	return "checkout"
}

// CacheDirEnv overrides the per-user cache of an installed binary
// (`nodeprint --cache-dir` sets it).
const CacheDirEnv = "NODEPRINT_CACHE_DIR"

// RootEnv names a checkout to use instead of discovering one.
const RootEnv = "NODEPRINT_ROOT"

// InstallPath is the package `go install` builds the CLI from.
const InstallPath = ModulePath + "/tools/nodeprint"

// moduleTimeout bounds `go mod download` of nodeprint's own module: it is
// read from the module cache after the first time, and fetched from the
// module proxy once.
const moduleTimeout = 3 * time.Minute

// Option configures Find.
type Option func(*findOptions)

type findOptions struct {
	root  string
	env   func(string) string
	build func() (*debug.BuildInfo, bool)
	wd    func() (string, error)
}

// WithRoot sets the checkout instead of discovering it.
func WithRoot(root string) Option { return func(o *findOptions) { o.root = root } }

// WithEnv replaces os.Getenv for version overrides and the cache
// directory (tests).
func WithEnv(getenv func(string) string) Option { return func(o *findOptions) { o.env = getenv } }

// WithBuildInfo replaces debug.ReadBuildInfo, which tells an installed
// binary its module version (tests).
func WithBuildInfo(read func() (*debug.BuildInfo, bool)) Option {
	return func(o *findOptions) { o.build = read }
}

// WithWorkingDir replaces os.Getwd, where the search for a checkout
// starts (tests).
func WithWorkingDir(wd func() (string, error)) Option { return func(o *findOptions) { o.wd = wd } }

// NotFoundError is a binary that finds neither a checkout nor its own
// module version: one built from a checkout, run outside it.
type NotFoundError struct{ Version string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("cannot find nodeprint's files: this binary was built from a checkout (version %s), not installed by version; "+
		"run it inside the checkout, set %s to the checkout's path, or install a release with `go install %s@VERSION`",
		e.Version, RootEnv, InstallPath)
}

// Find locates nodeprint's files, in this order: the WithRoot option,
// $NODEPRINT_ROOT, the nearest directory above the working directory whose
// go.mod declares ModulePath, the directory above the running executable's
// bin/ (all a Checkout); else the running binary's own module version in
// the Go module cache (Installed). Versions are read from VersionsFile,
// with the same environment overrides the Makefile honours
// (KARPENTER_VERSION=… and so on).
func Find(opts ...Option) (*Toolchain, error) {
	o := findOptions{env: os.Getenv, build: debug.ReadBuildInfo, wd: os.Getwd}
	for _, opt := range opts {
		opt(&o)
	}
	tc, err := o.locate()
	if err != nil {
		return nil, err
	}
	if tc.Versions, err = readVersions(filepath.Join(tc.Root, VersionsFile), o.env); err != nil {
		return nil, err
	}
	return tc, nil
}

func (o findOptions) locate() (*Toolchain, error) {
	root := o.root
	if root == "" {
		root = o.env(RootEnv)
	}
	if root == "" {
		root = o.discoverRoot()
	}
	if root != "" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("failed to resolve root %q: %w", root, err)
		}
		return checkout(abs), nil
	}
	return o.installed()
}

// checkout is the layout of the checkout at root (absolute).
func checkout(root string) *Toolchain {
	return &Toolchain{Root: root, Bin: filepath.Join(root, "bin"), Work: filepath.Join(root, ".work"), Source: Checkout}
}

// installed is the layout of a binary installed by version: its files are
// that version of its module, which go install has already put into the
// module cache (or the proxy serves). A team's own test binary carries
// nodeprint as a dependency: its version serves the same way.
func (o findOptions) installed() (*Toolchain, error) {
	bi, ok := o.build()
	if !ok {
		return nil, &NotFoundError{Version: "(unknown)"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), moduleTimeout)
	defer cancel()
	version, served := servedVersion(bi)
	var dir string
	if served {
		d, err := downloadModule(ctx, ModulePath, version)
		if err != nil {
			return nil, err
		}
		dir = d
	} else {
		// A test binary records no dependencies: a team's suite asks the
		// go command which nodeprint its module requires (go test runs
		// it in its package's directory).
		req, err := o.required(ctx)
		if err != nil || req == nil {
			return nil, &NotFoundError{Version: version}
		}
		if req.Replace != nil && req.Replace.Version == "" {
			return checkout(req.Replace.Dir), nil
		}
		version, dir = req.Version, req.Dir
	}
	cache, err := CacheDir(o.env)
	if err != nil {
		return nil, err
	}
	return &Toolchain{Root: dir, Bin: filepath.Join(cache, "toolchain"), Work: filepath.Join(cache, "work"), Source: Installed, Version: version}, nil
}

// required is the nodeprint module that the Go module around the working
// directory requires, as the go command resolves it; nil when there is
// none.
func (o findOptions) required(ctx context.Context) (*requiredModule, error) {
	wd, err := o.wd()
	if err != nil {
		return nil, err
	}
	return moduleRequiredAt(ctx, wd, ModulePath)
}

// OwnVersion is nodeprint's module version in the running binary, and
// whether a module proxy serves it (false for a build from a checkout).
func OwnVersion() (string, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)", false
	}
	return servedVersion(bi)
}

// servedVersion is ownVersion and whether it is a module version: a build
// of a modified checkout is stamped vX-…+dirty, and no module version
// holds its files.
func servedVersion(bi *debug.BuildInfo) (string, bool) {
	v := ownVersion(bi)
	return v, strings.HasPrefix(v, "v") && !strings.HasSuffix(v, "+dirty")
}

// ownVersion is nodeprint's module version in the running binary: the
// main module's (the CLI installed by version) or the dependency's (a
// team's suite importing pkg/environment); "(devel)" or "" otherwise.
func ownVersion(bi *debug.BuildInfo) string {
	if bi.Main.Path == ModulePath {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == ModulePath && d.Replace == nil {
			return d.Version
		}
	}
	return "(devel)"
}

// CacheDir is the per-user cache of installed binaries: $NODEPRINT_CACHE_DIR,
// else $XDG_CACHE_HOME/nodeprint, else ~/.cache/nodeprint.
func CacheDir(getenv func(string) string) (string, error) {
	if d := getenv(CacheDirEnv); d != "" {
		return filepath.Abs(d)
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "nodeprint"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("cannot place nodeprint's cache: neither " + CacheDirEnv + ", XDG_CACHE_HOME nor HOME is set")
	}
	return filepath.Join(home, ".cache", "nodeprint"), nil
}

func (o findOptions) discoverRoot() string {
	if wd, err := o.wd(); err == nil {
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
