package fingerprint

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/observe"
)

// Disruption is what Karpenter took away after a run's scale-out, once
// its scale-in steps ran: the steady state it reached and each decision on
// the way, read from Karpenter's own events and the NodeClaims' lives.
type Disruption struct {
	// Outcome is how the scale-in ended: settled (every remaining pod
	// Ready and nothing changed for the quiet period), stalled or
	// timed-out. Empty when it was Skipped.
	Outcome observe.Outcome `json:"outcome,omitempty"`
	// Skipped says why no scale-in ran (the scale-out did not settle).
	Skipped string `json:"skipped,omitempty"`
	// Before is the selection when the first step ran; After the one the
	// scale-in ended with.
	Before Selection `json:"before"`
	After  Selection `json:"after"`
	// SteadyAfter is the seconds from the first step to the last NodeClaim
	// created, deleted or gone: how long Karpenter took to get there.
	SteadyAfter float64 `json:"steadyAfter"`
	// Steps are the seconds from the first step at which each step was
	// applied (the first's own wait, its after, included).
	Steps []float64 `json:"steps,omitempty"`
	// Disrupted counts the NodeClaims removed, by the reason Karpenter
	// gave (Empty, Underutilized, Drifted); NoReason for one removed
	// without a disruption event (not Karpenter's disruption controller).
	Disrupted map[string]int `json:"disrupted,omitempty"`
	// Decisions are Karpenter's disruption decisions, in order.
	Decisions []Decision `json:"decisions,omitempty"`
	// Replacements is how many NodeClaims Karpenter launched to replace
	// disrupted ones.
	Replacements int `json:"replacements"`
	// MaxDisrupting is the most NodeClaims being removed at once.
	MaxDisrupting int `json:"maxDisrupting"`
	// Evicted counts the pods that were on a node when Karpenter decided
	// to remove it.
	Evicted int `json:"evicted"`
	// KarpenterDecisions are Karpenter's own counts of its decisions over
	// the scale-in (usage.DecisionKey); nil where its metrics could not
	// be read, it restarted, or another run shared it.
	KarpenterDecisions map[string]int `json:"karpenterDecisions,omitempty"`
	// KarpenterRemoved are the run's NodeClaims Karpenter counted as
	// removed over the scale-in, by its reason label: the only record of
	// expiry (expired) and of instances the cloud lost (garbage_collected),
	// which publish no event. Nil where its metrics could not be read.
	KarpenterRemoved map[string]int `json:"karpenterRemoved,omitempty"`
	// Timeline is the nodes and their hourly cost at every change.
	Timeline []Point `json:"timeline,omitempty"`
	// Held are the NodeClaims Karpenter said it could not disrupt during
	// the scale-in because of a pod on them, in name order.
	Held []Hold `json:"held,omitempty"`
	// Kept are the NodeClaims still there at the scale-in's end that
	// Karpenter said it could not consolidate, in name order: its own
	// reason for keeping each (Unconsolidatable events).
	Kept []Kept `json:"kept,omitempty"`
	// ReplacedAgain are the NodeClaims Karpenter launched during the
	// scale-in to replace disrupted ones and then disrupted itself for the
	// same reason, in name order: each is one turn of a loop (a drifted
	// node's replacement found drifted again, a consolidation's
	// replacement consolidated again for the same reason).
	ReplacedAgain []string `json:"replacedAgain,omitempty"`
	// NotGone are the NodeClaims the scale-in deleted that were still
	// there NotGoneAfter after their node was drained (Karpenter's
	// deletion and the last of the run's pods on it gone), or at the
	// scale-in's end, in name order: instances that did not terminate.
	NotGone []Lingering `json:"notGone,omitempty"`
}

