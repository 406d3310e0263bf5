package attribute

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/karpenter/pkg/utils/resources"

	"github.com/nodeprint/nodeprint/pkg/fingerprint"
	"github.com/nodeprint/nodeprint/pkg/inputs"
	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// RegistrationTimeout is how long after launch a NodeClaim may stay
// unregistered before nodeclaims.launchedNotRegistered counts it.
const RegistrationTimeout = 30 * time.Second

// PendingGrace is how long a pod may be pending before pods.pendingLong
// counts it: twice Karpenter's longest batching window (BATCH_MAX_DURATION,
// 10 s). A pod an HPA created seconds before the run ended is not yet a
// pod Karpenter failed to provision for.
const PendingGrace = 20 * time.Second

// SignalDef is a named measurement the rules read.
type SignalDef struct {
	ID string
	// Help says what the value is, for `nodeprint rules` and the runbooks.
	Help    string
	compute func(in *Input) (v float64, ok bool, detail string)
	// readError, where set, says why the signal could not be read when a
	// read failed (a 403, a timeout), as against a signal that does not
	// apply (no baseline, no pending pod).
	readError func(in *Input) string
	// karpenterWide marks a signal read from Karpenter's own counters
	// (its metrics endpoint: API requests, errors, latency), which sum the
	// work of every run on the cluster. A run that shared Karpenter with
	// concurrent runs over its window cannot read them as its own, so such
	// a signal is unavailable for it (Facts.SharedKarpenter): no rule fires
	// on another run's burst. A new signal of that kind sets this and
	// nothing else.
	karpenterWide bool
}

// KarpenterWide reports whether the signal is read from Karpenter's
// process-wide counters rather than from the run's own objects.
func (d SignalDef) KarpenterWide() bool { return d.karpenterWide }

// evaluate computes one signal for a run; a Karpenter-wide signal of a
// run that shared Karpenter is unavailable, whatever its counters say.
func (d *SignalDef) evaluate(in *Input) Value {
	if d.karpenterWide && len(in.Facts.SharedKarpenter) > 0 {
		return Value{ID: d.ID, Detail: SharedDetail(in.Facts.SharedKarpenter)}
	}
	x, ok, detail := d.compute(in)
	val := Value{ID: d.ID, Value: x, Available: ok, Detail: detail}
	if !ok && d.readError != nil {
		val.Error = d.readError(in)
	}
	return val
}

// SharedDetail says why a Karpenter-wide signal is unavailable for a run
// that shared Karpenter with the runs named.
func SharedDetail(runs []string) string {
	return fmt.Sprintf("shared with %d concurrent run(s): %s; Karpenter's counters hold their work too", len(runs), names(append([]string(nil), runs...)))
}

// ReadsKarpenterWide reports whether one of the rule's conditions reads
// a Karpenter-wide signal: a run expected to reach it must have Karpenter
// to itself (the scheduler runs it alone).
func (r *Rule) ReadsKarpenterWide() bool {
	for _, c := range r.When {
		if d, ok := signalByID[c.Signal]; ok && d.karpenterWide {
			return true
		}
	}
	return false
}

// Value is one signal's value in a verdict.
type Value struct {
	ID string `json:"id"`
	// Value is meaningful when Available.
	Value     float64 `json:"value"`
	Available bool    `json:"available"`
	Detail    string  `json:"detail,omitempty"`
	// Error is why an unavailable signal could not be read, when a read
	// failed; a rule blocked by it is named in an inconclusive verdict.
	Error string `json:"error,omitempty"`
}

