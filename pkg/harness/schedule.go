package harness

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/faults"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// Exclusive reports whether a scenario must have its cluster to itself:
// its fault acts on the whole cluster (the capacity decorator's refusals,
// Karpenter's connection to the API server).
func Exclusive(s *scenario.Scenario) bool {
	if s.Spec.Fault == nil {
		return false
	}
	d, ok := faults.Lookup(s.Spec.Fault.Name)
	return ok && d.Exclusive
}

// RunsAlone reports whether a scenario must not share its cluster with
// other runs: a cluster-wide fault; a fault scenario whose expected rule
// reads Karpenter-wide signals, which a run that shares Karpenter cannot
// read (Tenancy); or a plain scenario verified against a recorded
// baseline, whose timings were recorded on an otherwise idle cluster
// (measured: beside three other runs on two cores, cpu-heavy's pod-ready
// p50 exceeded its limit, a regression of the harness, not of Karpenter).
// Other fault scenarios compare with their own clean run instead.
func RunsAlone(s *scenario.Scenario) bool {
	return s.Spec.Fault == nil || Exclusive(s) || expectsKarpenterWide(s)
}

// expectsKarpenterWide reports whether the rule a fault scenario expects
// reads a Karpenter-wide signal.
func expectsKarpenterWide(s *scenario.Scenario) bool {
	e := s.Spec.Fault.Expect
	if e == nil || e.Rule == "" {
		return false
	}
	rs, err := attribute.Rules()
	if err != nil {
		return false
	}
	r, ok := rs.Rule(e.Rule)
	return ok && r.ReadsKarpenterWide()
}

// Phases orders scenarios for concurrent runs on one cluster. Scenarios of
// one catalog and Karpenter's settings run together (switching either
// restarts Karpenter, which would disturb every other run); within a catalog, the shared scenarios
// form one phase and each scenario that RunsAlone a phase of its own. Phases run
// one after another; the scenarios of a phase may run concurrently. The
// order is deterministic: catalogs sorted, and within the shared phase the
// longest fault window first (so that the longest run does not start last
// and hold the phase open alone), then names.
func Phases(ss []*scenario.Scenario) [][]*scenario.Scenario {
	byCatalog := map[string][]*scenario.Scenario{}
	var catalogs []string
	for _, s := range ss {
		key := karpenterKey(s)
		if _, ok := byCatalog[key]; !ok {
			catalogs = append(catalogs, key)
		}
		byCatalog[key] = append(byCatalog[key], s)
	}
	sort.Strings(catalogs)
	var phases [][]*scenario.Scenario
	for _, c := range catalogs {
		group := byCatalog[c]
		sort.SliceStable(group, func(i, j int) bool { return group[i].Metadata.Name < group[j].Metadata.Name })
		var shared []*scenario.Scenario
		var alone [][]*scenario.Scenario
		for _, s := range group {
			if RunsAlone(s) {
				alone = append(alone, []*scenario.Scenario{s})
			} else {
				shared = append(shared, s)
			}
		}
		sort.SliceStable(shared, func(i, j int) bool { return window(shared[i]) > window(shared[j]) })
		if len(shared) > 0 {
			phases = append(phases, shared)
		}
		phases = append(phases, alone...)
	}
	return phases
}

// window is how long a scenario's faulted run observes at least: the
// estimate of its length that orders a shared phase.
func window(s *scenario.Scenario) time.Duration {
	if s.Spec.Fault == nil {
		return 0
	}
	return s.Spec.Fault.Window.Duration
}

// RunPhases calls fn for every scenario, phase after phase, with at most
// parallel calls at once within a phase. It stops starting scenarios when
// ctx ends; the errors of all calls are returned joined, by scenario order.
func RunPhases(ctx context.Context, phases [][]*scenario.Scenario, parallel int, fn func(context.Context, *scenario.Scenario) error) []error {
	parallel = max(parallel, 1)
	var errs []error
	for _, phase := range phases {
		out := make([]error, len(phase))
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for i, s := range phase {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				out[i] = fn(ctx, s)
			}()
		}
		wg.Wait()
		for _, err := range out {
			if err != nil {
				errs = append(errs, err)
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errs
}

// ShardError is a malformed --shard value.
type ShardError struct{ Value string }

func (e *ShardError) Error() string {
	return fmt.Sprintf("--shard %q: want I/N with 1 ≤ I ≤ N, e.g. 2/3", e.Value)
}

// ParseShard reads "I/N" (1-based).
func ParseShard(v string) (i, n int, err error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, &ShardError{v}
	}
	return i, n, nil
}

// Shard is the i-th of n slices of the scenarios (1-based): sorted by name,
// every n-th from the i-th, so that the n shards together hold every
// scenario exactly once and each gets a mix of the catalog, whatever
// machine or pod runs it.
func Shard(ss []*scenario.Scenario, i, n int) []*scenario.Scenario {
	sorted := append([]*scenario.Scenario(nil), ss...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Metadata.Name < sorted[b].Metadata.Name })
	var out []*scenario.Scenario
	for k, s := range sorted {
		if k%n == i-1 {
			out = append(out, s)
		}
	}
	return out
}

// karpenterKey names what Karpenter runs a scenario with: its catalog and
// settings, sorted.
func karpenterKey(s *scenario.Scenario) string {
	env := s.Spec.Karpenter.Env()
	keys := make([]string, 0, len(env))
	for k, v := range env {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return s.CatalogPath + " " + strings.Join(keys, ",")
}
