package cluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/process"
)

// BaseStagesDir holds the project's own KWOK stages that every cluster gets,
// relative to the repository root.
const BaseStagesDir = "fixtures/kwok-stages/base"

// applyManifests applies Karpenter's CRDs, waits until they are served, and
// applies the KWOK stages and resource-usage rules the simulation runs on.
func (l *Local) applyManifests(ctx context.Context) error {
	c, err := kube.NewClient(l.Kubeconfig())
	if err != nil {
		return err
	}
	if err := applyCRDs(ctx, c, l.tc.Paths().KarpenterCRDs); err != nil {
		return err
	}
	if err := l.cp.beforeStages(ctx, c); err != nil {
		return err
	}
	// kwok-controller reads these kinds from the API server (see
	// dynamicKinds), so the defaults kwokctl would otherwise build in are
	// applied here: KWOK's fast node and pod lifecycles, the lease heartbeat
	// and the resource-metrics endpoint, plus the project's own base stages
	// and usage rule (which replaces KWOK's usage-from-annotation).
	k := l.tc.Paths().KwokKustomize
	stages, err := kube.DecodeFiles(
		filepath.Join(k, "stage", "node", "fast"),
		filepath.Join(k, "stage", "node", "heartbeat-with-lease"),
		filepath.Join(k, "stage", "pod", "fast"),
		filepath.Join(k, "metrics", "resource", "metrics-resource.yaml"),
		filepath.Join(l.tc.Root, BaseStagesDir),
	)
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(KarpenterNamespace)
	return l.applyNewKinds(ctx, c, append(stages, ns))
}

// newKindsTimeout bounds how long applyNewKinds waits for the API
// server's discovery to serve kinds whose CRDs were just established.
const newKindsTimeout = 30 * time.Second

// applyNewKinds applies objs, some of kinds whose CRDs were established a
// moment ago. Established is not yet served: the API server's discovery can
// lag it (seen on kind: "no matches for kind Stage in version
// kwok.x-k8s.io/v1alpha1" right after KWOK's CRDs were established), and a
// client caches what discovery said. So while a kind is unknown, it asks
// again with a new client, up to newKindsTimeout.
func (l *Local) applyNewKinds(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, newKindsTimeout, true, func(ctx context.Context) (bool, error) {
		last = kube.Apply(ctx, c, objs...)
		if !meta.IsNoMatchError(last) {
			return last == nil, last
		}
		nc, err := kube.NewClient(l.Kubeconfig())
		if err != nil {
			return false, err
		}
		c = nc
		return false, nil
	})
	if err != nil && meta.IsNoMatchError(last) {
		return fmt.Errorf("the API server did not serve the new kinds within %s: %w", newKindsTimeout, last)
	}
	return err
}

// applyCRDs applies the CRDs in dir and waits until each is established.
func applyCRDs(ctx context.Context, c client.Client, dir string) error {
	crds, err := kube.DecodeFiles(dir)
	if err != nil {
		return err
	}
	if err := kube.Apply(ctx, c, crds...); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
	}
	return nil
}

// start starts Karpenter on two free loopback ports and waits for its
// readiness probe.
func (p processHost) start(ctx context.Context, st state) (state, error) {
	l := p.l
	ports, err := freePorts(2)
	if err != nil {
		return st, err
	}
	st.KarpenterHealthPort, st.KarpenterMetricsPort = ports[0], ports[1]
	if err := l.writeState(st); err != nil {
		return st, err
	}
	return st, l.runKarpenter(ctx, st)
}

