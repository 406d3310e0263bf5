// Command bench is `make bench`: it measures, in one run each, the local
// cluster's start, the floor of a small scenario against the harness's wall
// time for it, scenarios of 100 to 5,000 pods with the harness's and the
// control plane's memory and CPU, the fingerprint/diff/attribution pipeline
// on the largest observation, and the whole catalog; it prints the figures
// with their targets and writes out/bench/bench.json.
package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/bench"
	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/diff"
	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/run"
	"github.com/nodeprint/nodeprint/pkg/scenario"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// The targets of the performance issue, on the 2-core machine.
const (
	targetStart        = 6.0   // s, cluster up to Karpenter healthy
	targetWallPerFloor = 1.5   // harness wall time / floor, 10-pod scenario
	target1000Running  = 25.0  // s, 1,000 pods Running
	targetHarnessMB    = 300.0 // MB, harness peak memory with 5,000 pods
	targetCatalog      = 360.0 // s, the whole catalog with --parallel
)

func main() {
	os.Exit(mainErr())
}

func mainErr() int {
	out := flag.String("out", "out/bench", "directory for bench.json, bench.txt and the largest observation")
	scales := flag.String("scale", "100,1000,5000", "pod counts of the scale scenarios (each must have fixtures/bench/pods-N.yaml)")
	catalogMode := flag.String("catalog", "parallel", "the whole catalog: parallel (--parallel 4), both (also serially, about 21 more minutes) or none")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := benchmark(ctx, *out, *scales, *catalogMode); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	return 0
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func benchmark(ctx context.Context, out, scales, catalogMode string) error {
	var ns []int
	for _, f := range strings.Split(scales, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-scale %q: %q is not a pod count", scales, f)
		}
		ns = append(ns, n)
	}
	if catalogMode != "parallel" && catalogMode != "both" && catalogMode != "none" {
		return fmt.Errorf("-catalog %q: want parallel, both or none", catalogMode)
	}
	tc, err := toolchain.Find()
	if err != nil {
		return err
	}
	if err := tc.Ensure(ctx, os.Stderr); err != nil {
		return err
	}
	rep := &bench.Report{Started: time.Now().UTC(), Machine: bench.Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Karpenter: tc.Versions.Karpenter, Kubernetes: tc.Versions.Kubernetes}}
	if err := onCluster(ctx, tc, rep, out, ns); err != nil {
		return err
	}
	if catalogMode != "none" {
		if err := wholeCatalog(ctx, tc, rep, catalogMode == "both"); err != nil {
			return err
		}
	}
	rep.Finished = time.Now().UTC()
	fmt.Println()
	if err := rep.Table(os.Stdout); err != nil {
		return err
	}
	if err := rep.Write(out); err != nil {
		return err
	}
	fmt.Printf("\n%d figure(s), %d target(s) missed; written to %s/bench.json and bench.txt (%s)\n",
		len(rep.Rows), len(rep.Missed()), out, rep.Finished.Sub(rep.Started).Round(time.Second))
	return nil
}

