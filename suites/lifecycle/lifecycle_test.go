package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck

	"github.com/nodeprint/nodeprint/pkg/cluster"
	"github.com/nodeprint/nodeprint/pkg/environment"
	"github.com/nodeprint/nodeprint/pkg/report"
	"github.com/nodeprint/nodeprint/suites/internal/suitekit"
)

var _ = Describe("nodeprint cluster", Label("suite:lifecycle"), func() {
	It("runs two named clusters side by side and leaves nothing behind on down", func(ctx SpecContext) {
		a, b := fmt.Sprintf("lc-a-%d", os.Getpid()), fmt.Sprintf("lc-b-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", a, NodeTimeout(2*time.Minute))
		DeferCleanup(cli.Run, "cluster", "down", "--name", b, NodeTimeout(2*time.Minute))

		upA := cli.ExpectRun(ctx, 0, "cluster", "up", "--name", a)
		Expect(upA.Stdout).To(MatchRegexp(`cluster "%s" is up in [0-9.]+m?s`, a))
		for _, phase := range []string{"control-plane", "crds", "karpenter", "ready"} {
			Expect(upA.Stdout).To(MatchRegexp(`(?m)^\s+%s\s+[0-9.]+m?s$`, phase), "up prints how long each phase took")
		}
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", b)

		for _, name := range []string{a, b} {
			st := cli.ExpectRun(ctx, 0, "cluster", "status", "--name", name)
			for _, comp := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller", "metrics-server", "karpenter"} {
				Expect(st.Stdout).To(MatchRegexp(`(?m)^%s\s+yes\s`, comp), "cluster %s: %s healthy", name, comp)
			}
			Expect(st.Stdout).To(ContainSubstring("Karpenter v1.14.1"))
			Expect(st.Stdout).To(ContainSubstring("Kubernetes v1.36.3"))
		}
		cli.ExpectSecretsPrivate(a)
		ports := cli.ExpectListeningOnLoopbackOnly(ctx, a)
		Expect(ports).NotTo(BeEmpty())
		portsB := cli.ExpectListeningOnLoopbackOnly(ctx, b)
		Expect(portsB).NotTo(ContainElements(ports), "the two clusters share no port")

		By("killing Karpenter: status must say so, and restart must bring it back")
		pid := cli.ExpectComponentPID(ctx, a, "karpenter")
		Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		dead := cli.ExpectRun(ctx, 3, "cluster", "status", "--name", a)
		Expect(dead.Stdout).To(MatchRegexp(`(?m)^karpenter\s+no\s`))
		cli.ExpectRun(ctx, 0, "cluster", "restart", "karpenter", "--name", a)
		Expect(cli.ExpectComponentPID(ctx, a, "karpenter")).NotTo(Equal(pid))

		cli.ExpectRun(ctx, 0, "cluster", "down", "--name", a)
		cli.ExpectNothingLeft(ctx, a, ports)
		// b is untouched by a's down.
		cli.ExpectRun(ctx, 0, "cluster", "status", "--name", b)
		cli.ExpectRun(ctx, 0, "cluster", "down", "--name", b)
		cli.ExpectNothingLeft(ctx, b, portsB)
		// status of a stopped cluster is an environment failure, not a crash.
		cli.ExpectRun(ctx, 3, "cluster", "status", "--name", a)
	}, SpecTimeout(5*time.Minute))

	// A one-instance control plane has nobody to hand a lease over to: a
	// component that lost it would exit and end every run after it as an
	// environment failure. The stall outlasts the scheduler's and the
	// controller-manager's renew deadline (10 s) and lease (15 s).
	It("keeps every component running through an API server that stalls longer than a leader-election lease", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-stall-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
		others := []string{"etcd", "kube-controller-manager", "kube-scheduler", "kwok-controller", "metrics-server", "karpenter"}
		pids := map[string]int{}
		for _, c := range others {
			pids[c] = cli.ExpectComponentPID(ctx, name, c)
		}
		api := cli.ExpectComponentPID(ctx, name, "kube-apiserver")
		By("stopping kube-apiserver for 25 s")
		Expect(syscall.Kill(api, syscall.SIGSTOP)).To(Succeed())
		DeferCleanup(syscall.Kill, api, syscall.SIGCONT)
		select {
		case <-ctx.Done():
			Fail("interrupted while the API server was stopped")
		case <-time.After(25 * time.Second):
		}
		Expect(syscall.Kill(api, syscall.SIGCONT)).To(Succeed())
		Eventually(func() int { return cli.Run(ctx, "cluster", "status", "--name", name).Code }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(2*time.Second).Should(Equal(0), "every component healthy again")
		for _, c := range others {
			Expect(cli.ExpectComponentPID(ctx, name, c)).To(Equal(pids[c]), "%s is the process it was before the stall", c)
		}
	}, SpecTimeout(5*time.Minute))

	DescribeTable("an interrupted up leaves no process behind",
		func(ctx SpecContext, sig syscall.Signal, after string) {
			name := fmt.Sprintf("lc-int-%d", os.Getpid())
			DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
			res := cli.ExpectInterrupted(ctx, sig, after, "cluster", "up", "--name", name)
			Expect(res.Code).To(Equal(130), "exit code says interrupted; stderr:\n%s", res.Stderr)
			Expect(res.Stderr).To(ContainSubstring("rollback"))
			cli.ExpectNothingLeft(ctx, name, nil)
		},
		Entry("SIGINT while the control plane starts", syscall.SIGINT, "control-plane", SpecTimeout(3*time.Minute)),
		Entry("SIGINT while Karpenter starts", syscall.SIGINT, "karpenter", SpecTimeout(3*time.Minute)),
		Entry("SIGTERM while the control plane starts", syscall.SIGTERM, "control-plane", SpecTimeout(3*time.Minute)),
	)

	It("finds the cluster of a killed run, reports it on the next up and prunes it without leaving a process", func(ctx SpecContext) {
		before := cli.ProcessesFromBin()
		res := cli.ExpectSignalledAt(ctx, syscall.SIGKILL, ": applying namespace", "run", "web-service")
		name := fmt.Sprintf("np-%d", res.PID)
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		Expect(res.Code).To(Equal(-1), "killed by SIGKILL; stderr:\n%s", res.Stderr)
		cli.ExpectProcessesLeft(ctx, name)
		Expect(cli.NewProcessesFromBin(before)).NotTo(BeEmpty(), "the killed run's components run from bin/")

		other := fmt.Sprintf("lc-next-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", other, NodeTimeout(2*time.Minute))
		up := cli.ExpectRun(ctx, 0, "cluster", "up", "--name", other)
		Expect(up.Stderr).To(ContainSubstring(fmt.Sprintf("stale cluster %q (its owner, pid %d, is gone", name, res.PID)))
		Expect(up.Stderr).To(ContainSubstring("nodeprint cluster prune"))

		pruned := cli.ExpectRun(ctx, 0, "cluster", "prune")
		Expect(pruned.Stdout).To(ContainSubstring("pruned " + name))
		Expect(pruned.Stdout).NotTo(ContainSubstring("pruned "+other), "a cluster from cluster up has no owner and is never pruned")
		cli.ExpectNothingLeft(ctx, name, nil)
		cli.ExpectRun(ctx, 0, "cluster", "status", "--name", other)
		cli.ExpectRun(ctx, 0, "cluster", "down", "--name", other)
		Expect(cli.ExpectRun(ctx, 0, "cluster", "prune").Stdout).To(ContainSubstring("no stale clusters"))
		cli.ExpectNoNewProcessesFromBin(ctx, before)
	}, SpecTimeout(5*time.Minute))

	DescribeTable("bad input exits 2 with a clear message",
		func(ctx SpecContext, want string, args ...string) {
			res := cli.ExpectRun(ctx, 2, args...)
			Expect(res.Stderr).To(ContainSubstring(want))
		},
		Entry("invalid name", "invalid cluster name", "cluster", "up", "--name", "Bad_Name", SpecTimeout(time.Minute)),
		Entry("unknown flag", "unknown flag", "cluster", "up", "--nmae", "x", SpecTimeout(time.Minute)),
		Entry("unknown provider", "unknown cluster provider", "cluster", "status", "--provider", "eks", SpecTimeout(time.Minute)),
		Entry("unknown command", "unknown command", "cluster", "explode", SpecTimeout(time.Minute)),
		Entry("unexpected argument", "unknown command", "cluster", "up", "extra", SpecTimeout(time.Minute)),
		Entry("restart of something that is not a component", "not a component", "cluster", "restart", "kubelet", SpecTimeout(time.Minute)),
		Entry("a Karpenter version that is not a release tag", "want a release tag vX.Y.Z", "verify", "--karpenter-version", "1.15", "web-service", SpecTimeout(time.Minute)),
		Entry("an upgrade check on a running cluster", "leave out --cluster", "verify", "--karpenter-version", "v1.15.0", "--cluster", "x", "web-service", SpecTimeout(time.Minute)),
		Entry("an infrastructure fault on an existing cluster", "infrastructure (L1) fault", "run", "fixtures/scenarios/faults/slow-boot.yaml", "--provider", "existing", SpecTimeout(time.Minute)),
	)
})

