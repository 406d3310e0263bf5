// Command soak runs suites again and again and reports every scenario that
// failed in a repetition and every one whose outcome changed between
// repetitions (make soak: the baseline and fault suites ten times; about
// 20 minutes a repetition on the 2-core machine).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nodeprint/nodeprint/pkg/repo"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/soak"
)

func main() {
	runs := flag.Int("runs", 10, "repetitions")
	out := flag.String("out", repo.Out("soak"), "directory for each repetition's reports and logs, summary.md and summary.json")
	timeout := flag.Duration("timeout", 3*time.Hour, "bound of one repetition's go test")
	resume := flag.Bool("resume", false, "keep the finished repetitions already in -out and run only the missing ones (a ten-repetition soak outlasts a working session)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: soak [-runs N] [-out DIR] [PACKAGE...] (default ./suites/baseline ./suites/faults)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	pkgs := flag.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./suites/baseline", "./suites/faults"}
	}
	if *runs < 1 {
		fmt.Fprintf(os.Stderr, "soak: -runs %d: want at least 1\n", *runs)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := soakRuns(ctx, *runs, *out, *timeout, *resume, pkgs)
	stop()
	os.Exit(code)
}

func soakRuns(ctx context.Context, runs int, out string, timeout time.Duration, resume bool, pkgs []string) int {
	start := time.Now()
	commit := gitCommit()
	if !resume {
		// A fresh soak: repetitions of an earlier one must not be counted.
		if err := os.RemoveAll(out); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
	}
	var reps []soak.Repetition
	for i := 1; i <= runs; i++ {
		dir := filepath.Join(out, fmt.Sprintf("rep-%02d", i))
		if resume {
			if rep, at, ok := finished(dir, pkgs); ok {
				if at != commit {
					logf(start, "repetition %d: kept from an earlier run at commit %s (this is %s): outcomes of two commits are compared", i, at, commit)
				} else {
					logf(start, "repetition %d: kept from an earlier run", i)
				}
				reps = append(reps, rep)
				continue
			}
		}
		// go test compiles the tree as it is now: a commit made since the
		// soak began is what this repetition tests.
		at := gitCommit()
		logf(start, "repetition %d of %d at commit %s: go test %s (log: %s)", i, runs, at, strings.Join(pkgs, " "), filepath.Join(dir, "go-test.log"))
		rep, err := repetition(ctx, start, dir, timeout, pkgs)
		if ctx.Err() != nil {
			logf(start, "interrupted in repetition %d; the suites stopped their clusters", i)
			return 130
		}
		if err != nil {
			// A failed go test is a finding, not the end: the
			// repetition carries it, and its reports say what failed.
			logf(start, "repetition %d: %v", i, err)
		}
		reps = append(reps, rep)
		// Finished (whatever its outcome): -resume keeps it, with how
		// go test ended.
		if err := markFinished(dir, at, rep); err != nil {
			logf(start, "repetition %d: %v", i, err)
		}
		s := soak.Compare(reps)
		logf(start, "repetition %d of %d done: %d failure(s), %d changed outcome(s), %d repetition problem(s) so far", i, runs, len(s.Failures), len(s.Changes), len(s.Problems))
	}
	s := soak.Compare(reps)
	if err := writeSummary(out, s); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 2
	}
	_ = s.Write(os.Stdout)
	fmt.Printf("\nreports: %s/rep-NN/, summary: %s/summary.md and summary.json (%s)\n", out, out, time.Since(start).Round(time.Second))
	if !s.Clean() {
		return 1
	}
	return 0
}

// interruptible is a command that ctx's end interrupts: SIGINT to its
// whole process group, since go test does not pass a signal on to the test
// binary it runs, and the suites stop their clusters only on SIGINT (a
// kill would leave them). The group is its own, so a Ctrl-C in the
// terminal reaches the soak, which passes it on, and not the suites twice.
func interruptible(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	// Cleanup of a 1,000-pod scenario takes a minute or two.
	cmd.WaitDelay = 5 * time.Minute
	return cmd
}