// onCluster measures what runs on one cluster the benchmark starts and stops.
func onCluster(ctx context.Context, tc *toolchain.Toolchain, rep *bench.Report, out string, ns []int) (err error) {
	phases := map[string]time.Duration{}
	var order []string
	l, err := cluster.NewLocal(cluster.WithName(fmt.Sprintf("bench-%d", os.Getpid())), cluster.WithToolchain(tc),
		cluster.WithProgress(func(e cluster.Event) {
			if e.Done && e.Elapsed > 0 {
				phases[e.Phase] = e.Elapsed
				order = append(order, e.Phase)
			}
		}))
	if err != nil {
		return err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if derr := l.Down(dctx); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	logf("starting a local cluster")
	started := time.Now()
	if err := l.Up(ctx); err != nil {
		return err
	}
	up := time.Since(started) - phases["toolchain"]
	var parts []string
	for _, p := range order {
		if p != "toolchain" {
			parts = append(parts, fmt.Sprintf("%s %.2fs", p, phases[p].Seconds()))
		}
	}
	rep.AddTarget("start", "cluster up to Karpenter healthy", up.Seconds(), "s", targetStart, strings.Join(parts, ", "))
	for _, p := range order {
		if p != "toolchain" {
			rep.Add("start", "phase "+p, phases[p].Seconds(), "s", "")
		}
	}

	// Teardown of 5,000 pods on 129 nodes takes longer than the runner's
	// default bound of 3 minutes: it is measured, not cut short.
	r, err := run.NewRunner(l.Kubeconfig(), l, run.WithProgress(func(msg string) { logf("%s", msg) }), run.WithCleanupTimeout(20*time.Minute),
		run.WithHealth(func(ctx context.Context) string {
			st, err := l.Status(ctx)
			if err != nil {
				return err.Error()
			}
			return st.Problem()
		}))
	if err != nil {
		return err
	}
	loader := run.Loader(tc)
	load := func(n int) (*scenario.Scenario, error) {
		ss, err := loader.LoadFiles(filepath.Join(tc.Root, "fixtures", "bench", fmt.Sprintf("pods-%d.yaml", n)))
		if err != nil {
			return nil, err
		}
		return ss[0], nil
	}

	// The floor: the same 10-pod scenario seen by the observer (apply to
	// the last pod Running, server time) and by the harness (start to
	// verdict, setup, quiet period and cleanup included).
	s, err := load(10)
	if err != nil {
		return err
	}
	logf("floor: %s", s.Metadata.Name)
	t0 := time.Now()
	res, err := r.Run(ctx, s)
	if err != nil {
		return err
	}
	if _, _, err := classify(s, res); err != nil {
		return err
	}
	wall := time.Since(t0)
	ob := res.Observation
	last := lastReady(ob)
	floor := last.Sub(ob.Start)
	rep.Add("floor", "apply → all 10 pods Running (observer)", floor.Seconds(), "s", "server-side times")
	rep.Add("floor", "harness wall time, start → verdict", wall.Seconds(), "s", "")
	rep.AddTarget("floor", "wall / floor", wall.Seconds()/floor.Seconds(), "×", targetWallPerFloor,
		fmt.Sprintf("before apply %.1fs, after the last pod Running until settled %.1fs, cleanup and verdict %.1fs",
			ob.Start.Sub(t0).Seconds(), ob.End.Sub(last).Seconds(), t0.Add(wall).Sub(ob.End).Seconds()))

	largest := 0
	var largestRes *run.Result
	var largestScenario *scenario.Scenario
	for _, n := range ns {
		s, err := load(n)
		if err != nil {
			return err
		}
		pids, err := componentPIDs(ctx, l)
		if err != nil {
			return err
		}
		logf("scale: %d pods", n)
		sm := bench.NewSampler(pids, 250*time.Millisecond)
		sm.Start(ctx)
		t0 := time.Now()
		res, err := r.Run(ctx, s)
		wall := time.Since(t0)
		usage := sm.Stop()
		if err != nil {
			return fmt.Errorf("scale %d: %w", n, err)
		}
		g := fmt.Sprintf("scale-%d", n)
		ob := res.Observation
		running := 0
		for _, p := range ob.Pods {
			if !p.Ready.IsZero() {
				running++
			}
		}
		if running < n {
			rep.Add(g, "pods Running", float64(running), "pods", fmt.Sprintf("only %d of %d: %s", running, n, ob.Outcome))
		}
		all := lastReady(ob).Sub(ob.Start).Seconds()
		if n == 1000 {
			rep.AddTarget(g, "apply → all pods Running", all, "s", target1000Running, "")
		} else {
			rep.Add(g, "apply → all pods Running", all, "s", "")
		}
		rep.Add(g, "pods per second", float64(running)/all, "pods/s", "")
		rep.Add(g, "nodes", float64(res.Fingerprint.Selection.Nodes), "nodes", res.Fingerprint.Selection.Key())
		rep.Add(g, "harness wall time", wall.Seconds(), "s", string(ob.Outcome))
		rep.Add(g, "teardown after settling", t0.Add(wall).Sub(ob.End).Seconds(), "s", "objects deleted, Karpenter removed every NodeClaim, namespace gone")
		h := usage["harness"]
		if n == 5000 {
			rep.AddTarget(g, "harness peak memory", mb(h.PeakRSSBytes), "MB", targetHarnessMB, "resident set, sampled every 250 ms")
		} else {
			rep.Add(g, "harness peak memory", mb(h.PeakRSSBytes), "MB", "resident set, sampled every 250 ms")
		}
		rep.Add(g, "harness CPU", h.CPUSeconds, "s", "")
		var cpMem int64
		var cpCPU float64
		var names []string
		for name, u := range usage {
			if name == "harness" {
				continue
			}
			cpMem += u.PeakRSSBytes
			cpCPU += u.CPUSeconds
			names = append(names, fmt.Sprintf("%s %.0fs/%.0f MB", name, u.CPUSeconds, mb(u.PeakRSSBytes)))
		}
		sort.Strings(names)
		rep.Add(g, "control plane + Karpenter peak memory", mb(cpMem), "MB", "sum of each component's peak")
		rep.Add(g, "control plane + Karpenter CPU", cpCPU, "s", strings.Join(names, ", "))
		if n > largest {
			largest, largestRes, largestScenario = n, res, s
		}
	}
	if largestRes != nil {
		if err := saveObservation(filepath.Join(out, fmt.Sprintf("observation-%d.json.gz", largest)), largestRes.Observation); err != nil {
			return err
		}
		if err := pipeline(rep, largest, largestScenario, largestRes); err != nil {
			return err
		}
	}
	return nil
}

// classify is the verdict step of a plain run: a baseline from the run
// itself (the benchmark scenarios have none recorded), the diff and the
// rules.
func classify(s *scenario.Scenario, res *run.Result) (*diff.Diff, *attribute.Verdict, error) {
	bl, err := fingerprint.NewBaseline(s.Metadata.Name, fingerprint.Environment{}, []*fingerprint.Fingerprint{res.Fingerprint})
	if err != nil {
		return nil, nil, err
	}
	return run.Attribute(s, res, bl, res.Inputs)
}

// pipeline times fingerprint, diff and attribution alone on the largest
// observation (testing.Benchmark: as many iterations as fit a second).
func pipeline(rep *bench.Report, n int, s *scenario.Scenario, res *run.Result) error {
	cat, err := catalog.Load(s.CatalogPath)
	if err != nil {
		return err
	}
	rs, err := attribute.Rules()
	if err != nil {
		return err
	}
	bl, err := fingerprint.NewBaseline(s.Metadata.Name, fingerprint.Environment{}, []*fingerprint.Fingerprint{res.Fingerprint})
	if err != nil {
		return err
	}
	var failed error
	b := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fp, err := fingerprint.Compute(res.Observation, cat)
			if err != nil {
				failed = err
				return
			}
			d := diff.Compare(bl, fp, diff.RulesFor(s))
			if _, err := attribute.Classify(rs, &attribute.Input{Scenario: s.Metadata.Name, Baseline: bl, Observed: fp,
				Observation: res.Observation, Diff: d, Facts: res.Facts, Inputs: res.Inputs, BaselineInputs: res.Inputs}); err != nil {
				failed = err
				return
			}
		}
	})
	if failed != nil {
		return failed
	}
	g := fmt.Sprintf("pipeline-%d", n)
	note := fmt.Sprintf("fingerprint + diff + attribution on the %d-pod observation, %d iterations", n, b.N)
	rep.Add(g, "time per operation", float64(b.NsPerOp())/1e6, "ms", note)
	rep.Add(g, "allocations per operation", float64(b.AllocsPerOp()), "allocs", "")
	rep.Add(g, "bytes per operation", float64(b.AllocedBytesPerOp())/1e6, "MB", "")
	return nil
}