// Ending says how the scale-in ended and when the last change came:
// "settled after 74 s" (the steady state reached at 74 s), or, for one
// that did not settle, "timed-out; the last change at 18 s" (a scale-in
// that timed out ran for its whole timeout, not 18 s).
func (d *Disruption) Ending() string {
	if d.Outcome == observe.Settled {
		return fmt.Sprintf("settled after %.0f s", d.SteadyAfter)
	}
	return fmt.Sprintf("%s; the last change at %.0f s", d.Outcome, d.SteadyAfter)
}

// NotGoneAfter is how long after its drain a deleted NodeClaim may take
// to go: Karpenter then only waits for the cloud to terminate the
// instance, which KWOK does at once and a real cloud within about a
// minute.
const NotGoneAfter = 90 * time.Second

// Lingering is a deleted NodeClaim that outlived its drain by For seconds
// (to when it went, or to the scale-in's end while Gone is false).
type Lingering struct {
	NodeClaim string `json:"nodeClaim"`
	// Drained is the seconds from the first step to its drain.
	Drained float64 `json:"drained"`
	For     float64 `json:"for"`
	Gone    bool    `json:"gone"`
	// HeldBy are the finalizers on its Node as last seen when Karpenter's
	// own are gone: another controller's, which keep the Node object, and
	// so the NodeClaim that waits for it, after Karpenter is done. Empty
	// when the Node went or Karpenter still holds it (it waits for the
	// instance to terminate).
	HeldBy []string `json:"heldBy,omitempty"`
}

// karpenterFinalizers is the domain of Karpenter's own finalizers
// (karpenter.sh/termination).
const karpenterFinalizers = "karpenter.sh/"

// Hold is one NodeClaim Karpenter refused to disrupt for a pod's sake
// (its DisruptionBlocked event): a pod annotated karpenter.sh/do-not-disrupt
// or a PodDisruptionBudget that allows no eviction. Both are the
// application's own objects; a node's own do-not-disrupt annotation, or
// a node that is not ready, is not a Hold.
type Hold struct {
	NodeClaim string `json:"nodeClaim"`
	// By is HeldByPod or HeldByPDB.
	By string `json:"by"`
	// Message is Karpenter's, naming the pod or the budget.
	Message string `json:"message"`
}

// Kept is one NodeClaim Karpenter's consolidation looked at and kept, in
// its own words (its Unconsolidatable event: "Can't replace with a cheaper
// node", "Can't remove without creating 2 candidates", a pod that would
// not schedule elsewhere, the NodePool's consolidation policy).
type Kept struct {
	NodeClaim string `json:"nodeClaim"`
	Message   string `json:"message"`
	// At is the seconds from the scale-in's first step to when Karpenter
	// last said it; negative when it was before the scale-in. Karpenter
	// publishes one such event per NodeClaim every 15 minutes whatever
	// the message (its recorder's dedupe), so an earlier reason can stand
	// for a later one it did not publish.
	At float64 `json:"at"`
}

// What held a NodeClaim (Hold.By).
const (
	HeldByPod = "do-not-disrupt pod"
	HeldByPDB = "PodDisruptionBudget"
)

// Key names the hold's kind in a baseline's counts (DisruptionRun.Held):
// "doNotDisrupt" or "pdb".
func (h Hold) Key() string {
	if h.By == HeldByPDB {
		return "pdb"
	}
	return "doNotDisrupt"
}

// NoReason is Disruption.Disrupted's key for a NodeClaim removed without
// a disruption event.
const NoReason = "none"

// Decision is one disruption command of Karpenter's: the NodeClaims it
// removed together for one reason, and what it launched in their place.
type Decision struct {
	// At is the seconds from the first step.
	At     float64 `json:"at"`
	Reason string  `json:"reason"`
	// Kind is delete or replace.
	Kind string `json:"kind"`
	// Nodes are the removed NodeClaims' "instance-type/capacity-type",
	// sorted; Replacements the launched ones'.
	Nodes        []string `json:"nodes"`
	Replacements []string `json:"replacements,omitempty"`
	// Disrupting is how many NodeClaims were being removed right after it
	// (its own included); Allowed how many the NodePool's budgets for its
	// reason allowed then (-1: no budget bounds it).
	Disrupting int `json:"disrupting"`
	Allowed    int `json:"allowed"`
	// Evicted are the pods on its nodes when it was made.
	Evicted int `json:"evicted"`
	// Step is how many of the scale-in's steps had been applied when it
	// was made: below their number, Karpenter acted while the scenario
	// was still changing the load.
	Step int `json:"step"`
}