var _ = Describe("nodeprint run", Label("suite:lifecycle"), func() {
	DescribeTable("an interrupted run restores its fault, deletes what it created and exits 130",
		func(ctx SpecContext, sig syscall.Signal, marker, scenario string) {
			name := fmt.Sprintf("lc-sig-%d", os.Getpid())
			DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
			cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
			res := cli.ExpectSignalledAt(ctx, sig, marker, "run", "--cluster", name, scenario)
			Expect(res.Code).To(Equal(130), "exit code says interrupted; stderr:\n%s", res.Stderr)
			Expect(res.Stderr).To(ContainSubstring("cleaning up"))
			Expect(res.Stderr).To(ContainSubstring("interrupted before they completed"))
			Expect(res.Stdout).To(ContainSubstring("interrupted before it completed"))
			Expect(res.Stderr).NotTo(ContainSubstring("the environment failed"), "an interrupt is not an environment failure")
			kubeconfig := strings.TrimSpace(cli.ExpectRun(ctx, 0, "cluster", "kubeconfig", "--name", name).Stdout)
			suitekit.New(kubeconfig).ExpectNoFaultLeftovers(ctx)
			cli.ExpectRun(ctx, 0, "cluster", "status", "--name", name)
		},
		Entry("SIGINT while the workloads are applied", syscall.SIGINT, ": applying namespace", "web-service", SpecTimeout(4*time.Minute)),
		Entry("SIGTERM while a fault is injected", syscall.SIGTERM, ": injecting fault", "fixtures/scenarios/faults/slow-boot.yaml", SpecTimeout(5*time.Minute)),
	)

	// Without supervision each of these reads as a layer's fault: a dead
	// Karpenter as L2 (nothing provisioned), a dead KWOK controller as L1
	// (nodes never ready), a restarted API server as anything at all.
	DescribeTable("a component that dies or restarts mid-run makes the verdict inconclusive (environment), exit 3, never a layer",
		func(ctx SpecContext, component, marker, scenario string, kept bool) {
			var args []string
			name := ""
			if kept {
				name = fmt.Sprintf("lc-env-%d", os.Getpid())
				DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
				cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
				args = []string{"--cluster", name}
			}
			act, what := func(pid int) {
				// A temporary cluster is named after the run's pid.
				c := name
				if c == "" {
					c = fmt.Sprintf("np-%d", pid)
				}
				Expect(syscall.Kill(cli.ExpectComponentPID(ctx, c, component), syscall.SIGKILL)).To(Succeed())
			}, "killing "+component
			if kept {
				act, what = func(int) { cli.ExpectRun(ctx, 0, "cluster", "restart", component, "--name", name) }, "restarting "+component
			}
			res := cli.ExpectActAt(ctx, marker, what, act, append([]string{"run", scenario}, args...)...)
			Expect(res.Code).To(Equal(3), "exit code says environment; stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
			Expect(res.Stdout).To(MatchRegexp(`ERROR \S+ \(.*\): inconclusive \(environment\): .*run \S+: the environment failed: %s (exited|restarted)`, component))
			Expect(res.Stdout+res.Stderr).NotTo(MatchRegexp(`L[123]-(infrastructure|orchestration|application)`), "no layer is blamed")
			Expect(res.Stderr).To(ContainSubstring("the environment failed"))
			if !kept {
				// The run's cluster goes with it: nothing of it is left but
				// the log the error names, which must outlive it.
				cli.ExpectNothingLeft(ctx, fmt.Sprintf("np-%d", res.PID), nil)
				m := regexp.MustCompile(component + ` exited \(pid \d+; its log: ([^)]+)\)`).FindStringSubmatch(res.Stdout)
				Expect(m).NotTo(BeNil(), "the error names %s's log; stdout:\n%s", component, res.Stdout)
				DeferCleanup(os.RemoveAll, filepath.Dir(m[1]))
				Expect(m[1]).To(BeAnExistingFile(), "the log the error names is gone with the cluster")
				return
			}
			// The observer's informers came back with the API server:
			// cleanup saw the run's objects go, and left nothing.
			Expect(res.Stderr).To(ContainSubstring("every component is up again"))
			kubeconfig := strings.TrimSpace(cli.ExpectRun(ctx, 0, "cluster", "kubeconfig", "--name", name).Stdout)
			suitekit.New(kubeconfig).ExpectNoFaultLeftovers(ctx)
			cli.ExpectRun(ctx, 0, "cluster", "status", "--name", name)
		},
		Entry("Karpenter killed while the workloads are applied", "karpenter", ": applying namespace", "web-service", false, SpecTimeout(4*time.Minute)),
		Entry("the KWOK controller killed while a fault is injected", "kwok-controller", ": injecting fault", "fixtures/scenarios/faults/slow-boot.yaml", false, SpecTimeout(5*time.Minute)),
		Entry("the API server restarted while the workloads are applied", "kube-apiserver", ": applying namespace", "web-service", true, SpecTimeout(5*time.Minute)),
	)

	// The verdict was taken on a healthy cluster before cleanup began, so
	// it stands; cleanup itself stops waiting, starts over once the API
	// server is back and then asks the API server what is left.
	It("keeps the verdict of a run whose cleanup the API server restarts under, and leaves nothing", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-clean-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
		res := cli.ExpectActAt(ctx, ": cleaning up", "restarting kube-apiserver", func(int) {
			cli.ExpectRun(ctx, 0, "cluster", "restart", "kube-apiserver", "--name", name)
		}, "run", "web-service", "--cluster", name)
		Expect(res.Code).To(Equal(0), "stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
		Expect(res.Stdout).To(ContainSubstring("PASS web-service"))
		Expect(res.Stderr).To(MatchRegexp(`cleaning up: stopped waiting: kube-apiserver (exited|restarted)`))
		Expect(res.Stderr).To(ContainSubstring("cleaning up: every component is up again"))
		kubeconfig := strings.TrimSpace(cli.ExpectRun(ctx, 0, "cluster", "kubeconfig", "--name", name).Stdout)
		suitekit.New(kubeconfig).ExpectNoFaultLeftovers(ctx)
		cli.ExpectRun(ctx, 0, "cluster", "status", "--name", name)
	}, SpecTimeout(5*time.Minute))

	// Recording is a run like the others: a baseline taken while a
	// component was down would turn every later verify into a false
	// regression. Karpenter dies here while the first of two runs is
	// cleaned up, when nothing but its NodeClaims are left to wait for.
	It("writes no baseline when Karpenter dies while a recorded run is cleaned up, stops waiting for it and exits 3", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		res := cli.ExpectActAt(ctx, ": cleaning up", "killing karpenter", func(pid int) {
			Expect(syscall.Kill(cli.ExpectComponentPID(ctx, fmt.Sprintf("np-%d", pid), "karpenter"), syscall.SIGKILL)).To(Succeed())
		}, "record", "web-service", "--runs", "2", "--fingerprints", dir)
		Expect(res.Code).To(Equal(3), "exit code says environment; stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
		Expect(res.Stderr).To(MatchRegexp(`run 1 of 2: run \S+: the environment failed: karpenter exited`))
		// Nobody restarts a component of the run's own cluster: cleanup
		// stops waiting at once and the teardown removes what is left.
		Expect(res.Stderr).To(ContainSubstring("in place: karpenter still down"))
		Expect(res.Stdout+res.Stderr).NotTo(MatchRegexp(`L[123]-(infrastructure|orchestration|application)`), "no layer is blamed")
		Expect(os.ReadDir(dir)).To(BeEmpty(), "no baseline is written")
		cli.ExpectNothingLeft(ctx, fmt.Sprintf("np-%d", res.PID), nil)
	}, SpecTimeout(4*time.Minute))

	It("keeps observing across an API server restart: its informers recover", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-obs-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
		env := suitekit.New(strings.TrimSpace(cli.ExpectRun(ctx, 0, "cluster", "kubeconfig", "--name", name).Stdout))
		ns := fmt.Sprintf("obs-%d", os.Getpid())
		ob := env.StartObserver(ctx, suitekit.ProbeTarget(ns))
		cli.ExpectRun(ctx, 0, "cluster", "restart", "kube-apiserver", "--name", name)
		// Created after the restart: only informers that watch again see them.
		env.ExpectCreated(ctx, suitekit.ProbeWorkloadObjects(ns)...)
		// client-go's reflector retries with a backoff of up to 30 s.
		environment.EventuallyExpectObserved(ctx, ob, 2, 90*time.Second)
	}, SpecTimeout(4*time.Minute))

	It("exits with the documented code in each of the four cases, and reports it", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-exit-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
		good := "fixtures/scenarios/faults/missing-nodeclass.yaml"
		dir := GinkgoT().TempDir()

		By("0: the expected attribution")
		cli.ExpectRun(ctx, 0, "run", good, "--cluster", name, "--report-dir", dir+"/ok")
		cli.ExpectReport(dir+"/ok", 0, "missing-nodeclass", "passed")

		By("1: a fault scenario expecting another rule than the one that decides")
		wrong := cli.WriteScenarioVariant(dir, good, "expect: {layer: L2, rule: L2-nodeclass-missing}", "expect: {layer: L2, rule: L2-nodepool-limits}")
		cli.ExpectRun(ctx, 1, "run", wrong, "--cluster", name, "--report-dir", dir+"/wrong")
		cli.ExpectReport(dir+"/wrong", 1, "missing-nodeclass", "failed")

		By("2: bad input, before anything runs")
		bad := cli.WriteScenarioVariant(dir, good, "expect: {layer: L2, rule: L2-nodeclass-missing}", "expect: {layer: L9}")
		cli.ExpectRun(ctx, 2, "run", bad, "--cluster", name)

		By("3: the environment: a cluster that is not running")
		cli.ExpectRun(ctx, 0, "cluster", "down", "--name", name)
		cli.ExpectRun(ctx, 3, "run", good, "--cluster", name)
	}, SpecTimeout(6*time.Minute))
})