// wholeCatalog runs every baseline and fault scenario through the CLI,
// with --parallel 4 and, when serial is set, one at a time.
func wholeCatalog(ctx context.Context, tc *toolchain.Toolchain, rep *bench.Report, serial bool) error {
	runOnce := func(parallel int) (float64, error) {
		logf("the whole catalog with --parallel %d", parallel)
		cmd := exec.CommandContext(ctx, filepath.Join(tc.Bin, "nodeprint"), "run", "fixtures/scenarios", "fixtures/scenarios/faults",
			"--parallel", strconv.Itoa(parallel))
		cmd.Dir = tc.Root
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
		cmd.WaitDelay = 3 * time.Minute
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0).Seconds()
		if err != nil {
			return d, fmt.Errorf("nodeprint run of the catalog with --parallel %d: %w", parallel, err)
		}
		return d, nil
	}
	par, err := runOnce(4)
	note := "24 scenarios, cluster start included"
	if err != nil {
		note = err.Error()
	}
	rep.AddTarget("catalog", "whole catalog, --parallel 4", par, "s", targetCatalog, note)
	if !serial {
		return nil
	}
	ser, err := runOnce(1)
	note = "24 scenarios, cluster start included"
	if err != nil {
		note = err.Error()
	}
	rep.Add("catalog", "whole catalog, serially", ser, "s", note)
	rep.Add("catalog", "speed-up", ser/par, "×", "")
	return nil
}

// componentPIDs are the processes to sample: this harness, every
// control-plane component and Karpenter.
func componentPIDs(ctx context.Context, l *cluster.Local) (map[string]int, error) {
	st, err := l.Status(ctx)
	if err != nil {
		return nil, err
	}
	pids := map[string]int{"harness": os.Getpid()}
	for _, c := range st.Components {
		if c.PID > 0 {
			pids[c.Name] = c.PID
		}
	}
	return pids, nil
}

func lastReady(ob *observe.Observation) time.Time {
	var t time.Time
	for _, p := range ob.Pods {
		if p.Ready.After(t) {
			t = p.Ready
		}
	}
	return t
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func saveObservation(path string, ob *observe.Observation) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	if err := json.NewEncoder(zw).Encode(ob); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return zw.Close()
}
