package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/toolchain"
)

// chartHost runs Karpenter in the kind cluster as Karpenter's own CI runs
// it: its image built locally (the karpenter-image component), loaded into
// the nodes with kind's image loading, and installed with helm from the
// pinned release's chart (kwok/charts). What nodeprint changes in the
// chart's defaults, and why, is in chartValues.
type chartHost struct{ k *kindPlane }

// The chart's release and what nodeprint adds beside it.
const (
	chartRelease = "karpenter"
	// chartCatalog is the ConfigMap holding the catalog Karpenter reads
	// (INSTANCE_TYPES_FILE_PATH), mounted at chartCatalogDir.
	chartCatalog    = "nodeprint-karpenter-catalog"
	chartCatalogDir = "/etc/nodeprint/catalog"
	chartCatalogKey = "instance_types.json"
	// chartMetricsPort is the port Karpenter serves its metrics on in the
	// node's network (the pod runs with hostNetwork), which the kind
	// configuration maps to a loopback port of this machine.
	chartMetricsPort = 8080
	// chartRestartAnnotation changes on every restart, so that the chart's
	// Deployment rolls its pod even when nothing else changed.
	chartRestartAnnotation = "nodeprint.dev/restart"
	// chartRolloutTimeout bounds the wait for the Deployment's pod.
	chartRolloutTimeout = 3 * time.Minute
)

// A failure of the in-cluster Karpenter is a *PhaseError of the phase that
// runs it (l.phase wraps the rest), with helm's or the pod's log where
// there is one; inChart names the step in the error.
func inChart(step string, err error) error {
	return fmt.Errorf("karpenter in the cluster: %s: %w", step, err)
}

// start loads the image, writes the catalog and installs the chart, then
// waits for the Deployment's pod. The metrics port was chosen with the kind
// configuration (kindPlane.start).
func (c chartHost) start(ctx context.Context, st state) (state, error) {
	if err := c.loadImage(ctx); err != nil {
		return st, err
	}
	c.k.l.opts.progress(Event{Phase: "karpenter", Message: "installing Karpenter " + st.KarpenterVersion + " from its chart"})
	return st, c.install(ctx, st)
}

// restart upgrades the release to what st says and waits for the new pod.
// The API route of the apiserver-degraded fault and another binary are not
// the chart's to change: a provider with this host has neither capability.
func (c chartHost) restart(ctx context.Context, was, st state, msg string) error {
	if st.APIServerVia != "" {
		return errors.New("karpenter runs in the cluster: its API traffic cannot be sent through a proxy of this machine")
	}
	if st.KarpenterBinary != was.KarpenterBinary {
		return errors.New("karpenter runs in the cluster from the image of the pinned release: it cannot switch binaries")
	}
	defer c.k.l.plan("karpenter", 0)()
	ctx, cancel := context.WithTimeout(ctx, c.k.l.opts.timeout)
	defer cancel()
	return c.k.l.phase(ctx, "karpenter", msg+" (rolling its pod)", func(ctx context.Context) error {
		if err := c.k.l.writeState(st); err != nil {
			return err
		}
		return c.install(ctx, st)
	})
}

// stop does nothing: deleting the kind cluster stops the pod with it.
func (c chartHost) stop(context.Context, state) error { return nil }

func (c chartHost) metricsURL(st state) string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", st.KarpenterMetricsPort)
}

// status is healthy when the Deployment's pod is ready; its container's
// restarts go in Restarts, which the supervisor watches for a rise.
func (c chartHost) status(ctx context.Context, st state, cl *statusClients, cerr error) ComponentStatus {
	cs := ComponentStatus{Name: "karpenter", Log: c.k.l.KarpenterLog()}
	if cerr != nil {
		cs.Detail = cerr.Error()
		return cs
	}
	pod, err := c.pod(ctx, cl.client)
	if err != nil {
		cs.Detail = err.Error()
		return cs
	}
	ready, restarts := podReady(pod)
	cs.Healthy, cs.Restarts = ready, restarts
	cs.Detail = fmt.Sprintf("%s pod %s/%s ready=%t restarts=%d", st.KarpenterVersion, pod.Namespace, pod.Name, ready, restarts)
	return cs
}

