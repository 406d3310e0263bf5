package suitekit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/process"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// CLI runs a nodeprint binary: the one built from this checkout, in the
// checkout, or one installed by version (InstallCLI), in a team's directory.
type CLI struct {
	Path      string
	Toolchain *toolchain.Toolchain
	// Dir is where it runs (default: the checkout).
	Dir string
	// Env replaces the environment it runs with (default: the suite's).
	Env []string
}

func (c *CLI) dir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return c.Toolchain.Root
}

// Result is one finished CLI run.
type Result struct {
	Code           int
	Stdout, Stderr string
	// PID is the CLI process's (ExpectInterrupted and ExpectSignalledAt).
	PID int
}

// BuildCLI builds the toolchain when it is missing and the nodeprint CLI
// from the current sources into bin/.
func BuildCLI(ctx context.Context) *CLI {
	GinkgoHelper()
	tc, err := toolchain.Find()
	Expect(err).NotTo(HaveOccurred())
	Expect(tc.Ensure(ctx, GinkgoWriter)).To(Succeed())
	path := filepath.Join(tc.Bin, "nodeprint")
	By("building the nodeprint CLI")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./tools/nodeprint")
	cmd.Dir = tc.Root
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./tools/nodeprint:\n%s", out)
	return &CLI{Path: path, Toolchain: tc}
}

// Run runs the CLI to completion and returns what it did.
func (c *CLI) Run(ctx context.Context, args ...string) Result {
	r, _ := runCommand(ctx, c.dir(), c.Env, c.Path, args...)
	return r
}

// runCommand runs a command in dir to completion, its output also to the
// Ginkgo writer; the code is -1 when it did not run or was killed (err says why).
func runCommand(ctx context.Context, dir string, env []string, name string, args ...string) (Result, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout = io.MultiWriter(&stdout, GinkgoWriter)
	cmd.Stderr = io.MultiWriter(&stderr, GinkgoWriter)
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if ok := asExitError(err, &ee); ok {
			code = ee.ExitCode()
		} else {
			code = -1
		}
	}
	return Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}, err
}

func asExitError(err error, target **exec.ExitError) bool {
	ee, ok := err.(*exec.ExitError) //nolint:errorlint // exec returns it unwrapped
	if ok {
		*target = ee
	}
	return ok
}

// ExpectRun runs the CLI and expects the exit code.
func (c *CLI) ExpectRun(ctx context.Context, code int, args ...string) Result {
	GinkgoHelper()
	By("nodeprint " + strings.Join(args, " "))
	r := c.Run(ctx, args...)
	Expect(r.Code).To(Equal(code), "nodeprint %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, code, r.Stdout, r.Stderr)
	return r
}

// ExpectInterrupted starts the CLI, sends sig once a progress line names
// the phase, and waits for it to exit.
func (c *CLI) ExpectInterrupted(ctx context.Context, sig syscall.Signal, phase string, args ...string) Result {
	GinkgoHelper()
	By(fmt.Sprintf("nodeprint %s, sending %s during the %s phase", strings.Join(args, " "), sig, phase))
	return c.signalledAt(ctx, sig, "] "+phase+" ", args...)
}

// ExpectSignalledAt starts the CLI, sends sig once a line of its stderr
// contains marker, and waits for it to exit (SIGKILL included: the result
// then has code -1).
func (c *CLI) ExpectSignalledAt(ctx context.Context, sig syscall.Signal, marker string, args ...string) Result {
	GinkgoHelper()
	By(fmt.Sprintf("nodeprint %s, sending %s at %q", strings.Join(args, " "), sig, marker))
	return c.signalledAt(ctx, sig, marker, args...)
}

func (c *CLI) signalledAt(ctx context.Context, sig syscall.Signal, marker string, args ...string) Result {
	GinkgoHelper()
	return c.actAt(ctx, marker, func(p *os.Process) { _ = p.Signal(sig) }, args...)
}

// ExpectActAt runs the CLI and calls act with the CLI's pid once a stderr
// line contains marker; act runs beside the CLI (which goes on) and is
// waited for before the result returns.
func (c *CLI) ExpectActAt(ctx context.Context, marker, what string, act func(pid int), args ...string) Result {
	GinkgoHelper()
	By(fmt.Sprintf("nodeprint %s, %s at %q", strings.Join(args, " "), what, marker))
	var wg sync.WaitGroup
	res := c.actAt(ctx, marker, func(p *os.Process) {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			act(p.Pid)
		}()
	}, args...)
	wg.Wait()
	return res
}