// Point is the run's nodes and their hourly cost from At seconds after the
// first step.
type Point struct {
	At         float64 `json:"at"`
	Nodes      int     `json:"nodes"`
	HourlyCost float64 `json:"hourlyCost"`
}

// Karpenter's disruption events (sigs.k8s.io/karpenter's
// controllers/disruption/events), on the NodeClaims.
const (
	terminatingReason = "DisruptionTerminating"
	terminatingPrefix = "Disrupting NodeClaim: "
	launchingReason   = "DisruptionLaunching"
	launchingPrefix   = "Launching NodeClaim: "
	blockedReason     = "DisruptionBlocked"
	// unconsolidatableReason is consolidation's "I looked and kept it".
	unconsolidatableReason = "Unconsolidatable"
	// together is how close in time two NodeClaims' removals for one
	// reason are to count as one command: Karpenter deletes a command's
	// candidates in parallel, and events have one-second timestamps.
	together = 1500 * time.Millisecond
)

// ComputeDisruption summarises a scale-in that began at start (the first
// step) from the run's observation at its end; steps are the moments its
// steps were applied, nodePools is the run's NodePool as applied and as
// each step that edited it left it (the budgets in force at each
// decision), cat prices the nodes (nil: cost 0).
func ComputeDisruption(ob *observe.Observation, cat *catalog.Catalog, nodePools NodePoolHistory, start time.Time, steps []time.Time) (*Disruption, error) {
	d := &Disruption{Outcome: ob.Outcome, Disrupted: map[string]int{}}
	for _, t := range steps {
		d.Steps = append(d.Steps, seconds(t.Sub(start)))
	}
	var err error
	if d.Before, err = selectionAt(ob, cat, start); err != nil {
		return nil, err
	}
	if d.After, err = selectionAt(ob, cat, ob.End); err != nil {
		return nil, err
	}
	reasons := claimReasons(ob, terminatingReason, terminatingPrefix)
	launched := claimReasons(ob, launchingReason, launchingPrefix)
	for _, c := range sortedClaims(ob) {
		if !c.Deleted.IsZero() && !c.Deleted.Before(start.Add(-time.Second)) {
			d.Disrupted[cmp.Or(reasons[c.Name].reason, NoReason)]++
		}
		if _, ok := launched[c.Name]; ok && !c.Created.Before(start.Add(-time.Second)) {
			d.Replacements++
		}
	}
	d.Decisions = decisions(ob, nodePools, reasons, launched, start)
	for i, x := range d.Decisions {
		d.Decisions[i].Step = stepsBy(steps, start.Add(secondsDuration(x.At)))
		d.MaxDisrupting = max(d.MaxDisrupting, x.Disrupting)
		d.Evicted += x.Evicted
	}
	if d.Timeline, err = timeline(ob, cat, start); err != nil {
		return nil, err
	}
	if n := len(d.Timeline); n > 0 {
		d.SteadyAfter = d.Timeline[n-1].At
	}
	d.Held = held(ob, start)
	d.Kept = kept(ob, start)
	d.ReplacedAgain = replacedAgain(reasons, launched, start)
	d.NotGone = notGone(ob, start)
	return d, nil
}