// pod is the chart's one running Karpenter pod.
func (c chartHost) pod(ctx context.Context, cl client.Client) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(KarpenterNamespace),
		client.MatchingLabels{"app.kubernetes.io/instance": chartRelease, "app.kubernetes.io/name": "karpenter"}); err != nil {
		return nil, fmt.Errorf("failed to list Karpenter's pods: %w", err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("no Karpenter pod in namespace %s", KarpenterNamespace)
	}
	sort.Slice(live, func(i, j int) bool { return live[i].CreationTimestamp.After(live[j].CreationTimestamp.Time) })
	return &live[0], nil
}

func podReady(p *corev1.Pod) (bool, int32) {
	var restarts int32
	for _, s := range p.Status.ContainerStatuses {
		restarts += s.RestartCount
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue, restarts
		}
	}
	return false, restarts
}

func (c chartHost) binary() string {
	return filepath.Join(c.k.l.tc.Paths().KarpenterPod, "karpenter-kwok")
}

// checkBinary finds the image's binary and name (the build made both).
func (c chartHost) checkBinary() error {
	if _, err := os.Stat(c.binary()); err != nil {
		return inChart("image", fmt.Errorf("the in-cluster build is missing (%w): run `make karpenter-image`", err))
	}
	_, err := c.imageRef()
	return err
}

// mapKarpenterMetrics maps a free loopback port of this machine to the
// node's Karpenter metrics port, in the configuration kind creates the
// cluster from, and records it and the in-cluster mode in the state.
func (k *kindPlane) mapKarpenterMetrics() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	if k.config, err = withPortMapping(k.config, chartMetricsPort, port); err != nil {
		return err
	}
	st, err := k.l.readState()
	if err != nil {
		return err
	}
	st.KarpenterInCluster, st.KarpenterMetricsPort = true, port
	return k.l.writeState(st)
}

// imageRef is the name of the image the karpenter-image component built.
func (c chartHost) imageRef() (string, error) {
	f := filepath.Join(c.k.l.tc.Paths().KarpenterPod, "image")
	b, err := os.ReadFile(f)
	if err != nil {
		return "", inChart("image", fmt.Errorf("the in-cluster image is not built (%w): run `make karpenter-image`", err))
	}
	return strings.TrimSpace(string(b)), nil
}

// loadImage loads the image into every node of the cluster with kind's
// own loading (nodeutils.LoadImageArchive: ctr import into the k8s.io
// namespace), through the route's wrapper like every command kind runs.
func (c chartHost) loadImage(ctx context.Context) error {
	image, err := c.imageRef()
	if err != nil {
		return err
	}
	c.k.l.opts.progress(Event{Phase: "karpenter", Message: "loading image " + image + " into the kind node"})
	archive := filepath.Join(c.k.l.dir, "karpenter-image.tar")
	defer os.Remove(archive)
	if out, err := exec.CommandContext(ctx, "docker", "save", "-o", archive, image).CombinedOutput(); err != nil {
		return inChart("image", fmt.Errorf("docker save %s: %w: %s", image, err, strings.TrimSpace(string(out))))
	}
	restore, err := c.k.route.useWrapper(c.k.l.dir)
	if err != nil {
		return err
	}
	defer restore()
	nodes, err := c.k.provider().ListNodes(c.k.l.opts.name)
	if err != nil {
		return inChart("image", fmt.Errorf("failed to list the nodes of kind cluster %q: %w", c.k.l.opts.name, err))
	}
	for _, n := range nodes {
		f, err := os.Open(archive)
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return inChart("image", fmt.Errorf("failed to load %s into node %s: %w", image, n.String(), err))
		}
	}
	return nil
}

