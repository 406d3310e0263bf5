package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nodeprint/nodeprint/pkg/process"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// Owner is the process a temporary cluster lives for (a `nodeprint run`,
// a suite, the benchmark): the pid and its start time, so that a reused
// pid is not taken for the owner.
type Owner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// WithTemporary records the calling process as the cluster's owner: once
// that process is gone without stopping it (kill -9, a crash), the cluster
// is stale, and FindStale and Prune find it. Default: no owner, because a
// cluster from `nodeprint cluster up` outlives the command on purpose.
func WithTemporary() Option { return func(o *Options) { o.temporary = true } }

func currentOwner() *Owner {
	start, err := process.StartTime(os.Getpid())
	if err != nil {
		return nil
	}
	return &Owner{PID: os.Getpid(), Start: start}
}

// Stale is a local cluster left behind by its owner.
type Stale struct {
	Name string
	Dir  string
	// Reason says why it is stale.
	Reason string
	// Processes are the live processes that still belong to it.
	Processes []int
}

// incompleteAge is how old a cluster directory without a state file must
// be to count as an interrupted start rather than one starting now.
const incompleteAge = time.Minute

// FindStale lists the local provider's clusters whose owner process is
// gone, and directories an interrupted start left without a state file.
// Clusters without an owner (from `nodeprint cluster up`) are never stale.
func FindStale(opts ...Option) ([]Stale, error) {
	o := Options{}
	for _, opt := range opts {
		opt(&o)
	}
	tc := o.toolchain
	if tc == nil {
		var err error
		if tc, err = toolchain.Find(); err != nil {
			return nil, err
		}
	}
	root := o.workRoot
	if root == "" {
		root = filepath.Join(tc.Work, "clusters")
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list clusters in %s: %w", root, err)
	}
	var out []Stale
	for _, e := range entries {
		if !e.IsDir() || ValidateName(e.Name()) != nil {
			continue
		}
		l, err := NewLocal(WithName(e.Name()), WithWorkRoot(root), WithToolchain(tc))
		if err != nil {
			continue
		}
		reason := ""
		st, err := l.readState()
		var nf *NotFoundError
		switch {
		case errors.As(err, &nf):
			if fi, serr := os.Stat(l.dir); serr == nil && time.Since(fi.ModTime()) > incompleteAge {
				reason = "no state file: a start was interrupted"
			}
		case err != nil:
			reason = err.Error()
		case st.Owner != nil && !process.Same(st.Owner.PID, st.Owner.Start):
			reason = fmt.Sprintf("its owner, pid %d, is gone without stopping it", st.Owner.PID)
		}
		if reason == "" {
			continue
		}
		pids, err := process.FindReferencing(l.dir)
		if err != nil {
			return nil, err
		}
		out = append(out, Stale{Name: e.Name(), Dir: l.dir, Reason: reason, Processes: pids})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Prune stops and removes every stale cluster (as `down` does: recorded
// pids first, then any process still naming its directory) and returns
// them; errors are aggregated, one cluster's failure does not stop the rest.
func Prune(ctx context.Context, opts ...Option) ([]Stale, error) {
	stale, err := FindStale(opts...)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, s := range stale {
		l, err := NewLocal(append(append([]Option(nil), opts...), WithName(s.Name), WithWorkRoot(filepath.Dir(s.Dir)))...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := l.Down(ctx); err != nil {
			errs = append(errs, fmt.Errorf("failed to prune cluster %q: %w", s.Name, err))
		}
	}
	return stale, errors.Join(errs...)
}