// notGone are the NodeClaims deleted after start that outlived their
// drain by NotGoneAfter. A NodeClaim whose node still has a pod of the
// run on it is being drained, not terminated, and is left out.
func notGone(ob *observe.Observation, start time.Time) []Lingering {
	onNode := map[string][]*observe.PodRecord{}
	for _, p := range ob.Pods {
		if p.Node != "" {
			onNode[p.Node] = append(onNode[p.Node], p)
		}
	}
	var out []Lingering
	for _, c := range sortedClaims(ob) {
		if c.Deleted.IsZero() || c.Deleted.Before(start.Add(-time.Second)) {
			continue
		}
		drained, ok := c.Deleted, true
		for _, p := range onNode[c.Node] {
			if p.Deleted.IsZero() {
				ok = false
				break
			}
			if p.Deleted.After(drained) {
				drained = p.Deleted
			}
		}
		end := ob.End
		if !c.Gone.IsZero() {
			end = c.Gone
		}
		if ok && end.Sub(drained) >= NotGoneAfter {
			out = append(out, Lingering{NodeClaim: c.Name, Drained: seconds(drained.Sub(start)), For: seconds(end.Sub(drained)), Gone: !c.Gone.IsZero(),
				HeldBy: foreignFinalizers(ob.Nodes[c.Node])})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeClaim < out[j].NodeClaim })
	return out
}

// foreignFinalizers are the finalizers on n, sorted, once none of them is
// Karpenter's: nil while Karpenter itself still holds the Node.
func foreignFinalizers(n *observe.NodeRecord) []string {
	if n == nil {
		return nil
	}
	for _, f := range n.Finalizers {
		if strings.HasPrefix(f, karpenterFinalizers) {
			return nil
		}
	}
	return slices.Sorted(slices.Values(n.Finalizers))
}

// replacedAgain are the NodeClaims launched as replacements after start
// and then disrupted for the reason they were launched for, sorted.
func replacedAgain(reasons, launched map[string]claimEvent, start time.Time) []string {
	var out []string
	for name, l := range launched {
		if r, ok := reasons[name]; ok && r.reason == l.reason && !l.at.Before(start.Add(-time.Second)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// held reads Karpenter's DisruptionBlocked events on the NodeClaims still
// there when the scale-in began (start) for the pod-level holds
// (state.StateNode's ValidatePodsDisruptable: `Pod has
// "karpenter.sh/do-not-disrupt" annotation (Pod=…)`, `Pdb prevents pod
// evictions (PodDisruptionBudget=[…])`, `Eviction does not support
// multiple PDBs`), one per NodeClaim, the latest message kept. Events from
// before start count: Karpenter checks every node in each disruption pass
// and publishes a hold once per NodeClaim every 2 minutes (its recorder's
// dedupe), so pods held since the scale-out are reported then.
func held(ob *observe.Observation, start time.Time) []Hold {
	by := latestClaimEvents(ob, blockedReason, func(c *observe.NodeClaimRecord, e observe.EventRecord) bool {
		return holdBy(e.Message) != "" && (c.Deleted.IsZero() || !c.Deleted.Before(start.Add(-time.Second)))
	})
	var out []Hold
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, Hold{NodeClaim: name, By: holdBy(by[name].Message), Message: by[name].Message})
	}
	return out
}

// kept reads Karpenter's Unconsolidatable events on the NodeClaims never
// deleted (so still there at the scale-in's end), the latest message kept
// per NodeClaim. Events from before start count, as for held.
func kept(ob *observe.Observation, start time.Time) []Kept {
	by := latestClaimEvents(ob, unconsolidatableReason, func(c *observe.NodeClaimRecord, _ observe.EventRecord) bool {
		return c.Deleted.IsZero()
	})
	out := make([]Kept, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, Kept{NodeClaim: name, Message: by[name].Message, At: seconds(by[name].Time.Sub(start))})
	}
	return out
}