func (v Value) String() string {
	if !v.Available {
		return v.ID + " = unavailable" + suffix(v.Detail)
	}
	return fmt.Sprintf("%s = %g%s", v.ID, v.Value, suffix(v.Detail))
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Signals lists every signal.
func Signals() []SignalDef { return signalDefs }

var signalByID = map[string]*SignalDef{}

func init() {
	for i := range signalDefs {
		signalByID[signalDefs[i].ID] = &signalDefs[i]
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func live[T any](m map[string]*T, deleted func(*T) time.Time) []*T {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*T
	for _, k := range keys {
		if deleted(m[k]).IsZero() {
			out = append(out, m[k])
		}
	}
	return out
}

func livePods(ob *observe.Observation) []*observe.PodRecord {
	return live(ob.Pods, func(p *observe.PodRecord) time.Time { return p.Deleted })
}

func liveNodes(ob *observe.Observation) []*observe.NodeRecord {
	return live(ob.Nodes, func(n *observe.NodeRecord) time.Time { return n.Deleted })
}

func liveClaims(ob *observe.Observation) []*observe.NodeClaimRecord {
	return live(ob.NodeClaims, func(c *observe.NodeClaimRecord) time.Time { return c.Deleted })
}

// workloadRequests is each workload's pod requests, as Karpenter counts
// them (resources.RequestsForPods), by workload name.
func workloadRequests(in *Input) map[string]corev1.ResourceList {
	out := make(map[string]corev1.ResourceList, len(in.Facts.Workloads))
	for w, tpl := range in.Facts.Workloads {
		out[w] = resources.RequestsForPods(&corev1.Pod{Spec: tpl.Spec})
	}
	return out
}

// names lists up to three names for evidence.
func names(xs []string) string {
	sort.Strings(xs)
	if len(xs) > 3 {
		return strings.Join(xs[:3], ", ") + fmt.Sprintf(" and %d more", len(xs)-3)
	}
	return strings.Join(xs, ", ")
}

func countPods(in *Input, pred func(p *observe.PodRecord) bool) (float64, bool, string) {
	var hit []string
	for _, p := range livePods(in.Observation) {
		if pred(p) {
			hit = append(hit, p.Name)
		}
	}
	return float64(len(hit)), true, names(hit)
}

// pendingFit says whether every workload with pending pods fits (the
// catalog, or the NodePool); unavailable when no pod is pending.
func pendingFit(in *Input, nodePool bool) (float64, bool, string) {
	pending := map[string]bool{}
	for _, p := range livePods(in.Observation) {
		if p.Scheduled.IsZero() {
			pending[p.Workload] = true
		}
	}
	if len(pending) == 0 {
		return 0, false, "no pod is pending"
	}
	all := true
	var parts []string
	for _, w := range sortedKeys(pending) {
		r, ok := in.Facts.Fit[w]
		if !ok {
			return 0, false, "no fit data for workload " + w
		}
		n := r.Catalog
		what := "catalog"
		if nodePool {
			n, what = r.NodePool, "NodePool"
		}
		if n == 0 {
			all = false
		}
		detail := fmt.Sprintf("%s: %d %s type(s) hold a pod", w, n, what)
		switch {
		case !nodePool && n == 0 && r.Sized > 0:
			detail += fmt.Sprintf(": %d are large enough, but none offers what the pods select (%s)", r.Sized, r.Unoffered)
		case !nodePool && n == 0 && r.Largest != "":
			detail += ", largest is " + r.Largest
		}
		if nodePool && n == 0 && r.Catalog > 0 {
			detail += fmt.Sprintf(", %d in the catalog (e.g. %s)", r.Catalog, r.Example)
			switch {
			case r.Blocked != "":
				detail += ": " + r.Blocked
			case in.Facts.Unadmitted[w] != "":
				detail += ": no NodePool admits the pods (" + in.Facts.Unadmitted[w] + ")"
			}
		}
		parts = append(parts, detail)
	}
	return b2f(all), true, strings.Join(parts, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var signalDefs = []SignalDef{
	{ID: "harness.healthy", Help: "1 when the harness's own environment (control plane, Karpenter process) stayed healthy",
		compute: func(in *Input) (float64, bool, string) { return b2f(in.Facts.Health == ""), true, in.Facts.Health }},
	{ID: "api.karpenterErrors", Help: "Karpenter's API requests that failed (connection errors, 5xx, 429) during the run, from its client_go_request_total metric (code label); unavailable when the run shared Karpenter with concurrent runs",
		karpenterWide: true,
		compute: func(in *Input) (float64, bool, string) {
			if in.Facts.KarpenterErrors == nil {
				return 0, false, "Karpenter's metrics were not read"
			}
			return *in.Facts.KarpenterErrors, true, ""
		}},
	{ID: "api.karpenterLatencyMs", Help: "mean latency of Karpenter's API requests during the run, in milliseconds (client_go_request_duration_seconds: its sum over its count); unavailable when the run shared Karpenter with concurrent runs",
		karpenterWide: true,
		compute: func(in *Input) (float64, bool, string) {
			if in.Facts.KarpenterLatencyMs == nil {
				return 0, false, "Karpenter's metrics were not read, or it made no request"
			}
			return *in.Facts.KarpenterLatencyMs, true, ""
		}},
	{ID: "api.karpenterLatencyGrowth", Help: "the mean latency of Karpenter's API requests during the run over the baseline's median (client_go_request_duration_seconds): what is slow for this API server, whose healthy latency depends on its machine and its load; unavailable when the run shared Karpenter with concurrent runs",
		karpenterWide: true,
		compute:       latencyGrowth},
	{ID: "cloud.insufficientCapacityEvents", Help: "InsufficientCapacityError events on the run's NodeClaims (counting repeats)",
		compute: func(in *Input) (float64, bool, string) {
			n, msg := 0.0, ""
			for _, e := range in.Observation.Events {
				if e.Reason == "InsufficientCapacityError" {
					n += float64(max(e.Count, 1))
					msg = e.Message
				}
			}
			if len(msg) > 160 {
				msg = msg[:160] + "…"
			}
			return n, true, msg
		}},
	{ID: "policy.nodeClassMissing", Help: "1 when the node class the NodePool names does not exist",
		compute: func(in *Input) (float64, bool, string) {
			if in.Facts.NodePool == nil {
				return 0, false, "NodePool not read"
			}
			if in.Facts.NodeClassUnreadable != "" {
				return 0, false, "node class not readable: " + in.Facts.NodeClassUnreadable
			}
			ref := in.Facts.NodePool.Spec.Template.Spec.NodeClassRef
			if ref == nil {
				return 1, true, "the NodePool names no nodeClassRef"
			}
			return b2f(!in.Facts.NodeClassExists), true, fmt.Sprintf("nodeClassRef %s/%s", ref.Kind, ref.Name)
		},
		readError: func(in *Input) string { return in.Facts.NodeClassUnreadable }},
	{ID: "nodeclaims.launchedNotRegistered", Help: fmt.Sprintf("NodeClaims launched at least %s before the end of the run and still not registered", RegistrationTimeout),
		compute: func(in *Input) (float64, bool, string) {
			var hit []string
			for _, c := range liveClaims(in.Observation) {
				if !c.Launched.IsZero() && c.Registered.IsZero() && in.Observation.End.Sub(c.Launched) >= RegistrationTimeout {
					hit = append(hit, c.Name)
				}
			}
			return float64(len(hit)), true, names(hit)
		}},
	{ID: "nodes.notReady", Help: "the run's nodes that were Ready and are NotReady at the end",
		compute: func(in *Input) (float64, bool, string) {
			var hit []string
			for _, n := range liveNodes(in.Observation) {
				if n.NotReady {
					hit = append(hit, n.Name)
				}
			}
			return float64(len(hit)), true, names(hit)
		}},
	{ID: "nodes.ready", Help: "the run's nodes that are Ready at the end",
		compute: func(in *Input) (float64, bool, string) {
			n := 0
			for _, x := range liveNodes(in.Observation) {
				if !x.Ready.IsZero() && !x.NotReady {
					n++
				}
			}
			return float64(n), true, fmt.Sprintf("of %d", len(liveNodes(in.Observation)))
		}},
	{ID: "nodeclaims.readySlowdownSeconds", Help: "median NodeClaim created→initialised time minus the largest median a baseline run had, in seconds",
		compute: func(in *Input) (float64, bool, string) {
			t := in.Observed.Timing.NodeClaimReady
			if t.Count == 0 || in.Baseline == nil || len(in.Baseline.Timing.NodeClaimReadyP50.Values) == 0 {
				return 0, false, "no initialised NodeClaim or no baseline timing"
			}
			lim := in.Baseline.Timing.NodeClaimReadyP50.Largest()
			return t.P50 - lim, true, fmt.Sprintf("p50 %gs against at most %gs in a baseline run", t.P50, lim)
		}},
	{ID: "nodeclaims.bootSlowdownSeconds", Help: "median NodeClaim launched→initialised time (the boot, after Karpenter's launch returned) minus the largest created→initialised median a baseline run had, in seconds",
		compute: func(in *Input) (float64, bool, string) {
			if in.Baseline == nil || len(in.Baseline.Timing.NodeClaimReadyP50.Values) == 0 {
				return 0, false, "no baseline timing"
			}
			var boots []float64
			for _, c := range in.Observation.NodeClaims {
				if !c.Launched.IsZero() && !c.Initialized.IsZero() {
					boots = append(boots, c.Initialized.Sub(c.Launched).Seconds())
				}
			}
			if len(boots) == 0 {
				return 0, false, "no NodeClaim both launched and initialised"
			}
			slices.Sort(boots)
			p50 := boots[(len(boots)-1)/2]
			lim := in.Baseline.Timing.NodeClaimReadyP50.Largest()
			return p50 - lim, true, fmt.Sprintf("boot p50 %gs of %d NodeClaim(s) against at most %gs created→initialised in a baseline run", p50, len(boots), lim)
		}},
	{ID: "nodeclaims.inFlight", Help: "the run's NodeClaims that exist and are not initialised yet",
		compute: func(in *Input) (float64, bool, string) {
			n := 0
			for _, c := range liveClaims(in.Observation) {
				if c.Initialized.IsZero() {
					n++
				}
			}
			return float64(n), true, ""
		}},
	{ID: "nodeclaims.replaced", Help: "NodeClaims that registered a node and were deleted during the run (disruption), beyond the most a baseline run replaced",
		compute: func(in *Input) (float64, bool, string) {
			if in.Baseline == nil || in.Baseline.Replaced == nil {
				return 0, false, "no baseline count of replaced NodeClaims (none, or recorded before they were counted: re-record it)"
			}
			var hit []string
			for _, c := range in.Observation.NodeClaims {
				if !c.Deleted.IsZero() && !c.Registered.IsZero() {
					hit = append(hit, c.Name)
				}
			}
			lim := in.Baseline.Replaced.Max
			detail := fmt.Sprintf("%d replaced against at most %g in a baseline run", len(hit), lim)
			if len(hit) > 0 {
				detail += ": " + names(hit)
			}
			return float64(len(hit)) - lim, true, detail
		}},
	{ID: "disruption.overBudget", Help: "scale-in decisions after which more of the NodePool's NodeClaims were being removed at once than its disruption budget for their reason allowed then (Karpenter's own arithmetic)",
		compute: func(in *Input) (float64, bool, string) {
			d := scaleIn(in)
			if d == nil {
				return 0, false, "no scale-in ran"
			}
			var over []string
			for _, x := range d.Decisions {
				if x.Allowed >= 0 && x.Disrupting > x.Allowed {
					over = append(over, fmt.Sprintf("at %.0f s %s %s of %d node(s): %d disrupting, budget %d", x.At, x.Kind, x.Reason, len(x.Nodes), x.Disrupting, x.Allowed))
				}
			}
			return float64(len(over)), true, strings.Join(over, "; ")
		}},
	{ID: "disruption.heldByApplication", Help: "the run's NodeClaims Karpenter said during the scale-in it could not disrupt because of a pod on them: one annotated karpenter.sh/do-not-disrupt, or a PodDisruptionBudget that allows no eviction (its DisruptionBlocked events; a node's own annotation is not counted)",
		compute: func(in *Input) (float64, bool, string) {
			d := scaleIn(in)
			if d == nil {
				return 0, false, "no scale-in ran"
			}
			var hit []string
			for _, h := range d.Held {
				hit = append(hit, fmt.Sprintf("%s held by a %s: %q", h.NodeClaim, h.By, h.Message))
			}
			return float64(len(hit)), true, strings.Join(hit, "; ")
		}},
	{ID: "disruption.keptByKarpenter", Help: "NodeClaims still there at the scale-in's end that Karpenter's consolidation looked at and kept, with its own reason for each (its Unconsolidatable events: no cheaper replacement, more than one replacement needed, a pod that would not schedule elsewhere, the NodePool's policy); the latest reason it published, which may date from before the scale-in. Words for the engineer, not a cause: no rule requires it",
		compute: func(in *Input) (float64, bool, string) {
			d := scaleIn(in)
			if d == nil {
				return 0, false, "no scale-in ran"
			}
			return float64(len(d.Kept)), true, keptDetail(d.Kept)
		}},
	{ID: "disruption.fewerRemoved", Help: "how many fewer NodeClaims the scale-in removed than the fewest any baseline run's scale-in removed",
		compute: func(in *Input) (float64, bool, string) {
			d, runs, why := scaleInAndBaseline(in)
			if d == nil {
				return 0, false, why
			}
			least := math.MaxInt
			for _, r := range runs {
				least = min(least, sumCounts(r.Disrupted))
			}
			got := sumCounts(d.Disrupted)
			return float64(least - got), true, fmt.Sprintf("%d NodeClaim(s) removed against at least %d in every baseline run", got, least)
		}},
	{ID: "disruption.notGone", Help: fmt.Sprintf("NodeClaims the scale-in deleted that were still there %s after their node was drained (no pod of the run left on it): instances that did not terminate, or Nodes another controller holds", fingerprint.NotGoneAfter),
		compute: lingeringSignal(func(fingerprint.Lingering) bool { return true })},
	{ID: "disruption.notGoneHeld", Help: fmt.Sprintf("NodeClaims the scale-in deleted that were still there %s after their node was drained, whose Node, once Karpenter's own finalizer was gone, still carried another: another controller holds the Node object, and the NodeClaim waits for it", fingerprint.NotGoneAfter),
		compute: lingeringSignal(func(l fingerprint.Lingering) bool { return len(l.HeldBy) > 0 })},
	{ID: "disruption.replacedAgain", Help: "NodeClaims Karpenter launched during the scale-in to replace disrupted ones and then disrupted for the same reason (turns of a replacement loop), beyond the most any baseline run's scale-in had",
		compute: func(in *Input) (float64, bool, string) {
			d, runs, why := scaleInAndBaseline(in)
			if d == nil {
				return 0, false, why
			}
			most := 0
			for _, r := range runs {
				most = max(most, r.ReplacedAgain)
			}
			detail := fmt.Sprintf("%d replacement(s) replaced again for the same reason against at most %d in a baseline run", len(d.ReplacedAgain), most)
			if len(d.ReplacedAgain) > 0 {
				detail += ": " + names(d.ReplacedAgain)
			}
			return float64(len(d.ReplacedAgain) - most), true, detail
		}},
	{ID: "pods.pending", Help: "the run's pods not scheduled at the end",
		compute: func(in *Input) (float64, bool, string) {
			return countPods(in, func(p *observe.PodRecord) bool { return p.Scheduled.IsZero() })
		}},
	{ID: "pods.pendingLong", Help: fmt.Sprintf("the run's pods not scheduled at the end and created at least %s before it", PendingGrace),
		compute: func(in *Input) (float64, bool, string) {
			return countPods(in, func(p *observe.PodRecord) bool {
				return p.Scheduled.IsZero() && in.Observation.End.Sub(p.Created) >= PendingGrace
			})
		}},
	{ID: "fit.pendingFitCatalog", Help: "1 when every workload with pending pods fits some instance type of the catalog (Karpenter's instance model, requests against allocatable)",
		compute: func(in *Input) (float64, bool, string) { return pendingFit(in, false) }},
	{ID: "fit.pendingFitNodePool", Help: "1 when every workload with pending pods fits some instance type the NodePool allows",
		compute: func(in *Input) (float64, bool, string) { return pendingFit(in, true) }},
	{ID: "policy.pendingAdmittedByNoNodePool", Help: "1 when a workload with pending pods asks, by node selector or required affinity, for labels no NodePool's nodes would carry",
		compute: func(in *Input) (float64, bool, string) {
			if in.Facts.Unadmitted == nil {
				return 0, false, "NodePools not compared with the pods"
			}
			pending := map[string]bool{}
			for _, p := range livePods(in.Observation) {
				if p.Scheduled.IsZero() {
					pending[p.Workload] = true
				}
			}
			var hit []string
			for _, w := range sortedKeys(pending) {
				if why := in.Facts.Unadmitted[w]; why != "" {
					hit = append(hit, w+" ("+why+")")
				}
			}
			if len(hit) == 0 {
				return 0, true, ""
			}
			return 1, true, strings.Join(hit, "; ")
		}},
	{ID: "policy.limitsReached", Help: "1 when the NodePool has limits and what it uses plus one more pod exceeds them, what a limit of any resource leaves is below every type that holds a pod, or Karpenter reported exceeding them",
		compute: func(in *Input) (float64, bool, string) {
			np := in.Facts.NodePool
			if np == nil {
				return 0, false, "NodePool not read"
			}
			if len(np.Spec.Limits) == 0 {
				return 0, true, "the NodePool has no limits"
			}
			for _, e := range in.Observation.Events {
				if strings.Contains(e.Message, "exceed limits") {
					return 1, true, e.Message
				}
			}
			// Karpenter launches no type whose capacity exceeds what a
			// limit leaves, of any resource: fit names it.
			pending := map[string]bool{}
			for _, p := range livePods(in.Observation) {
				pending[p.Workload] = pending[p.Workload] || p.Scheduled.IsZero()
			}
			for _, w := range sortedKeys(in.Facts.Fit) {
				if l := in.Facts.Fit[w].Limited; l != "" && pending[w] {
					return 1, true, w + ": " + l
				}
			}
			for _, w := range sortedKeys(in.Facts.Workloads) {
				req := resources.RequestsForPods(&corev1.Pod{Spec: in.Facts.Workloads[w].Spec})
				for r, lim := range np.Spec.Limits {
					used := np.Status.Resources[r]
					need := req[r]
					used.Add(need)
					if used.Cmp(lim) > 0 {
						return 1, true, fmt.Sprintf("%s: in use %s + one pod of %s %s > limit %s", r, np.Status.Resources.Name(r, resource.DecimalSI), w, need.String(), lim.String())
					}
				}
			}
			return 0, true, ""
		}},
	{ID: "selection.policyViolations", Help: "the run's nodes whose labels do not satisfy the NodePool's requirements",
		compute: func(in *Input) (float64, bool, string) {
			if in.Facts.NodePool == nil {
				return 0, false, "NodePool not read"
			}
			var hit []string
			for _, n := range liveNodes(in.Observation) {
				if n.Labels == nil {
					continue
				}
				if err := kube.NodeSatisfies(n.Labels, in.Facts.NodePool.Spec.Template.Spec.Requirements); err != nil {
					hit = append(hit, n.Name+": "+err.Error())
				}
			}
			return float64(len(hit)), true, names(hit)
		}},
	{ID: "selection.nodesOverRequested", Help: "the run's nodes where the requests of the pods on them exceed the instance's allocatable resources (0: Karpenter's choices fit the requests)",
		compute: func(in *Input) (float64, bool, string) {
			if in.Facts.Allocatable == nil || in.Facts.Workloads == nil {
				return 0, false, "allocatable resources not known"
			}
			// Summed in place, a workload's requests computed once: a run
			// of 5,000 pods is 5,000 additions, not 5,000 new lists.
			requests := workloadRequests(in)
			sum := map[string]corev1.ResourceList{}
			for _, p := range livePods(in.Observation) {
				req, ok := requests[p.Workload]
				if p.Node == "" || !ok {
					continue
				}
				acc := sum[p.Node]
				if acc == nil {
					acc = corev1.ResourceList{}
					sum[p.Node] = acc
				}
				for name, q := range req {
					cur := acc[name]
					cur.Add(q)
					acc[name] = cur
				}
			}
			var hit []string
			for _, n := range liveNodes(in.Observation) {
				alloc, ok := in.Facts.Allocatable[n.InstanceType]
				if !ok {
					continue
				}
				if !resources.Fits(sum[n.Name], alloc) {
					hit = append(hit, n.Name)
				}
			}
			return float64(len(hit)), true, names(hit)
		}},
	{ID: "pods.oomKilled", Help: "the run's pods whose container's last termination was OOMKilled",
		compute: func(in *Input) (float64, bool, string) {
			return countPods(in, func(p *observe.PodRecord) bool { return p.LastTermination == "OOMKilled" })
		}},
	{ID: "pods.restarts", Help: "container restarts summed over the run's pods",
		compute: func(in *Input) (float64, bool, string) {
			n := 0
			for _, p := range livePods(in.Observation) {
				n += p.Restarts
			}
			return float64(n), true, ""
		}},
	{ID: "pods.crashLooping", Help: "the run's pods waiting in CrashLoopBackOff, or restarting after an exit other than OOMKilled",
		compute: func(in *Input) (float64, bool, string) {
			return countPods(in, func(p *observe.PodRecord) bool {
				return p.Waiting == "CrashLoopBackOff" || p.Restarts > 0 && p.LastTermination != "" && p.LastTermination != "OOMKilled"
			})
		}},
	{ID: "pods.imagePullFailing", Help: "the run's pods whose containers wait in ErrImagePull or ImagePullBackOff",
		compute: func(in *Input) (float64, bool, string) {
			return countPods(in, func(p *observe.PodRecord) bool { return p.Waiting == "ErrImagePull" || p.Waiting == "ImagePullBackOff" })
		}},
	{ID: "pods.cpuUsageOverRequest", Help: "the largest ratio of a pod's CPU usage (metrics.k8s.io) to its CPU request",
		compute: func(in *Input) (float64, bool, string) {
			if len(in.Facts.PodUsage) == 0 {
				return 0, false, "no pod metrics (metrics-server reports a pod about a minute after it starts)"
			}
			best, who := 0.0, ""
			requests := workloadRequests(in)
			for _, p := range livePods(in.Observation) {
				u, ok := in.Facts.PodUsage[p.Name]
				reqs, ok2 := requests[p.Workload]
				if !ok || !ok2 {
					continue
				}
				req := reqs[corev1.ResourceCPU]
				use := u[corev1.ResourceCPU]
				if req.MilliValue() == 0 {
					continue
				}
				if r := float64(use.MilliValue()) / float64(req.MilliValue()); r > best {
					best, who = r, fmt.Sprintf("%s uses %dm of %s requested", p.Name, use.MilliValue(), req.String())
				}
			}
			return float64(int(best*100)) / 100, true, who
		}},
	{ID: "workload.replicaGrowth", Help: "desired replicas now minus replicas applied, summed over workloads (an HPA at work)",
		compute: func(in *Input) (float64, bool, string) {
			n := int32(0)
			var parts []string
			for _, w := range sortedKeys(in.Facts.Replicas) {
				r := in.Facts.Replicas[w]
				n += r.Desired - r.Applied
				if r.Desired != r.Applied {
					parts = append(parts, fmt.Sprintf("%s %d→%d", w, r.Applied, r.Desired))
				}
			}
			return float64(n), true, strings.Join(parts, ", ")
		}},
	{ID: "selection.nodesDelta", Help: "nodes at the end minus the most nodes any baseline run had",
		compute: func(in *Input) (float64, bool, string) {
			if in.Baseline == nil || len(in.Baseline.Selections) == 0 {
				return 0, false, "no baseline selection"
			}
			most := 0
			for _, s := range in.Baseline.Selections {
				most = max(most, s.Nodes)
			}
			return float64(in.Observed.Selection.Nodes - most), true, fmt.Sprintf("%d now, at most %d in the baseline; %s", in.Observed.Selection.Nodes, most, in.Observed.Selection.Key())
		}},
	{ID: "karpenter.nodeClaimSurge", Help: fmt.Sprintf("1 when Karpenter created at least %.0f× the NodeClaims the baseline needed for as many pods (and %d more): its own write volume, which can slow the API server it then waits on", SurgeRatio, SurgeExcess),
		compute: nodeClaimSurge},
	{ID: "karpenter.evictions", Help: "pods deleted from nodes whose NodeClaim Karpenter deleted during the run (drift, expiry, consolidation): its own writes, each an eviction, a create and a bind, which the L1 API rules do not take for the API server's fault",
		compute: evictions},
	{ID: "karpenter.usageGrowth", Help: fmt.Sprintf("the largest growth of Karpenter's own CPU seconds, peak memory or API requests over the baseline's median, among those verification failed on (at least %.1f× and significant); 0 when none failed; unavailable when the run shared Karpenter with concurrent runs", UsageGate),
		karpenterWide: true,
		compute:       usageGrowth},
	{ID: "karpenter.requestSurge", Help: fmt.Sprintf("1 when Karpenter made at least %.0f× the API requests of the baseline's busiest run, with fewer than %.0f%% failing: its own flood, under which the API server it waits on slows; unavailable when the run shared Karpenter with concurrent runs", RequestSurgeRatio, 100*RequestSurgeFailed),
		karpenterWide: true,
		compute:       requestSurge},
	{ID: "diff.regressions", Help: "deviations of the fingerprint from the baseline that verification fails",
		compute: func(in *Input) (float64, bool, string) {
			if in.Diff == nil {
				return 0, false, "no diff"
			}
			var paths []string
			for _, d := range in.Diff.Deviations {
				if d.Severity == "regression" {
					paths = append(paths, d.Path)
				}
			}
			return float64(len(paths)), true, names(paths)
		}},
	{ID: "inputs.policyChanged", Help: "1 when the NodePool or node class as applied differs from the baseline's",
		compute: func(in *Input) (float64, bool, string) { return changed(in, inputs.KindPolicy) }},
	{ID: "inputs.workloadChanged", Help: "1 when a workload's pod template, replicas, HPA or PodDisruptionBudget as applied differs from the baseline's",
		compute: func(in *Input) (float64, bool, string) { return changed(in, inputs.KindWorkload) }},
	{ID: "inputs.karpenterChanged", Help: "1 when Karpenter's version, binary or settings differ from the baseline's",
		compute: func(in *Input) (float64, bool, string) { return changed(in, inputs.KindKarpenter) }},
	{ID: "inputs.catalogChanged", Help: "1 when the instance catalog (what the cloud offers) differs from the baseline's",
		compute: func(in *Input) (float64, bool, string) { return changed(in, inputs.KindCatalog) }},
}

// UsageGate is the growth of Karpenter's own usage verification reports
// (diff.UsageGate): "far more for the same work".
const UsageGate = 1.5

// usageGrowth is the largest ratio among the karpenter.* deviations that
// failed verification.
func usageGrowth(in *Input) (float64, bool, string) {
	if in.Diff == nil || in.Observed.Karpenter == nil || in.Baseline == nil || in.Baseline.Karpenter == nil {
		return 0, false, "Karpenter's usage was not measured in the run or the baseline"
	}
	best, what := 0.0, ""
	for _, d := range in.Diff.Deviations {
		if d.Severity != "regression" || !strings.HasPrefix(d.Path, "karpenter.") {
			continue
		}
		if d.Ratio > best {
			best, what = d.Ratio, fmt.Sprintf("%s: %s against %s", d.Path, d.Observed, d.Baseline)
		}
	}
	if top := in.Observed.Karpenter.Top(3); best > 0 && len(top) > 0 {
		what += "; most requests: " + strings.Join(top, ", ")
	}
	return best, true, what
}

func latencyGrowth(in *Input) (float64, bool, string) {
	if in.Facts.KarpenterLatencyMs == nil {
		return 0, false, "Karpenter's metrics were not read, or it made no request"
	}
	if in.Baseline == nil || in.Baseline.Karpenter == nil || len(in.Baseline.Karpenter.LatencyMs.Values) == 0 {
		return 0, false, "the baseline records no API latency (re-record it)"
	}
	base := in.Baseline.Karpenter.LatencyMs.Median
	if base <= 0 {
		return 0, false, "the baseline's API latency is 0"
	}
	now := *in.Facts.KarpenterLatencyMs
	return math.Round(now/base*100) / 100, true, fmt.Sprintf("%.0f ms against a median of %.0f ms in the baseline's runs", now, base)
}

// RequestSurgeRatio and RequestSurgeFailed say when Karpenter's API
// requests are a flood of its own: several times the baseline's busiest
// run, and mostly answered (a degraded API server makes clients retry,
// but its failures show).
const (
	RequestSurgeRatio  = 3.0
	RequestSurgeFailed = 0.1
)

func requestSurge(in *Input) (float64, bool, string) {
	u := in.Observed.Karpenter
	if u == nil || in.Baseline == nil || in.Baseline.Karpenter == nil || len(in.Baseline.Karpenter.Requests.Values) == 0 {
		// As nodeClaimSurge: no surge is known, and the L1 rules it gates
		// still decide on their own evidence.
		return 0, true, "Karpenter's API requests were not measured in the run or the baseline: no surge known"
	}
	most := in.Baseline.Karpenter.Requests.Largest()
	failed := 0.0
	if u.RequestsTotal > 0 {
		failed = float64(u.Failed) / float64(u.RequestsTotal)
	}
	what := fmt.Sprintf("%d requests (%.0f%% failed) against at most %.0f in a baseline run", u.RequestsTotal, 100*failed, most)
	if float64(u.RequestsTotal) >= RequestSurgeRatio*max(most, 1) && failed < RequestSurgeFailed {
		return 1, true, what
	}
	return 0, true, what
}

// SurgeRatio and SurgeExcess say how far above the baseline's need
// Karpenter's NodeClaims must be to count as a surge of its own.
const (
	SurgeRatio  = 3.0
	SurgeExcess = 5
)

// nodeClaimSurge compares the NodeClaims the run created with what the
// baseline needed for the same number of pods (its least dense run: its
// pods over its most nodes). An API server that is slow or failing while
// Karpenter floods it is the effect of that flood, not an L1 cause; an HPA
// that adds pods raises the need with them. Without a baseline no surge is
// known (0).
func nodeClaimSurge(in *Input) (float64, bool, string) {
	b := in.Baseline
	if b == nil || len(b.Selections) == 0 {
		return 0, true, "no baseline to compare with"
	}
	most := 0
	for _, s := range b.Selections {
		most = max(most, s.Nodes)
	}
	basePods := b.Outcomes.Running + b.Outcomes.Pending + b.Outcomes.Restarting + b.Outcomes.OOMKilled
	pods := len(livePods(in.Observation))
	created := len(in.Observation.NodeClaims)
	if most == 0 || basePods == 0 || pods == 0 {
		return 0, true, fmt.Sprintf("%d NodeClaim(s); the baseline launched none to compare with", created)
	}
	need := math.Ceil(float64(pods) * float64(most) / float64(basePods))
	ratio := float64(created) / math.Max(need, 1)
	detail := fmt.Sprintf("%d NodeClaim(s) for %d pods; at the baseline's density (%d pods on %d node(s)) they need %.0f", created, pods, basePods, most, need)
	return b2f(ratio >= SurgeRatio && float64(created)-need >= SurgeExcess), true, detail
}

// evictions counts the pods that went with a node Karpenter took away: a
// NodeClaim that registered and was deleted during the run, and the pods
// deleted from its node.
func evictions(in *Input) (float64, bool, string) {
	gone := map[string]string{} // node → NodeClaim
	for _, c := range in.Observation.NodeClaims {
		if !c.Deleted.IsZero() && !c.Registered.IsZero() && c.Node != "" {
			gone[c.Node] = c.Name
		}
	}
	n := 0
	for _, p := range in.Observation.Pods {
		if _, ok := gone[p.Node]; ok && !p.Deleted.IsZero() {
			n++
		}
	}
	if n == 0 {
		return 0, true, ""
	}
	return float64(n), true, fmt.Sprintf("%d pod(s) from the nodes of %d NodeClaim(s) Karpenter deleted", n, len(gone))
}

// changed is 1 when inputs of kind k differ from the baseline's, with the
// changes as detail.
func changed(in *Input, k inputs.Kind) (float64, bool, string) {
	if in.Inputs == nil || in.BaselineInputs == nil {
		return 0, false, "the baseline records no inputs (re-record it for change attribution)"
	}
	c := inputs.Of(inputs.Diff(in.BaselineInputs, in.Inputs), k)
	if len(c) == 0 {
		return 0, true, ""
	}
	return 1, true, inputs.Summary(c, 3)
}

// sumCounts adds up a count per key (NodeClaims removed per reason).
func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// scaleInAndBaseline is the run's scale-in and the baseline's recorded
// ones, for a signal that compares them; nil and why not when either is
// missing.
func scaleInAndBaseline(in *Input) (*fingerprint.Disruption, []fingerprint.DisruptionRun, string) {
	d := scaleIn(in)
	if d == nil {
		return nil, nil, "no scale-in ran"
	}
	if in.Baseline == nil || in.Baseline.Disruption == nil || len(in.Baseline.Disruption.Runs) == 0 {
		return nil, nil, "no baseline scale-in"
	}
	return d, in.Baseline.Disruption.Runs, ""
}

// scaleIn is the run's scale-in, nil when none ran.
func scaleIn(in *Input) *fingerprint.Disruption {
	if d := in.Observed.Disruption; d != nil && d.Skipped == "" {
		return d
	}
	return nil
}

// keptDetail groups the NodeClaims Karpenter kept by its reason, the
// most common first: `"Can't replace with a cheaper node": c-a, c-b;
// "…": c-c (1 of 1 said before the scale-in)`.
func keptDetail(kept []fingerprint.Kept) string {
	by := map[string][]string{}
	early := map[string]int{}
	for _, k := range kept {
		by[k.Message] = append(by[k.Message], k.NodeClaim)
		if k.At < 0 {
			early[k.Message]++
		}
	}
	msgs := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(msgs, func(a, b string) int { return len(by[b]) - len(by[a]) })
	parts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		p := fmt.Sprintf("%q: %s", m, names(by[m]))
		if n := early[m]; n > 0 {
			p += fmt.Sprintf(" (%d of %d said before the scale-in)", n, len(by[m]))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// lingeringSignal counts the scale-in's NodeClaims that did not go after
// their drain (fingerprint.Disruption.NotGone) and that count, each named.
func lingeringSignal(count func(fingerprint.Lingering) bool) func(*Input) (float64, bool, string) {
	return func(in *Input) (float64, bool, string) {
		d := scaleIn(in)
		if d == nil {
			return 0, false, "no scale-in ran"
		}
		var hit []string
		for _, l := range d.NotGone {
			if count(l) {
				hit = append(hit, lingering(l))
			}
		}
		return float64(len(hit)), true, strings.Join(hit, "; ")
	}
}

// lingering says when a deleted NodeClaim was drained, how long it stayed
// and, where its Node carries them, the finalizers that are not Karpenter's.
func lingering(l fingerprint.Lingering) string {
	state := "still there at the end"
	if l.Gone {
		state = "then gone"
	}
	s := fmt.Sprintf("%s drained at %.0f s, %.0f s later %s", l.NodeClaim, l.Drained, l.For, state)
	if len(l.HeldBy) > 0 {
		s += fmt.Sprintf(", its Node held by the finalizer(s) %s", strings.Join(l.HeldBy, ", "))
	}
	return s
}