// install writes the catalog, runs `helm upgrade --install` with st's
// values, and waits for the rollout.
func (c chartHost) install(ctx context.Context, st state) error {
	cl, err := c.k.l.clients()
	if err != nil {
		return err
	}
	if err := c.writeCatalog(ctx, cl.client, st); err != nil {
		return err
	}
	if err := c.writeAccess(ctx, cl.client); err != nil {
		return err
	}
	image, err := c.imageRef()
	if err != nil {
		return err
	}
	values, err := chartValues(image, st.Settings, time.Now())
	if err != nil {
		return err
	}
	if err := c.helm(ctx, values); err != nil {
		return err
	}
	return c.waitRollout(ctx, cl.client)
}

// writeCatalog puts the catalog Karpenter runs with (st's, else the
// release's generic one) in its ConfigMap.
func (c chartHost) writeCatalog(ctx context.Context, cl client.Client, st state) error {
	path := c.k.l.catalogPath(st)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read the catalog %s: %w", path, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: chartCatalog, Namespace: KarpenterNamespace}}
	cm.Data = map[string]string{chartCatalogKey: string(b)}
	err = cl.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		err = cl.Update(ctx, cm)
	}
	if err != nil {
		return inChart("catalog", fmt.Errorf("failed to write ConfigMap %s/%s from %s: %w", KarpenterNamespace, chartCatalog, path, err))
	}
	return nil
}

// CapacityConfigMap is the ConfigMap, in Karpenter's namespace, whose
// rules nodeprint's capacity decorator (tools/karpenter/capacity) applies.
const CapacityConfigMap = "nodeprint-capacity"

// capacityReader is the Role (and RoleBinding) that lets the chart's
// service account read CapacityConfigMap: the chart grants Karpenter no
// ConfigMaps, and the decorator is nodeprint's, not the chart's.
const capacityReader = "nodeprint-capacity-reader"

// writeAccess grants the chart's service account (named after the
// release) get on CapacityConfigMap only.
func (c chartHost) writeAccess(ctx context.Context, cl client.Client) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: capacityReader, Namespace: KarpenterNamespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{CapacityConfigMap}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: capacityReader, Namespace: KarpenterNamespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: capacityReader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: chartRelease, Namespace: KarpenterNamespace}}}
	for _, o := range []client.Object{role, binding} {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return inChart("rbac", fmt.Errorf("failed to create %T %s/%s: %w", o, KarpenterNamespace, o.GetName(), err))
		}
	}
	return nil
}

// chartValues are the chart's values nodeprint sets, each for a reason:
//   - the image built locally, never pulled;
//   - hostNetwork, so that the metrics port is the node's and kind maps it
//     to loopback here (no port-forward process to own);
//   - the catalog from a ConfigMap, as INSTANCE_TYPES_FILE_PATH;
//   - the chart's own settings emptied and its feature gates set to
//     Karpenter's defaults, so that Karpenter runs with its defaults plus
//     the scenario's settings, exactly as the process does;
//   - an annotation that changes on every install, so that a restart
//     always rolls the pod (Karpenter reads its settings once, at start).
func chartValues(image string, settings map[string]string, now time.Time) ([]byte, error) {
	repo, tag, ok := strings.Cut(image, ":")
	if !ok {
		return nil, fmt.Errorf("in-cluster image %q has no tag", image)
	}
	env := []map[string]string{{"name": "INSTANCE_TYPES_FILE_PATH", "value": chartCatalogDir + "/" + chartCatalogKey}}
	for _, kv := range settingsEnv(settings) {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, map[string]string{"name": k, "value": v})
	}
	vals := map[string]any{
		"imagePullPolicy": "Never",
		"hostNetwork":     true,
		"podAnnotations":  map[string]string{chartRestartAnnotation: strconv.FormatInt(now.UnixNano(), 10)},
		"settings": map[string]any{
			"batchMaxDuration": "", "batchIdleDuration": "", "preferencePolicy": "", "minValuesPolicy": "",
			"featureGates": map[string]bool{"spotToSpotConsolidation": false, "nodeRepair": false, "staticCapacity": false, "capacityBuffer": false},
		},
		"controller": map[string]any{
			"image":             map[string]string{"repository": repo, "tag": tag},
			"env":               env,
			"metrics":           map[string]int{"port": chartMetricsPort},
			"extraVolumeMounts": []map[string]any{{"name": "nodeprint-catalog", "mountPath": chartCatalogDir, "readOnly": true}},
		},
		"extraVolumes": []map[string]any{{"name": "nodeprint-catalog", "configMap": map[string]string{"name": chartCatalog}}},
	}
	return yaml.Marshal(vals)
}