var _ = Describe("nodeprint verify --karpenter-version", Label("suite:lifecycle"), func() {
	// The release built here is the pinned one, already in bin/: building
	// another release costs a cold machine about six minutes, too much for
	// make test. `make upgrade-check` runs the whole catalog with another
	// release (docs/ci.md, "Karpenter upgrade check").
	It("runs the scenarios on a temporary cluster with that release and reports what differs", func(ctx SpecContext) {
		version := cli.Toolchain.Versions.Karpenter
		dir := GinkgoT().TempDir()
		res := cli.ExpectRun(ctx, 0, "verify", "--karpenter-version", version, "web-service", "--report-dir", dir)
		Expect(res.Stderr).To(ContainSubstring("starting Karpenter " + version))
		Expect(res.Stdout).To(ContainSubstring(fmt.Sprintf("Karpenter upgrade check %s → %s: none of the 1 scenario(s) differs from its baseline", version, version)))
		rep := cli.ExpectReport(dir, 0, "web-service", "passed")
		Expect(rep.Upgrade).To(Equal(&report.Upgrade{From: version, To: version, Differing: []string{}}))
		Expect(rep.Stack.Karpenter).To(Equal(version))
	}, SpecTimeout(4*time.Minute))
})

var _ = Describe("nodeprint run --provider existing", Label("suite:lifecycle", "provider:existing"), func() {
	It("runs workload-side scenarios on a cluster it does not own, refuses infrastructure faults and deletes nothing it did not create", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-ex-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--name", name, NodeTimeout(2*time.Minute))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--name", name)
		kubeconfig := strings.TrimSpace(cli.ExpectRun(ctx, 0, "cluster", "kubeconfig", "--name", name).Stdout)
		env := suitekit.New(kubeconfig)
		sentinel := env.CreateSentinel(ctx, fmt.Sprintf("platform-team-%d", os.Getpid()))
		dir := GinkgoT().TempDir()

		By("status and up only check the cluster")
		st := cli.ExpectRun(ctx, 0, "cluster", "status", "--provider", "existing", "--kubeconfig", kubeconfig)
		Expect(st.Stdout).To(MatchRegexp(`(?m)^karpenter-crds\s+yes\s`))
		cli.ExpectRun(ctx, 0, "cluster", "up", "--provider", "existing", "--kubeconfig", kubeconfig)

		By("a workload-side fault scenario runs and is attributed")
		cli.ExpectRun(ctx, 0, "run", "fixtures/scenarios/faults/missing-nodeclass.yaml", "--provider", "existing", "--kubeconfig", kubeconfig, "--report-dir", dir+"/ok")
		cli.ExpectReport(dir+"/ok", 0, "missing-nodeclass", "passed")

		By("an infrastructure fault is refused before anything is applied")
		refused := cli.ExpectRun(ctx, 2, "run", "fixtures/scenarios/faults/capacity-shortage-pending.yaml", "--provider", "existing", "--kubeconfig", kubeconfig)
		suitekit.ExpectStderrNames(refused, "capacity-shortage-pending.yaml", "spec.fault.name", "infrastructure (L1) fault", "--provider local")
		other := cli.ExpectRun(ctx, 2, "run", "fixtures/scenarios/aws-families.yaml", "--provider", "existing", "--kubeconfig", kubeconfig)
		suitekit.ExpectStderrNames(other, "aws-families.yaml", "spec.catalog", "--catalog")

		By("down stops nothing; the cluster and what nodeprint did not create are untouched")
		cli.ExpectRun(ctx, 0, "cluster", "down", "--provider", "existing", "--kubeconfig", kubeconfig)
		cli.ExpectRun(ctx, 0, "cluster", "status", "--name", name)
		env.ExpectSentinelUntouched(ctx, sentinel)

		By("a cluster that does not answer is an environment failure; a kubeconfig that is not there is bad input")
		down := cli.ExpectRun(ctx, 3, "run", "fixtures/scenarios/faults/missing-nodeclass.yaml", "--provider", "existing", "--kubeconfig", env.WriteUnreachableKubeconfig(dir))
		suitekit.ExpectStderrNames(down, "kube-apiserver", "127.0.0.1:1")
		missing := cli.ExpectRun(ctx, 2, "run", "fixtures/scenarios/faults/missing-nodeclass.yaml", "--provider", "existing", "--kubeconfig", dir+"/none.yaml")
		suitekit.ExpectStderrNames(missing, "none.yaml")
	}, SpecTimeout(6*time.Minute))
})