// actAt runs the CLI and calls act once a stderr line contains marker;
// it fails when no such line appears. act must not block: the CLI's
// stderr is read by the goroutine that calls it.
func (c *CLI) actAt(ctx context.Context, marker string, act func(*os.Process), args ...string) Result {
	GinkgoHelper()
	phase := marker
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Path, args...)
	cmd.Dir, cmd.Env = c.dir(), c.Env
	cmd.Stdout = io.MultiWriter(&stdout, GinkgoWriter)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	Expect(cmd.Start()).To(Succeed())
	var stderr bytes.Buffer
	sent := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			stderr.WriteString(line + "\n")
			fmt.Fprintln(GinkgoWriter, line)
			if strings.Contains(line, marker) {
				once.Do(func() {
					act(cmd.Process)
					close(sent)
				})
			}
		}
		// Drain what a line too long for the scanner left, so the
		// command's writes never block.
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Wait()
	_ = pw.Close()
	// The scanner may still hold the last lines Wait saw written: the
	// result, and whether the marker appeared, are known once it is done.
	<-scanned
	select {
	case <-sent:
	default:
		Fail(fmt.Sprintf("no line %q appeared; stderr:\n%s", phase, stderr.String()))
	}
	code := 0
	var ee *exec.ExitError
	if err != nil && asExitError(err, &ee) {
		code = ee.ExitCode()
	}
	return Result{Code: code, Stdout: stdout.String(), Stderr: stderr.String(), PID: cmd.Process.Pid}
}

func (c *CLI) clusterDir(name string) string {
	return filepath.Join(c.Toolchain.Work, "clusters", name) + string(filepath.Separator)
}

// ExpectListeningOnLoopbackOnly lists the TCP ports the cluster's processes
// listen on, and expects every one on a loopback address.
func (c *CLI) ExpectListeningOnLoopbackOnly(ctx context.Context, name string) []int {
	GinkgoHelper()
	By(fmt.Sprintf("listing the listening sockets of cluster %s", name))
	pids, err := process.FindReferencing(c.clusterDir(name))
	Expect(err).NotTo(HaveOccurred())
	Expect(pids).To(HaveLen(7), "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller, metrics-server and karpenter")
	socks, err := process.ListeningSockets(pids)
	Expect(err).NotTo(HaveOccurred())
	var ports []int
	for _, s := range socks {
		Expect(s.Addr.Addr().IsLoopback()).To(BeTrue(), "pid %d listens on %s", s.PID, s.Addr)
		ports = append(ports, int(s.Addr.Port()))
	}
	return ports
}

// ExpectNothingLeft expects no process of the cluster, no listener on its
// former ports, and no work directory.
func (c *CLI) ExpectNothingLeft(ctx context.Context, name string, ports []int) {
	GinkgoHelper()
	By(fmt.Sprintf("checking that cluster %s left no process, port or directory", name))
	Eventually(func(g Gomega) {
		pids, err := process.FindReferencing(c.clusterDir(name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pids).To(BeEmpty(), "processes of cluster %s still run", name)
		all, err := process.FindByPrefix("/")
		g.Expect(err).NotTo(HaveOccurred())
		socks, err := process.ListeningSockets(all)
		g.Expect(err).NotTo(HaveOccurred())
		for _, s := range socks {
			g.Expect(ports).NotTo(ContainElement(int(s.Addr.Port())), "port %d still listened on by pid %d", s.Addr.Port(), s.PID)
		}
	}).WithContext(ctx).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	_, err := os.Stat(c.clusterDir(name))
	Expect(os.IsNotExist(err)).To(BeTrue(), "the work directory %s remains", c.clusterDir(name))
}

// ExpectSecretsPrivate expects every private key and kubeconfig in the
// cluster's directory readable by its owner only.
func (c *CLI) ExpectSecretsPrivate(name string) {
	GinkgoHelper()
	By(fmt.Sprintf("checking that the keys and kubeconfigs of cluster %s are private", name))
	n := 0
	Expect(filepath.WalkDir(c.clusterDir(name), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !cluster.IsSecretFile(d.Name()) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		Expect(info.Mode().Perm()&0o077).To(BeZero(), "%s is %o", path, info.Mode().Perm())
		n++
		return nil
	})).To(Succeed())
	Expect(n).To(BeNumerically(">=", 3), "the CA key, the admin key and a kubeconfig at least")
}