// helm runs `helm upgrade --install` of the release's chart with values,
// helm's own files kept in the cluster's directory.
func (c chartHost) helm(ctx context.Context, values []byte) error {
	l := c.k.l
	vf := filepath.Join(l.dir, "karpenter-values.yaml")
	if err := os.WriteFile(vf, values, 0o600); err != nil {
		return err
	}
	log := filepath.Join(l.dir, "logs", "helm.log")
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	chart := filepath.Join(l.tc.Paths().KarpenterPod, "chart")
	cmd := exec.CommandContext(ctx, l.tc.Paths().Helm, "upgrade", "--install", chartRelease, chart,
		"--namespace", KarpenterNamespace, "--skip-crds", "--kubeconfig", l.Kubeconfig(), "--values", vf)
	helmHome := filepath.Join(l.dir, "helm")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+helmHome+"/cache", "HELM_CONFIG_HOME="+helmHome+"/config", "HELM_DATA_HOME="+helmHome+"/data")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.WaitDelay = 5 * time.Second
	fmt.Fprintf(f, "\n$ %s\n", strings.Join(cmd.Args, " "))
	if err := cmd.Run(); err != nil {
		return &PhaseError{Phase: "karpenter", Err: inChart("helm upgrade --install", err), LogHint: log}
	}
	return nil
}

// waitRollout waits until the Deployment runs its newest template on one
// ready pod, saying what it waits for; on timeout it says what the pod
// showed and keeps the pod's log.
func (c chartHost) waitRollout(ctx context.Context, cl client.Client) error {
	l := c.k.l
	ctx, cancel := context.WithTimeout(ctx, chartRolloutTimeout)
	defer cancel()
	last, seen := time.Now(), ""
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		if err := cl.Get(ctx, client.ObjectKey{Namespace: KarpenterNamespace, Name: chartRelease}, &d); err != nil {
			seen = err.Error()
			return false, nil
		}
		seen = rolloutState(&d)
		if time.Since(last) > 5*time.Second {
			l.opts.progress(Event{Phase: "karpenter", Message: "waiting for Deployment karpenter/karpenter: " + seen})
			last = time.Now()
		}
		return seen == "", nil
	})
	if err == nil {
		return nil
	}
	detail := seen
	if p, perr := c.pod(context.WithoutCancel(ctx), cl); perr == nil {
		detail += "; " + podProblem(p)
		c.keepPodLog(p)
	}
	return &PhaseError{Phase: "karpenter", Err: inChart("rollout", fmt.Errorf("Karpenter's Deployment did not become ready in %s: %s", chartRolloutTimeout, detail)), LogHint: l.KarpenterLog()}
}

// rolloutState is "" when the Deployment's newest template runs on all its
// ready replicas, else what it waits for.
func rolloutState(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return "the controller has not seen the new template yet"
	case s.UpdatedReplicas < want:
		return fmt.Sprintf("%d of %d pods updated", s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		return fmt.Sprintf("%d old pod(s) terminating", s.Replicas-s.UpdatedReplicas)
	case s.AvailableReplicas < want:
		return fmt.Sprintf("%d of %d pods available", s.AvailableReplicas, want)
	}
	return ""
}

