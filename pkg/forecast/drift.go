// Package forecast says what Karpenter would do on a live cluster if a
// change were applied, without applying it: which running nodes a NodePool
// edit drifts, the pods their drains would evict, what holds them back,
// and how the NodePool's budgets pace the replacements
// (docs/scale-in.md, "Drift forecast"). It reads the cluster and asks the
// API server for a dry run; it changes nothing.
package forecast

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/scheduling"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

// Drift is the forecast for one NodePool.
type Drift struct {
	NodePool string `json:"nodePool"`
	// Exists says whether the NodePool is on the cluster; a new one has no
	// nodes to drift.
	Exists bool `json:"exists"`
	// Defaulted says how the file's NodePool was completed with the API
	// server's defaults (a dry run), or why it was taken as written.
	Defaulted string `json:"defaulted"`
	Nodes     []Node `json:"nodes,omitempty"`
	// Drifting counts the nodes the edit would drift (Already not
	// included); Evicted the pods their drains would evict; Held the
	// drifting nodes a pod holds back.
	Drifting int    `json:"drifting"`
	Already  int    `json:"already"`
	Unknown  int    `json:"unknown"`
	Evicted  int    `json:"evicted"`
	Held     int    `json:"held"`
	Budget   Budget `json:"budget"`
	// NotForecast is what Karpenter may also drift that this cannot see.
	NotForecast []string `json:"notForecast"`
}