var _ = Describe("the kind provider", Label("suite:lifecycle", "provider:kind"), func() {
	It("boots a real kind node on this engine, runs Karpenter in it from its chart, records and verifies a baseline and attributes a fault on it, and leaves nothing", func(ctx SpecContext) {
		name := fmt.Sprintf("lc-kind-%d", os.Getpid())
		DeferCleanup(cli.Run, "cluster", "down", "--provider", "kind", "--name", name, NodeTimeout(3*time.Minute))
		engine, err := cluster.DockerEngine(ctx)
		if err != nil {
			By("without a Docker engine, up fails at once as an environment failure and leaves nothing")
			res := cli.ExpectRun(ctx, 3, "cluster", "up", "--provider", "kind", "--name", name)
			suitekit.ExpectStderrNames(res, "needs a Docker engine", "use the local provider")
			Expect(res.Stderr).NotTo(ContainSubstring("toolchain"), "nothing is built without an engine")
			cli.ExpectRun(ctx, 3, "cluster", "status", "--provider", "kind", "--name", name)
			Skip("the kind provider was not run end to end: " + err.Error())
		}
		By("Docker engine " + engine + ": up takes the route the engine allows, building the node image if it is missing")
		networkBefore := suitekit.KindNetworkExists(ctx)
		up := cli.Run(ctx, "cluster", "up", "--provider", "kind", "--karpenter-in-cluster", "--name", name, "--timeout", "10m")
		if up.Code != 0 && strings.Contains(up.Stderr, "refuses privileged containers") {
			By("an engine that refuses privileged containers and the wrapper's flags: up fails at once quoting the engine, and leaves nothing")
			Expect(up.Code).To(Equal(3), "an engine that refuses both routes is an environment failure; stderr:\n%s", up.Stderr)
			suitekit.ExpectStderrNames(up, "docker run --privileged: ", "nodeprint's way round it", "use the local provider")
			Expect(up.Stderr).NotTo(ContainSubstring("toolchain"), "nothing is built on such an engine")
			cli.ExpectRun(ctx, 3, "cluster", "status", "--provider", "kind", "--name", name)
			cli.ExpectNoKindLeftovers(ctx, name, networkBefore)
			Skip("the kind provider was not run end to end: the engine refuses both routes (stderr above)")
		}
		Expect(up.Code).To(Equal(0), "cluster up --provider kind; stderr:\n%s", up.Stderr)
		Expect(up.Stdout+up.Stderr).To(ContainSubstring("kind's route on this engine: "), "up says which route the nodes took")
		Expect(up.Stdout).To(MatchRegexp(`(?m)^\s+kwok\s+[0-9.]+m?s$`))
		Expect(up.Stdout).To(ContainSubstring("stop it with: nodeprint cluster down --provider kind --name "+name), "the hint stops this cluster, not a local one")
		st := cli.ExpectRun(ctx, 0, "cluster", "status", "--provider", "kind", "--name", name)
		for _, comp := range []string{"kube-apiserver", "kwok-controller", "karpenter"} {
			Expect(st.Stdout).To(MatchRegexp(`(?m)^%s\s+yes\s`, comp))
		}
		Expect(st.Stdout).To(MatchRegexp(`(?m)^karpenter\s+yes\s.*pod karpenter/karpenter-\S+ ready=true`), "Karpenter runs as the chart's pod")
		metrics := regexp.MustCompile(`Karpenter metrics: (http://127\.0\.0\.1:[0-9]+/metrics)`).FindStringSubmatch(up.Stdout)
		Expect(metrics).To(HaveLen(2), "up names Karpenter's metrics on loopback; stdout:\n%s", up.Stdout)
		Expect(suitekit.HTTPGet(ctx, metrics[1])).To(ContainSubstring("karpenter_"), "the pod's metrics are served on loopback here through kind's port mapping")
		suitekit.ExpectKindNodeReady(ctx, name)

		By("a fault that needs Karpenter as a process of this machine is refused before anything is applied, the cluster known as in-cluster from its state")
		refused := cli.ExpectRun(ctx, 2, "run", "fixtures/scenarios/faults/apiserver-degraded.yaml", "--provider", "kind", "--cluster", name)
		suitekit.ExpectStderrNames(refused, "apiserver-degraded.yaml", "spec.fault.name", "--karpenter-in-cluster")

		By("a baseline recorded on kind, then verified on kind")
		fps, reports := GinkgoT().TempDir(), GinkgoT().TempDir()
		cli.ExpectRun(ctx, 0, "record", "fixtures/scenarios/web-service.yaml", "--runs", "2", "--provider", "kind", "--cluster", name, "--fingerprints", fps)
		cli.ExpectRun(ctx, 0, "verify", "fixtures/scenarios/web-service.yaml", "--provider", "kind", "--cluster", name, "--fingerprints", fps, "--report-dir", reports+"/verify")
		cli.ExpectReport(reports+"/verify", 0, "web-service", "passed")
		Expect(os.ReadFile(reports+"/verify/summary.md")).To(ContainSubstring("Karpenter in the cluster from its chart"), "the report says where Karpenter ran")

		By("a fault attributed on kind: a NodePool limit below the workload's need is L2")
		cli.ExpectRun(ctx, 0, "run", "fixtures/scenarios/faults/nodepool-limits.yaml", "--provider", "kind", "--cluster", name, "--report-dir", reports+"/fault")
		cli.ExpectReport(reports+"/fault", 0, "nodepool-limits", "passed")

		cli.ExpectRun(ctx, 0, "cluster", "down", "--provider", "kind", "--name", name)
		cli.ExpectRun(ctx, 3, "cluster", "status", "--provider", "kind", "--name", name)
		cli.ExpectNoKindLeftovers(ctx, name, networkBefore)
	}, SpecTimeout(30*time.Minute))
})