// latestClaimEvents is each NodeClaim's latest event of reason that keep
// accepts, by NodeClaim name (of two at the same time, the later listed).
func latestClaimEvents(ob *observe.Observation, reason string, keep func(*observe.NodeClaimRecord, observe.EventRecord) bool) map[string]observe.EventRecord {
	by := map[string]observe.EventRecord{}
	for _, e := range ob.Events {
		name := strings.TrimPrefix(e.Object, "NodeClaim/")
		c := ob.NodeClaims[name]
		if e.Kind != "NodeClaim" || e.Reason != reason || c == nil || !keep(c, e) {
			continue
		}
		if prev, ok := by[name]; !ok || !e.Time.Before(prev.Time) {
			by[name] = e
		}
	}
	return by
}

// holdBy is what a DisruptionBlocked message blames: HeldByPod, HeldByPDB
// or "" (the node itself, its NodePool, a pending pod's nomination).
func holdBy(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.HasPrefix(m, "pod has") && strings.Contains(m, "do-not-disrupt"):
		return HeldByPod
	case strings.Contains(m, "pdb"):
		return HeldByPDB
	}
	return ""
}

type claimEvent struct {
	reason string
	at     time.Time
}

// claimReasons maps each NodeClaim to the reason of its first event of
// kind eventReason ("Disrupting NodeClaim: Underutilized" → Underutilized).
func claimReasons(ob *observe.Observation, eventReason, prefix string) map[string]claimEvent {
	out := map[string]claimEvent{}
	for _, e := range ob.Events {
		if e.Kind != "NodeClaim" || e.Reason != eventReason || !strings.HasPrefix(e.Message, prefix) {
			continue
		}
		name := strings.TrimPrefix(e.Object, "NodeClaim/")
		if prev, ok := out[name]; ok && !e.Time.Before(prev.at) {
			continue
		}
		out[name] = claimEvent{reason: strings.TrimSpace(strings.TrimPrefix(e.Message, prefix)), at: e.Time}
	}
	return out
}

func sortedClaims(ob *observe.Observation) []*observe.NodeClaimRecord {
	out := make([]*observe.NodeClaimRecord, 0, len(ob.NodeClaims))
	for _, c := range ob.NodeClaims {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// decisions groups the NodeClaims Karpenter removed into its commands
// (one reason, removed together) and gives each the replacements launched
// for it: a replacement launched for a reason belongs to the first command
// for that reason that removed nodes after it was created.
func decisions(ob *observe.Observation, nodePools NodePoolHistory, reasons, launched map[string]claimEvent, start time.Time) []Decision {
	type removal struct {
		claim *observe.NodeClaimRecord
		ev    claimEvent
	}
	var rs []removal
	for name, ev := range reasons {
		if c := ob.NodeClaims[name]; c != nil && !ev.at.Before(start.Add(-time.Second)) {
			rs = append(rs, removal{c, ev})
		}
	}
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].ev.at.Equal(rs[j].ev.at) {
			return rs[i].ev.at.Before(rs[j].ev.at)
		}
		return rs[i].claim.Name < rs[j].claim.Name
	})
	var out []Decision
	var first, last []time.Time // each decision's first event and last deletion
	var nodes []map[string]bool
	for _, r := range rs {
		i := len(out) - 1
		for ; i >= 0; i-- {
			if out[i].Reason == r.ev.reason && r.ev.at.Sub(first[i]) <= together {
				break
			}
		}
		if i < 0 {
			out = append(out, Decision{At: seconds(r.ev.at.Sub(start)), Reason: r.ev.reason, Kind: "delete"})
			first, last = append(first, r.ev.at), append(last, r.ev.at)
			nodes = append(nodes, map[string]bool{})
			i = len(out) - 1
		}
		if r.claim.Deleted.After(last[i]) {
			last[i] = r.claim.Deleted
		}
		out[i].Nodes = append(out[i].Nodes, typeOf(r.claim))
		if r.claim.Node != "" {
			nodes[i][r.claim.Node] = true
		}
	}
	for _, c := range sortedClaims(ob) {
		ev, ok := launched[c.Name]
		if !ok || c.Created.Before(start.Add(-time.Second)) {
			continue
		}
		for i := range out {
			if out[i].Reason == ev.reason && !first[i].Before(c.Created.Add(-time.Second)) {
				out[i].Kind = "replace"
				out[i].Replacements = append(out[i].Replacements, typeOf(c))
				break
			}
		}
	}
	for i := range out {
		sort.Strings(out[i].Nodes)
		sort.Strings(out[i].Replacements)
		out[i].Disrupting = disruptingAt(ob, last[i])
		out[i].Allowed = nodePools.allowed(first[i], liveAt(ob, first[i]), out[i].Reason)
		for _, p := range ob.Pods {
			if nodes[i][p.Node] && (p.Deleted.IsZero() || !p.Deleted.Before(first[i].Add(-time.Second))) {
				out[i].Evicted++
			}
		}
	}
	return out
}