func (l *Local) runKarpenter(ctx context.Context, st state) error {
	if err := CheckKarpenterBinary(st.KarpenterBinary); err != nil {
		return &PhaseError{Phase: "karpenter", Err: err}
	}
	// A Karpenter that was just stopped may hold its ports a moment longer
	// (a large heap takes time to unmap): starting beside it fails with
	// "address already in use" and reads as a crash of the new one.
	if err := waitPortsFree(ctx, portsFreeTimeout, st.KarpenterHealthPort, st.KarpenterMetricsPort); err != nil {
		return &PhaseError{Phase: "karpenter", Err: err}
	}
	h, err := process.Start(l.karpenterSpec(st))
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", st.KarpenterHealthPort)
	last := time.Now()
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if !h.Alive() {
			return false, fmt.Errorf("karpenter exited during start-up: %w", process.ErrExited)
		}
		if time.Since(last) > 5*time.Second {
			l.opts.progress(Event{Phase: "karpenter", Message: "waiting for Karpenter's readiness probe " + url})
			last = time.Now()
		}
		return httpOK(ctx, url) == nil, nil
	})
	if err != nil {
		return &PhaseError{Phase: "karpenter", Err: err, LogHint: l.KarpenterLog()}
	}
	return nil
}

// keptKarpenterLog copies the cluster's logs where its teardown does not
// remove them (keepLogs, as a failed start does) and names Karpenter's log
// there; the live log when the copy fails.
func (l *Local) keptKarpenterLog() string { return l.KeepLog(l.KarpenterLog()) }

// portsFreeTimeout bounds the wait for a stopped Karpenter's ports.
const portsFreeTimeout = 30 * time.Second

// waitPortsFree waits until every port can be bound on loopback (0 is
// none), bounded by timeout, and says which port stayed taken.
func waitPortsFree(ctx context.Context, timeout time.Duration, ports ...int) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var taken int
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, p := range ports {
			if p == 0 {
				continue
			}
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				taken = p
				return false, nil
			}
			_ = ln.Close()
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("port 127.0.0.1:%d is still taken after %s (a Karpenter that did not exit, or another program): %w", taken, timeout, err)
	}
	return nil
}

// waitHealthy polls Status until every component is healthy, reporting
// which ones it is still waiting for.
func (l *Local) waitHealthy(ctx context.Context) error {
	var last Status
	lastReport := time.Now()
	restarts := 0
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		st, err := l.Status(ctx)
		if err != nil {
			return false, err
		}
		last = st
		if st.Healthy() {
			return true, nil
		}
		// Karpenter was ready a moment ago (its phase waited for that): one
		// that exited since will not come back, so waiting out the timeout
		// would only hide why.
		for _, c := range st.Components {
			if c.Name == "karpenter" && c.Exited {
				return false, fmt.Errorf("karpenter exited after it was ready (its log: %s)", l.KarpenterLog())
			}
		}
		// kwokctl starts every component at once without waiting for
		// kube-apiserver; metrics-server exits when the API server did not
		// answer yet. `kwokctl start cluster` starts only what is not running.
		if exited := exitedControlPlane(st); len(exited) > 0 {
			if restarts == maxComponentRestarts {
				return false, fmt.Errorf("%s exited %d times", strings.Join(exited, ", "), restarts+1)
			}
			restarts++
			l.opts.progress(Event{Phase: "ready", Message: fmt.Sprintf("restarting %s, which exited during start-up (attempt %d of %d)",
				strings.Join(exited, ", "), restarts, maxComponentRestarts)})
			if err := l.cp.restart(ctx, exited); err != nil {
				return false, err
			}
			return false, nil
		}
		if time.Since(lastReport) > 5*time.Second {
			l.opts.progress(Event{Phase: "ready", Message: "waiting for " + unhealthy(st)})
			lastReport = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w; not healthy: %s", err, unhealthy(last))
	}
	return nil
}

// maxComponentRestarts bounds how often Up restarts a control-plane
// component that exited during start-up.
const maxComponentRestarts = 3

// exitedControlPlane names the kwokctl-managed components whose process is gone.
func exitedControlPlane(st Status) []string {
	var out []string
	for _, c := range st.Components {
		if c.Exited && c.Name != "karpenter" {
			out = append(out, c.Name)
		}
	}
	return out
}

func (l *Local) componentLog(name string) string {
	if name == "karpenter" {
		return l.KarpenterLog()
	}
	return l.cp.componentLog(name)
}