// Node is one of the NodePool's NodeClaims.
type Node struct {
	NodeClaim    string `json:"nodeClaim"`
	Node         string `json:"node,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	// Drift is Karpenter's reason the edit would give it (NodePoolDrifted:
	// the template's hashed fields; RequirementsDrifted: its labels no
	// longer meet the requirements); empty when it would not drift.
	Drift string `json:"drift,omitempty"`
	// Already: Karpenter has marked it drifted before the edit.
	Already bool `json:"already,omitempty"`
	// Unknown says why its static drift cannot be forecast.
	Unknown string `json:"unknown,omitempty"`
	// Pods is how many pods its drain would evict; HeldBy the pods that
	// would hold the node back (karpenter.sh/do-not-disrupt) or its drain
	// (a PodDisruptionBudget that allows no disruption now).
	Pods   int      `json:"pods"`
	HeldBy []string `json:"heldBy,omitempty"`
}

// Budget is what the edited NodePool's budgets allow for drift.
type Budget struct {
	// Nodes is how many NodeClaims of the pool Karpenter counts (launched,
	// initialised, not being removed).
	Nodes int `json:"nodes"`
	// AllowedNow is how many may be disrupted for drift at once now, after
	// those being removed already; -1: no budget bounds it.
	AllowedNow int `json:"allowedNow"`
	// Waves is how many rounds of replacements the drifting nodes that
	// nothing holds need at AllowedNow (0 when nothing may go now).
	Waves   int      `json:"waves"`
	Windows []Window `json:"windows,omitempty"`
}

// Window is a budget with a schedule that bounds drift.
type Window struct {
	Nodes    string        `json:"nodes"`
	Schedule string        `json:"schedule"`
	Duration time.Duration `json:"duration"`
	InForce  bool          `json:"inForce"`
	// NextOpen is when it next opens (UTC).
	NextOpen time.Time `json:"nextOpen"`
}

type options struct {
	clock  clock.Clock
	dryRun bool
}

// Option changes a forecast.
type Option func(*options)

// WithClock sets the clock budgets and windows are read at (default: the
// real one).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithoutDryRun takes the NodePool as written instead of asking the API
// server to complete it with its defaults (default: a dry run). A field
// the file leaves to its default can then read as a change.
func WithoutDryRun() Option { return func(o *options) { o.dryRun = false } }

// InvalidError is the API server refusing the NodePool: it would not apply.
type InvalidError struct {
	NodePool string
	Err      error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("NodePool %s would not apply: %v", e.NodePool, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// NotForecast is what a drift forecast cannot see.
var NotForecast = []string{
	"drift the cloud provider reports (the node class's image, subnets, security groups: CloudProvider.IsDrifted)",
	"instance types or offerings no longer available (Karpenter checks them an hour after launch)",
	"a node class edited together with the NodePool",
}

// DriftOf forecasts which of np's running nodes Karpenter would find
// drifted if np were applied as it is, what their drains would evict, and
// how its budgets would pace them. It changes nothing on the cluster.
func DriftOf(ctx context.Context, c client.Client, np *karpv1.NodePool, opts ...Option) (*Drift, error) {
	o := options{clock: clock.RealClock{}, dryRun: true}
	for _, opt := range opts {
		opt(&o)
	}
	applied, exists, how, err := asApplied(ctx, c, np, o.dryRun)
	if err != nil {
		return nil, err
	}
	f := &Drift{NodePool: np.Name, Exists: exists, Defaulted: how, NotForecast: NotForecast}
	if !exists {
		f.Budget.AllowedNow = -1
		return f, nil
	}
	var claims karpv1.NodeClaimList
	if err := c.List(ctx, &claims, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}); err != nil {
		return nil, fmt.Errorf("listing NodePool %s's NodeClaims: %w", np.Name, err)
	}
	pods, err := podsByNode(ctx, c)
	if err != nil {
		return nil, err
	}
	removing := 0
	for i := range claims.Items {
		nc := &claims.Items[i]
		if !nc.StatusConditions().Get(karpv1.ConditionTypeLaunched).IsTrue() {
			continue // Karpenter checks launched NodeClaims only
		}
		if !nc.DeletionTimestamp.IsZero() {
			removing++
			continue
		}
		if nc.StatusConditions().Get(karpv1.ConditionTypeInitialized).IsTrue() {
			f.Budget.Nodes++
		}
		f.add(nodeOf(applied, nc, pods[nc.Status.NodeName]))
	}
	slices.SortFunc(f.Nodes, func(a, b Node) int { return strings.Compare(a.NodeClaim, b.NodeClaim) })
	f.Budget = budgetOf(applied, o.clock.Now(), f.Budget.Nodes, removing, f.Drifting+f.Already-f.Held)
	return f, nil
}

func (f *Drift) add(n Node) {
	f.Nodes = append(f.Nodes, n)
	switch {
	case n.Already:
		f.Already++
	case n.Drift != "":
		f.Drifting++
	case n.Unknown != "":
		f.Unknown++
		return
	default:
		return
	}
	f.Evicted += n.Pods
	if len(n.HeldBy) > 0 {
		f.Held++
	}
}

// asApplied is np as the API server would store it: a dry-run update of
// the live one (or create, when there is none) fills the CRD's defaults,
// which Karpenter's hash covers. A server that refuses the dry run
// (forbidden) leaves the file's NodePool as written, and how says so.
func asApplied(ctx context.Context, c client.Client, np *karpv1.NodePool, dryRun bool) (*karpv1.NodePool, bool, string, error) {
	live := &karpv1.NodePool{}
	err := c.Get(ctx, client.ObjectKey{Name: np.Name}, live)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, false, "", fmt.Errorf("reading NodePool %s: %w", np.Name, err)
	}
	if !dryRun {
		return np, exists, "as written (no dry run asked): a field the file leaves to its default may read as a change", nil
	}
	applied := np.DeepCopy()
	applied.SetGroupVersionKind(schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"})
	if exists {
		applied.ResourceVersion = live.ResourceVersion
		err = c.Update(ctx, applied, client.DryRunAll)
	} else {
		applied.ResourceVersion = ""
		err = c.Create(ctx, applied, client.DryRunAll)
	}
	switch {
	case err == nil:
		return applied, exists, "the API server's dry run (its defaults filled in)", nil
	case apierrors.IsForbidden(err):
		return np, exists, "as written: the dry run was forbidden (" + err.Error() + "); a field the file leaves to its default may read as a change", nil
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return nil, exists, "", &InvalidError{NodePool: np.Name, Err: err}
	}
	return nil, exists, "", fmt.Errorf("dry run of NodePool %s: %w", np.Name, err)
}

// nodeOf is one NodeClaim's forecast, with Karpenter's own checks
// (pkg/controllers/nodeclaim/disruption/drift.go): the template's hash
// against the one the NodeClaim was launched with, then its labels
// against the requirements.
func nodeOf(np *karpv1.NodePool, nc *karpv1.NodeClaim, pods []pod) Node {
	n := Node{NodeClaim: nc.Name, Node: nc.Status.NodeName, InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
		Already: nc.StatusConditions().Get(karpv1.ConditionTypeDrifted).IsTrue()}
	hash, version := nc.Annotations[karpv1.NodePoolHashAnnotationKey], nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	switch {
	case hash == "" || version == "":
		n.Unknown = "it has no NodePool hash annotations (Karpenter has not stamped it)"
	case version != karpv1.NodePoolHashVersion:
		n.Unknown = fmt.Sprintf("its NodePool hash is version %s, this forecast computes %s (another Karpenter release)", version, karpv1.NodePoolHashVersion)
	case hash != np.Hash():
		n.Drift = "NodePoolDrifted"
	}
	if n.Drift == "" && scheduling.NewLabelRequirements(nc.Labels).Compatible(scheduling.NewNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)) != nil {
		n.Drift, n.Unknown = "RequirementsDrifted", ""
	}
	n.Pods = len(pods)
	for _, p := range pods {
		if p.heldBy != "" {
			n.HeldBy = append(n.HeldBy, p.name+" ("+p.heldBy+")")
		}
	}
	slices.Sort(n.HeldBy)
	return n
}

// pod is a pod a drain would evict, and what holds it (empty: nothing).
type pod struct{ name, heldBy string }

// podsByNode lists the pods a drain would evict, by node, each marked
// with what holds it: Karpenter's drain leaves DaemonSet and static pods
// and finished ones alone.
func podsByNode(ctx context.Context, c client.Client) (map[string][]pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.List(ctx, &pdbs); err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	out := map[string][]pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || !evictable(p) {
			continue
		}
		x := pod{name: p.Namespace + "/" + p.Name}
		switch pdb := blockingPDB(p, pdbs.Items); {
		case p.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true":
			// Karpenter does not choose the node while the pod is on it.
			x.heldBy = karpv1.DoNotDisruptAnnotationKey
		case pdb != "":
			// The drain waits on it until the budget allows an eviction.
			x.heldBy = "PodDisruptionBudget " + pdb + " allows no disruption now"
		}
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], x)
	}
	return out, nil
}

func evictable(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !p.DeletionTimestamp.IsZero() {
		return false
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	return !slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" })
}

// blockingPDB is the namespace/name of a PodDisruptionBudget selecting p
// that allows no disruption now; "" when none does.
func blockingPDB(p *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) string {
	for _, b := range pdbs {
		if b.Namespace != p.Namespace || b.Status.DisruptionsAllowed > 0 {
			continue
		}
		// An empty selector covers every pod of the namespace (policy/v1).
		if selects, err := kube.PDBSelects(&b, p.Labels); err != nil || !selects {
			continue
		}
		return b.Namespace + "/" + b.Name
	}
	return ""
}

// budgetOf is what np's budgets allow for drift at now, over nodes the
// pool counts with removing being removed already, and how many waves
// movable nodes need.
func budgetOf(np *karpv1.NodePool, now time.Time, nodes, removing, movable int) Budget {
	b := Budget{Nodes: nodes, AllowedNow: -1}
	at := clocktesting.NewFakeClock(now)
	allowed, err := np.GetAllowedDisruptionsByReason(at, nodes, karpv1.DisruptionReasonDrifted)
	if err == nil && allowed != math.MaxInt32 {
		b.AllowedNow = max(allowed-removing, 0)
	}
	switch {
	case movable <= 0:
	case b.AllowedNow < 0:
		b.Waves = 1
	case b.AllowedNow > 0:
		b.Waves = (movable + b.AllowedNow - 1) / b.AllowedNow
	}
	for _, x := range np.Spec.Disruption.Budgets {
		if x.Schedule == nil || x.Duration == nil || (x.Reasons != nil && !slices.Contains(x.Reasons, karpv1.DisruptionReasonDrifted)) {
			continue
		}
		w := Window{Nodes: x.Nodes, Schedule: *x.Schedule, Duration: x.Duration.Duration}
		w.InForce, _ = x.IsActive(at)
		if s, err := cron.ParseStandard("TZ=UTC " + *x.Schedule); err == nil {
			w.NextOpen = s.Next(now.UTC())
		}
		b.Windows = append(b.Windows, w)
	}
	return b
}