// repetition runs go test once and collects each suite's report. The
// repetition records a failed go test and the suites it ran, so that the
// comparison counts a failure no report row shows.
func repetition(ctx context.Context, start time.Time, dir string, timeout time.Duration, pkgs []string) (soak.Repetition, error) {
	rep := soak.Repetition{Suites: suiteNames(pkgs), Reports: map[string]*report.Report{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		rep.GoTest = err.Error()
		return rep, err
	}
	for _, s := range rep.Suites {
		// A stale report of an earlier repetition must not stand in for a
		// suite that did not write one.
		_ = os.RemoveAll(filepath.Join(repo.SuiteReports, s))
	}
	var errs []error
	if err := goTest(ctx, start, dir, timeout, pkgs); err != nil {
		rep.GoTest = fmt.Sprintf("%v (see %s)", err, filepath.Join(dir, "go-test.log"))
		errs = append(errs, err)
	}
	reports, err := collect(dir, rep.Suites)
	rep.Reports = reports
	return rep, errors.Join(append(errs, err)...)
}

// suiteNames are the suites' names, as their reports are named.
func suiteNames(pkgs []string) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = filepath.Base(p)
	}
	return out
}

// markFinished records that the repetition in dir finished: how go test
// ended and the suites it ran (repetition.json), then the commit marker,
// which -resume takes as the sign that the rest is complete.
func markFinished(dir, commit string, rep soak.Repetition) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "repetition.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "commit"), []byte(commit+"\n"), 0o644)
}

// goTest runs the suites once with go test, its output in dir/go-test.log,
// saying every minute that it is alive and what it printed last.
func goTest(ctx context.Context, start time.Time, dir string, timeout time.Duration, pkgs []string) error {
	logFile, err := os.Create(filepath.Join(dir, "go-test.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := append([]string{"test", "-p", "1", "-count=1", "-v", "-timeout", timeout.String()}, pkgs...)
	args = append(args, "-args", "-ginkgo.v")
	cmd := interruptible(ctx, "go", args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("failed to start go test: %w", err)
	}
	pw.Close()
	var last atomic.Value
	last.Store("")
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if l := strings.TrimSpace(sc.Text()); l != "" {
				last.Store(l)
			}
		}
	}()
	// A repetition takes about 20 minutes: say that it is alive.
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for {
		select {
		case err := <-waited:
			<-done
			if err != nil {
				return fmt.Errorf("go test: %w", err)
			}
			return nil
		case <-tick.C:
			l := last.Load().(string)
			if len(l) > 120 {
				l = l[:120] + "…"
			}
			logf(start, "  still running; last line: %s", l)
		}
	}
}

// collect reads each suite's report of the repetition and keeps a copy in
// dir; a suite that wrote none is an error.
func collect(dir string, suites []string) (map[string]*report.Report, error) {
	rep := map[string]*report.Report{}
	var errs []error
	for _, s := range suites {
		b, err := os.ReadFile(filepath.Join(repo.SuiteReports, s, "report.json"))
		if err != nil {
			errs = append(errs, fmt.Errorf("suite %s wrote no report: %w", s, err))
			continue
		}
		r := &report.Report{}
		if err := json.Unmarshal(b, r); err != nil {
			errs = append(errs, fmt.Errorf("suite %s: report.json: %w", s, err))
			continue
		}
		rep[s] = r
		if err := os.WriteFile(filepath.Join(dir, s+".json"), b, 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

// finished loads a repetition an earlier soak completed: its commit
// marker, how go test ended, and every suite's report. One of another
// set of suites, or without the record of how go test ended (an older
// soak's), is run again.
func finished(dir string, pkgs []string) (soak.Repetition, string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "commit"))
	if err != nil {
		return soak.Repetition{}, "", false
	}
	rb, err := os.ReadFile(filepath.Join(dir, "repetition.json"))
	if err != nil {
		return soak.Repetition{}, "", false
	}
	rep := soak.Repetition{}
	if err := json.Unmarshal(rb, &rep); err != nil || !slices.Equal(rep.Suites, suiteNames(pkgs)) {
		return soak.Repetition{}, "", false
	}
	rep.Reports = map[string]*report.Report{}
	for _, s := range rep.Suites {
		rb, err := os.ReadFile(filepath.Join(dir, s+".json"))
		if err != nil {
			// The suite wrote no report then: the comparison counts it.
			continue
		}
		r := &report.Report{}
		if err := json.Unmarshal(rb, r); err != nil {
			return soak.Repetition{}, "", false
		}
		rep.Reports[s] = r
	}
	return rep, strings.TrimSpace(string(b)), true
}

// gitCommit is HEAD's short hash, "-dirty" when tracked files differ
// from it (the repetition then tests uncommitted changes).
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	if exec.Command("git", "diff", "--quiet", "HEAD").Run() != nil {
		commit += "-dirty"
	}
	return commit
}

func writeSummary(out string, s *soak.Summary) error {
	f, err := os.Create(filepath.Join(out, "summary.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := s.Write(f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "summary.json"), append(b, '\n'), 0o644)
}

func logf(start time.Time, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}