func unhealthy(st Status) string {
	var out []string
	for _, c := range st.Components {
		switch {
		case st.Blocked(c):
			out = append(out, c.Name+" (asked through "+c.Via+")")
		case !c.Healthy:
			out = append(out, c.Name+" ("+c.Detail+")")
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

var insecureLoopback = &http.Client{
	Timeout: 2 * time.Second,
	// The components serve self-signed certificates on 127.0.0.1; the probe
	// only asks whether they answer /healthz, it sends no credentials.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
}

// apiServerReady asks the API server's /readyz (which includes etcd) with
// the cluster's own credentials.
func apiServerReady(ctx context.Context, cs kubernetes.Interface, host string) error {
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("%s/readyz: %w", host, err)
	}
	return nil
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := insecureLoopback.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Status probes every component of the cluster.
func (l *Local) Status(ctx context.Context) (Status, error) {
	out := Status{Name: l.opts.name, Provider: string(l.cp.kind()), Kubeconfig: l.Kubeconfig()}
	st, err := l.readState()
	if err != nil {
		return out, err
	}
	out.Exists = true
	out.KubernetesVersion, out.KarpenterVersion = st.KubernetesVersion, st.KarpenterVersion
	cl, cerr := l.clients()
	if cerr == nil {
		if v, err := cl.clientset.Discovery().ServerVersion(); err == nil {
			out.KubernetesVersion = v.GitVersion
		}
	}
	out.Components = append(l.cp.components(ctx, cl, cerr), l.karpenter().status(ctx, st, cl, cerr))
	return out, nil
}

// stop stops the Karpenter process for Down.
func (p processHost) stop(ctx context.Context, st state) error {
	p.l.opts.progress(Event{Phase: "down", Message: "stopping Karpenter"})
	if h, err := process.Adopt(p.l.karpenterSpec(st)); err == nil {
		return h.Stop(ctx, 10*time.Second)
	}
	return nil
}

// status probes the Karpenter process's readiness endpoint.
func (p processHost) status(ctx context.Context, st state, _ *statusClients, _ error) ComponentStatus {
	l := p.l
	kerr := error(nil)
	h, err := process.Adopt(l.karpenterSpec(st))
	kpid := 0
	switch {
	case err != nil:
		kerr = fmt.Errorf("not running: %w (log: %s)", err, l.KarpenterLog())
	default:
		kpid = h.PID
		kerr = httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", st.KarpenterHealthPort))
	}
	return probed("karpenter", kerr, fmt.Sprintf("%s /readyz ok", st.KarpenterVersion), kpid, l.KarpenterLog())
}

// probed is one component's status: err from its probe, ok what a passed
// probe checked, pid its process (0: none the harness knows), whose exit
// makes it unhealthy whatever the probe said.
func probed(name string, err error, ok string, pid int, log string) ComponentStatus {
	cs := ComponentStatus{Name: name, Healthy: err == nil, Detail: ok, PID: pid, Log: log}
	if pid > 0 && !process.Runs(pid, "") {
		cs.Healthy, cs.Exited = false, true
		err = fmt.Errorf("process %d exited (log: %s)", pid, log)
	}
	if err != nil {
		cs.Detail = err.Error()
	}
	return cs
}

func apiServiceAvailable(ctx context.Context, c client.Client, name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"})
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, ci := range conds {
		m, _ := ci.(map[string]any)
		if m["type"] == "Available" {
			if m["status"] == "True" {
				return nil
			}
			return fmt.Errorf("APIService %s not available: %v", name, m["message"])
		}
	}
	return fmt.Errorf("APIService %s has no Available condition yet", name)
}

// leftoverGrace is how long Down lets a process of the cluster's
// directory exit by itself after the control plane was stopped.
const leftoverGrace = 5 * time.Second

// Down stops Karpenter and the control plane, kills any process still
// running from the cluster's directory, and removes the directory. It goes
// on after a failed step and returns every error.
func (l *Local) Down(ctx context.Context) error {
	if _, err := os.Stat(l.dir); errors.Is(err, os.ErrNotExist) {
		l.opts.progress(Event{Phase: "down", Done: true, Message: fmt.Sprintf("no cluster named %q: nothing to stop", l.opts.name)})
		return nil
	}
	start := time.Now()
	var errs []error
	if st, err := l.readState(); err == nil && st.KarpenterBinary != "" {
		if err := l.karpenter().stop(ctx, st); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.cp.stop(ctx); err != nil {
		errs = append(errs, err)
	}
	// Whatever survived (a component kwokctl lost track of during an
	// interrupted start) still names the work directory on its command line.
	// kwokctl sends its components SIGKILL and returns without waiting for
	// them (it is not their parent), so one may still be exiting: only what
	// is still there after leftoverGrace is a leftover.
	if pids, err := process.FindReferencing(l.dir); err != nil {
		errs = append(errs, err)
	} else if pids = process.StillRunning(ctx, pids, leftoverGrace); len(pids) > 0 {
		l.opts.progress(Event{Phase: "down", Message: fmt.Sprintf("killing %d leftover process(es): %s", len(pids), process.Describe(pids))})
		if err := process.KillAndWait(ctx, pids); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("failed to remove %s: %w", l.dir, err))
	}
	l.forgetClients()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failed to stop cluster %q cleanly: %w", l.opts.name, err)
	}
	l.opts.progress(Event{Phase: "down", Done: true, Elapsed: time.Since(start), Message: fmt.Sprintf("cluster %q stopped and removed", l.opts.name)})
	return nil
}

// RestartKarpenter stops Karpenter if it runs and starts it again on the
// same ports, connected straight to the API server, waiting for its
// readiness probe. Faults and tests use it; a Karpenter that died is never
// restarted behind the harness's back.
func (l *Local) RestartKarpenter(ctx context.Context) error {
	l.karpenterMu.Lock()
	defer l.karpenterMu.Unlock()
	return l.restartKarpenter(ctx, "")
}

func (l *Local) restartKarpenter(ctx context.Context, via string) error {
	return l.restartKarpenterAs(ctx, via, Build{})
}

// restartKarpenterAs stops Karpenter and starts it again with its API
// traffic through via, and from build's binary where one is given (the
// running one is stopped with the state it was started with).
func (l *Local) restartKarpenterAs(ctx context.Context, via string, build Build) error {
	was, err := l.readState()
	if err != nil {
		return err
	}
	st := was
	switched := build.Binary != "" && build.Binary != st.KarpenterBinary
	st.APIServerVia = via
	if switched {
		st.KarpenterBinary, st.KarpenterVersion = build.Binary, cmp.Or(build.Version, st.KarpenterVersion)
	}
	msg := "starting Karpenter " + st.KarpenterVersion + " again"
	if switched {
		msg = fmt.Sprintf("starting Karpenter %s from %s", st.KarpenterVersion, st.KarpenterBinary)
	}
	if via != "" {
		msg += ", its API traffic through " + via
	}
	return l.karpenter().restart(ctx, was, st, msg)
}

// restart stops the Karpenter process (started as was says) and starts it
// as st says, bounded like `up`.
func (p processHost) restart(ctx context.Context, was, st state, msg string) error {
	l := p.l
	pid := 0
	h, herr := process.Adopt(l.karpenterSpec(was))
	if herr == nil {
		pid = h.PID
	}
	defer l.plan("karpenter", pid)()
	if herr == nil {
		l.opts.progress(Event{Phase: "karpenter", Message: fmt.Sprintf("stopping Karpenter (pid %d)", h.PID)})
		if err := h.Stop(ctx, 10*time.Second); err != nil {
			return err
		}
	}
	if st.APIServerVia != was.APIServerVia || st.KarpenterBinary != was.KarpenterBinary {
		if err := l.writeState(st); err != nil {
			return err
		}
	}
	// Bounded like `up`: a Karpenter that cannot reach the API server
	// (through a degraded proxy, say) must not hang the caller.
	ctx, cancel := context.WithTimeout(ctx, l.opts.timeout)
	defer cancel()
	err := l.phase(ctx, "karpenter", msg, func(ctx context.Context) error {
		return l.runKarpenter(ctx, st)
	})
	// A run's switch failed: a temporary cluster's teardown would delete
	// the log the error names, so it names a kept copy.
	var pe *PhaseError
	if errors.As(err, &pe) && pe.LogHint == l.KarpenterLog() {
		pe.LogHint = l.keptKarpenterLog()
	}
	return err
}

// statusClients are the clients Status probes with. They are built once per
// cluster incarnation: Up polls Status every 200 ms, and a new client per
// poll re-read the kubeconfig and its certificates each time.
type statusClients struct {
	clientset *kubernetes.Clientset
	client    client.Client
	host      string
}

// apiServerReady is the API server's readiness, or cerr, the error that
// left Status without clients (c is nil then).
func (c *statusClients) apiServerReady(ctx context.Context, cerr error) error {
	if cerr != nil {
		return cerr
	}
	return apiServerReady(ctx, c.clientset, c.host)
}

func (l *Local) clients() (*statusClients, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cached != nil {
		return l.cached, nil
	}
	cfg, err := kube.Config(l.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 3 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	l.cached = &statusClients{clientset: cs, client: c, host: cfg.Host}
	return l.cached, nil
}

// forgetClients drops the cached clients: a cluster started again under the
// same name has new certificates and ports.
func (l *Local) forgetClients() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cached = nil
}

// Components are the names Status reports for the local provider, in the
// order it reports them.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller", "metrics-server", "karpenter"}

// RestartComponent stops one component and starts it again, then waits
// until every component is healthy: karpenter as RestartKarpenter; a
// control-plane component of the kwokctl provider through `kwokctl start
// cluster`, which starts only what is not running. Runs supervised by
// another process see the restart as an environment incident, as they
// must: that is how the harness's own resilience is tested.
func (l *Local) RestartComponent(ctx context.Context, name string) error {
	if name == "karpenter" {
		return l.RestartKarpenter(ctx)
	}
	if l.cp.kind() != KindLocal {
		return fmt.Errorf("cannot restart %s: the %s provider restarts only karpenter (the control plane is kind's)", name, l.cp.kind())
	}
	st, err := l.Status(ctx)
	if err != nil {
		return err
	}
	pid := 0
	for _, c := range st.Components {
		if c.Name == name && !c.Exited {
			pid = c.PID
		}
	}
	defer l.plan(name, pid)()
	ctx, cancel := context.WithTimeout(ctx, l.opts.timeout)
	defer cancel()
	// Held from the stop until every component is healthy again: the
	// component's port is free meanwhile, and another cluster's kwokctl,
	// which takes the first free port scanning down from 32767, would take
	// it (seen: the restarted kube-apiserver found its port answered by a
	// plain-HTTP listener and exited). Starts hold the same lock.
	lock, err := l.lockPorts(ctx, "restart")
	if err != nil {
		return err
	}
	defer lock.release()
	if pid > 0 {
		h := &process.Handle{Spec: process.Spec{Name: name}, PID: pid}
		l.opts.progress(Event{Phase: "restart", Message: fmt.Sprintf("stopping %s (pid %d)", name, pid)})
		// A short grace: kube-apiserver drains its watches for longer
		// than a restart should take; the component is meant to go away.
		if err := h.Stop(ctx, 3*time.Second); err != nil {
			return err
		}
		// kwokctl would take the zombie for a running component and
		// not start it.
		if err := process.WaitReaped(ctx, pid, 10*time.Second); err != nil {
			return err
		}
	}
	return l.phase(ctx, "restart", fmt.Sprintf("starting %s again (kwokctl start cluster) and waiting for every component", name), func(ctx context.Context) error {
		if err := l.cp.restart(ctx, []string{name}); err != nil {
			return err
		}
		l.forgetClients()
		return l.waitHealthy(ctx)
	})
}