// podProblem says why a pod is not ready, from its containers' states.
func podProblem(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			return fmt.Sprintf("pod %s: container %s waiting: %s %s", p.Name, s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.LastTerminationState.Terminated != nil:
			t := s.LastTerminationState.Terminated
			return fmt.Sprintf("pod %s: container %s last exited %d (%s)", p.Name, s.Name, t.ExitCode, t.Reason)
		}
	}
	return fmt.Sprintf("pod %s: phase %s", p.Name, p.Status.Phase)
}

// keepPodLog copies the Karpenter pod's log to the cluster's karpenter.log
// (kubectl logs, bounded).
func (c chartHost) keepPodLog(p *corev1.Pod) {
	l := c.k.l
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f, err := os.Create(l.KarpenterLog())
	if err != nil {
		return
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, l.tc.Paths().Kubectl, "--kubeconfig", l.Kubeconfig(), "logs", "-n", p.Namespace, p.Name, "--all-containers")
	cmd.Stdout, cmd.Stderr = f, io.Discard
	_ = cmd.Run()
}

// KindInCluster is the kind provider with Karpenter running in the
// cluster from its chart (WithKarpenterInCluster). It has the kind
// provider's capabilities except those that need Karpenter to be a process
// of this machine: its resident set (KarpenterProcess), its API traffic
// through a local proxy (KarpenterRerouter: the apiserver-degraded fault)
// and another binary between runs (KarpenterBuildSwitcher: paired
// verification against another build).
type KindInCluster struct{ k *KindCluster }

func (c *KindInCluster) Up(ctx context.Context) error               { return c.k.Up(ctx) }
func (c *KindInCluster) Down(ctx context.Context) error             { return c.k.Down(ctx) }
func (c *KindInCluster) Kubeconfig() string                         { return c.k.Kubeconfig() }
func (c *KindInCluster) Status(ctx context.Context) (Status, error) { return c.k.Status(ctx) }
func (c *KindInCluster) KarpenterBinary() string                    { return c.k.KarpenterBinary() }
func (c *KindInCluster) KarpenterMetrics() string                   { return c.k.KarpenterMetrics() }
func (c *KindInCluster) Catalog() string                            { return c.k.Catalog() }

// NodeRoute says how the nodes started, and that Karpenter runs in the
// cluster (the report's header shows it).
func (c *KindInCluster) NodeRoute() (string, error) {
	r, err := c.k.NodeRoute()
	if err != nil {
		return "", err
	}
	return r + "; Karpenter in the cluster from its chart", nil
}

func (c *KindInCluster) Planned(component string, pid int) bool { return c.k.Planned(component, pid) }

// UseKarpenter upgrades the chart's release to the catalog and settings
// (the pod restarts with them) when they differ from what it runs with.
func (c *KindInCluster) UseKarpenter(ctx context.Context, catalog string, settings map[string]string) error {
	return c.k.UseKarpenter(ctx, catalog, settings)
}

// RestartComponent restarts karpenter (its pod rolls) or the KWOK
// controller; kind runs the rest.
func (c *KindInCluster) RestartComponent(ctx context.Context, name string) error {
	return c.k.RestartComponent(ctx, name)
}

func (c *KindInCluster) NodeContainersPeakMemory(ctx context.Context) (int64, error) {
	return c.k.NodeContainersPeakMemory(ctx)
}

// RunsKarpenterInCluster says whether the running kind cluster name (of
// toolchain tc) was started with Karpenter in the cluster, from its state,
// touching nothing; false when it has no state.
func RunsKarpenterInCluster(tc *toolchain.Toolchain, name string) bool {
	k, err := NewKind(WithToolchain(tc), WithName(name))
	return err == nil && k.InCluster()
}