// ProcessesFromBin lists the live processes started from the project's
// bin/ (every component of every local cluster of this checkout).
func (c *CLI) ProcessesFromBin() []int {
	GinkgoHelper()
	// /proc/<pid>/exe is resolved: so must bin/ be.
	bin, err := filepath.EvalSymlinks(c.Toolchain.Bin)
	Expect(err).NotTo(HaveOccurred())
	pids, err := process.FindByPrefix(bin)
	Expect(err).NotTo(HaveOccurred())
	return pids
}

// NewProcessesFromBin lists the processes started from bin/ that are not
// in before.
func (c *CLI) NewProcessesFromBin(before []int) []int {
	GinkgoHelper()
	var added []int
	for _, pid := range c.ProcessesFromBin() {
		if !slices.Contains(before, pid) {
			added = append(added, pid)
		}
	}
	return added
}

// ExpectNoNewProcessesFromBin expects every process started from bin/ to
// be one that ran already before (another cluster of this checkout, say).
func (c *CLI) ExpectNoNewProcessesFromBin(ctx context.Context, before []int) {
	GinkgoHelper()
	By("checking that no process started from bin/ is left")
	Eventually(func() []int { return c.NewProcessesFromBin(before) }).WithContext(ctx).WithTimeout(20*time.Second).
		WithPolling(200*time.Millisecond).Should(BeEmpty(), "processes started from %s", c.Toolchain.Bin)
}

// ExpectProcessesLeft expects processes of the cluster still running (a
// killed owner leaves them behind).
func (c *CLI) ExpectProcessesLeft(ctx context.Context, name string) {
	GinkgoHelper()
	By(fmt.Sprintf("checking that cluster %s still has processes", name))
	pids, err := process.FindReferencing(c.clusterDir(name))
	Expect(err).NotTo(HaveOccurred())
	Expect(pids).NotTo(BeEmpty(), "no process of cluster %s runs", name)
}

// ExpectComponentPID reads a component's pid from `nodeprint cluster status`.
func (c *CLI) ExpectComponentPID(ctx context.Context, cluster, component string) int {
	GinkgoHelper()
	r := c.Run(ctx, "cluster", "status", "--name", cluster)
	for _, line := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == component {
			var pid int
			_, err := fmt.Sscanf(f[2], "%d", &pid)
			Expect(err).NotTo(HaveOccurred(), "pid column of %q", line)
			return pid
		}
	}
	Fail(fmt.Sprintf("no %s line in status:\n%s", component, r.Stdout))
	return 0
}

// WriteScenarioVariant copies a repository scenario into dir with one
// string replaced (the replacement must happen), returning the new path.
func (c *CLI) WriteScenarioVariant(dir, file, old, replacement string) string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(c.Toolchain.Root, file))
	Expect(err).NotTo(HaveOccurred())
	Expect(string(b)).To(ContainSubstring(old), "%s no longer holds %q", file, old)
	path := filepath.Join(dir, fmt.Sprintf("variant-%d-%s", time.Now().UnixNano(), filepath.Base(file)))
	Expect(os.WriteFile(path, []byte(strings.Replace(string(b), old, replacement, 1)), 0o644)).To(Succeed())
	return path
}

// ExpectReport expects dir to hold the four report files, report.json to
// validate against docs/report.schema.json, to carry the exit code and the
// scenario's status.
func (c *CLI) ExpectReport(dir string, code int, scenario, status string) *report.Report {
	GinkgoHelper()
	for _, f := range []string{"report.json", "summary.md", "junit.xml", "report.html"} {
		Expect(filepath.Join(dir, f)).To(BeAnExistingFile())
	}
	schema, err := jsonschema.NewCompiler().Compile(filepath.Join(c.Toolchain.Root, "docs", "report.schema.json"))
	Expect(err).NotTo(HaveOccurred())
	f, err := os.Open(filepath.Join(dir, "report.json"))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	Expect(err).NotTo(HaveOccurred())
	Expect(schema.Validate(doc)).To(Succeed())
	var rep report.Report
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	Expect(err).NotTo(HaveOccurred())
	Expect(json.Unmarshal(b, &rep)).To(Succeed())
	Expect(rep.Summary.ExitCode).To(Equal(code))
	Expect(rep.Scenarios).To(HaveLen(1))
	Expect([]string{rep.Scenarios[0].Name, rep.Scenarios[0].Status}).To(Equal([]string{scenario, status}))
	return &rep
}