func typeOf(c *observe.NodeClaimRecord) string {
	if c.InstanceType == "" {
		return "(not launched)"
	}
	return c.InstanceType + "/" + c.CapacityType
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

func secondsDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// stepsBy is how many of steps had been applied at t, a decision's first
// event: events have one-second timestamps, so one can read up to a
// second before the step it followed.
func stepsBy(steps []time.Time, t time.Time) int {
	n := 0
	for _, s := range steps {
		if !s.After(t.Add(time.Second)) {
			n++
		}
	}
	return n
}

// gone is when a NodeClaim stopped existing: seen gone, else (a record
// without it) its deletion; zero while it exists.
func gone(c *observe.NodeClaimRecord) time.Time {
	if !c.Gone.IsZero() {
		return c.Gone
	}
	return c.Deleted
}

// liveAt counts the NodeClaims initialised by t and not gone: the nodes
// Karpenter counts a budget's percentage of (it leaves out nodes not yet
// initialised).
func liveAt(ob *observe.Observation, t time.Time) int {
	n := 0
	for _, c := range ob.NodeClaims {
		if !c.Initialized.IsZero() && !c.Initialized.After(t) && (gone(c).IsZero() || gone(c).After(t)) {
			n++
		}
	}
	return n
}

// disruptingAt counts the NodeClaims being removed at t: deleted, not yet gone.
func disruptingAt(ob *observe.Observation, t time.Time) int {
	n := 0
	for _, c := range ob.NodeClaims {
		if !c.Deleted.IsZero() && !c.Deleted.After(t) && (c.Gone.IsZero() || c.Gone.After(t)) {
			n++
		}
	}
	return n
}

// NodePoolVersion is the run's NodePool as it was from Since on.
type NodePoolVersion struct {
	Since    time.Time
	NodePool *karpv1.NodePool
}

// NodePoolHistory is a run's NodePool over its scale-in, oldest first:
// as applied (Since zero), then as each step that edited it left it.
type NodePoolHistory []NodePoolVersion

// NeverEdited is the history of a NodePool no step edited.
func NeverEdited(np *karpv1.NodePool) NodePoolHistory {
	return NodePoolHistory{{NodePool: np}}
}

// allowed is how many nodes the NodePool's budgets let be disrupted at
// once for reason at t, with nodes nodes (Karpenter's own arithmetic);
// -1 when nothing bounds it. t is an event's, truncated to the second:
// where an edit falls within that second, either version may have been
// in force, and the larger allowance is taken, so that no decision reads
// over a budget it may not have had.
func (h NodePoolHistory) allowed(t time.Time, nodes int, reason string) int {
	if len(h) == 0 {
		return -1
	}
	most := 0
	for i, v := range h {
		if i+1 < len(h) && !h[i+1].Since.After(t) {
			continue // replaced by t
		}
		if !v.Since.Before(t.Add(time.Second)) {
			break // not yet in force within t's second
		}
		n := allowedBy(v.NodePool, t, nodes, reason)
		if n < 0 {
			return -1
		}
		most = max(most, n)
	}
	return most
}

// allowedBy is allowed under one NodePool (-1: none, or unbounded).
func allowedBy(np *karpv1.NodePool, t time.Time, nodes int, reason string) int {
	if np == nil {
		return -1
	}
	n, err := np.GetAllowedDisruptionsByReason(clocktesting.NewFakeClock(t), nodes, karpv1.DisruptionReason(reason))
	if err != nil || n == math.MaxInt32 {
		return -1
	}
	return n
}

// selectionAt is what ran at t: the NodeClaims launched by then and not
// yet gone.
func selectionAt(ob *observe.Observation, cat *catalog.Catalog, t time.Time) (Selection, error) {
	s := Selection{InstanceTypes: map[string]int{}, CapacityTypes: map[string]int{}}
	zones := map[string]int{}
	for _, c := range ob.NodeClaims {
		if c.InstanceType == "" || c.Created.After(t) || (!gone(c).IsZero() && !gone(c).After(t)) {
			continue
		}
		if err := s.add(c, cat, zones); err != nil {
			return Selection{}, err
		}
	}
	s.HourlyCost = math.Round(s.HourlyCost*1e4) / 1e4
	s.Zones, s.ZoneSkew = zoneShape(zones)
	return s, nil
}

// timeline is the nodes and cost at the start and after every NodeClaim
// that launched or went after it.
func timeline(ob *observe.Observation, cat *catalog.Catalog, start time.Time) ([]Point, error) {
	times := []time.Time{start}
	for _, c := range ob.NodeClaims {
		for _, t := range []time.Time{c.Created, gone(c)} {
			if t.After(start) && !t.After(ob.End) {
				times = append(times, t)
			}
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var out []Point
	for _, t := range times {
		s, err := selectionAt(ob, cat, t)
		if err != nil {
			return nil, err
		}
		p := Point{At: seconds(t.Sub(start)), Nodes: s.Nodes, HourlyCost: s.HourlyCost}
		if n := len(out); n > 0 && out[n-1].Nodes == p.Nodes && out[n-1].HourlyCost == p.HourlyCost {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Key names the decision's kind for verification: "replace/Underutilized/multi".
func (x Decision) Key() string {
	size := "single"
	if len(x.Nodes) > 1 {
		size = "multi"
	}
	return x.Kind + "/" + x.Reason + "/" + size
}

// BaselineDisruption is the scale-in of each recorded run.
type BaselineDisruption struct {
	Runs []DisruptionRun `json:"runs"`
}

// DisruptionRun is one recorded run's scale-in as verification compares it.
type DisruptionRun struct {
	Outcome observe.Outcome `json:"outcome"`
	After   Selection       `json:"after"`
	// Disrupted counts the removed NodeClaims by reason; Decisions the
	// decisions by Key.
	Disrupted map[string]int `json:"disrupted,omitempty"`
	Decisions map[string]int `json:"decisions,omitempty"`
	// DuringSteps counts, by Key, the decisions made before the last step
	// was applied: what Karpenter did while the load was still changing
	// (a consolidation held back while a destination is busy moves after
	// the steps). A baseline recorded before it was kept reads 0, which a
	// scale-in of one step always is.
	DuringSteps  map[string]int `json:"duringSteps,omitempty"`
	Replacements int            `json:"replacements"`
	// ReplacedAgain is len(Disruption.ReplacedAgain); a baseline recorded
	// before it was kept reads 0.
	ReplacedAgain int `json:"replacedAgain,omitempty"`
	MaxDisrupting int `json:"maxDisrupting"`
	Evicted       int `json:"evicted"`
	// Held counts the NodeClaims a pod held, by Hold.Key. Karpenter's
	// events are deduplicated, so a count is a lower bound: verification
	// reports one outside the seen range and does not fail on it. A
	// baseline recorded before it was kept reads none.
	Held map[string]int `json:"held,omitempty"`
	// SteadyAfter depends on the machine: kept and reported; verification
	// pairs it in the same run (RunMetrics' disruption.steadyAfter) and
	// never compares it with these recorded values.
	SteadyAfter float64 `json:"steadyAfter"`
	// KarpenterRemoved is Disruption.KarpenterRemoved.
	KarpenterRemoved map[string]int `json:"karpenterRemoved,omitempty"`
}

// Summary is the run's scale-in as a baseline keeps it.
func (d *Disruption) Summary() DisruptionRun {
	r := DisruptionRun{Outcome: d.Outcome, After: d.After, Disrupted: maps.Clone(d.Disrupted), Replacements: d.Replacements,
		ReplacedAgain: len(d.ReplacedAgain), MaxDisrupting: d.MaxDisrupting, Evicted: d.Evicted, SteadyAfter: d.SteadyAfter, KarpenterRemoved: maps.Clone(d.KarpenterRemoved)}
	for _, h := range d.Held {
		r.Held = increment(r.Held, h.Key())
	}
	for _, x := range d.Decisions {
		r.Decisions = increment(r.Decisions, x.Key())
		if x.Step < len(d.Steps) {
			r.DuringSteps = increment(r.DuringSteps, x.Key())
		}
	}
	return r
}

// increment adds one to m[k], making m when it is nil.
func increment(m map[string]int, k string) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k]++
	return m
}

// Range is the smallest and largest value of of over the recorded runs.
func (b *BaselineDisruption) Range(of func(DisruptionRun) float64) Range {
	r := Range{}
	for i, x := range b.Runs {
		r = r.Extend(of(x), i == 0)
	}
	return r
}

// AfterSelections are the distinct selections the recorded scale-ins
// ended with, in the order first seen, each with its runs.
func (b *BaselineDisruption) AfterSelections() []SeenSelection {
	var out []SeenSelection
	for _, r := range b.Runs {
		i := slices.IndexFunc(out, func(s SeenSelection) bool { return s.Key() == r.After.Key() })
		if i < 0 {
			out = append(out, SeenSelection{InstanceTypes: r.After.InstanceTypes, Nodes: r.After.Nodes, HourlyCost: r.After.HourlyCost})
			i = len(out) - 1
		}
		out[i].Runs++
	}
	return out
}

// addDisruption keeps the runs' scale-ins; all or none of a baseline's
// runs have one, and none was skipped.
func (b *Baseline) addDisruption(fps []*Fingerprint, recorded int) error {
	if recorded == 0 && len(fps) > 0 && fps[0].Disruption != nil {
		b.Disruption = &BaselineDisruption{}
	}
	for i, fp := range fps {
		n := recorded + i + 1
		switch {
		case (fp.Disruption != nil) != (b.Disruption != nil):
			return fmt.Errorf("run %d has %s, the baseline's runs %s: a baseline's runs all have the scenario's scale-in or none does", n, has(fp.Disruption != nil), has(b.Disruption != nil))
		case fp.Disruption == nil:
		case fp.Disruption.Skipped != "":
			return fmt.Errorf("run %d's scale-in did not run (%s): a baseline needs it in every run", n, fp.Disruption.Skipped)
		default:
			b.Disruption.Runs = append(b.Disruption.Runs, fp.Disruption.Summary())
		}
	}
	return nil
}

func has(scaleIn bool) string {
	if scaleIn {
		return "a scale-in"
	}
	return "no scale-in"
}

// mergeDisruption joins o's recorded scale-ins to b's.
func (b *Baseline) mergeDisruption(o *Baseline) error {
	switch {
	case (b.Disruption != nil) != (o.Disruption != nil):
		return fmt.Errorf("the recorded runs have %s, the new ones %s: record afresh", has(b.Disruption != nil), has(o.Disruption != nil))
	case b.Disruption != nil:
		b.Disruption = &BaselineDisruption{Runs: append(slices.Clone(b.Disruption.Runs), o.Disruption.Runs...)}
	}
	return nil
}
