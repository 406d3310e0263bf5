// Package fingerprint summarises an observation into what Karpenter chose and
// how fast (the resource fingerprint), and aggregates repeated runs into a
// baseline that keeps the spread it saw. Names, partitions and timestamps
// are normalised out; zones are kept as a shape (how many, how uneven),
// because which zone a tie-break picks is noise.
package fingerprint

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/observe"
	"github.com/nodeprint/nodeprint/pkg/usage"
)

// Fingerprint is the stable summary of one run.
type Fingerprint struct {
	Selection Selection `json:"selection"`
	Timing    Timing    `json:"timing"`
	Outcomes  Outcomes  `json:"outcomes"`
	// Replaced counts the NodeClaims that registered a node and were
	// deleted during the run (consolidation, expiry, drift): a healthy
	// scenario may replace some, so churn is measured against its baseline.
	Replaced int `json:"replaced,omitempty"`
	// Karpenter is what Karpenter itself consumed during the run; nil
	// where its metrics cannot be read.
	Karpenter *usage.Usage `json:"karpenter,omitempty"`
	// Disruption is what Karpenter removed after the scale-out, in a
	// scenario with a scale-in phase; nil otherwise.
	Disruption *Disruption `json:"disruption,omitempty"`
}

// Selection is what Karpenter launched.
type Selection struct {
	// InstanceTypes counts nodes by "instance-type/capacity-type".
	InstanceTypes map[string]int `json:"instanceTypes"`
	CapacityTypes map[string]int `json:"capacityTypes"`
	Nodes         int            `json:"nodes"`
	// Zones is how many zones the nodes span; ZoneSkew the difference
	// between the most and least used of them.
	Zones    int `json:"zones"`
	ZoneSkew int `json:"zoneSkew"`
	// HourlyCost is the summed catalog price of the nodes, in the catalog's currency.
	HourlyCost float64 `json:"hourlyCost"`
	// PodsPerNode are the min and max pods on a node.
	PodsPerNodeMin int `json:"podsPerNodeMin"`
	PodsPerNodeMax int `json:"podsPerNodeMax"`
}

// Key is the selection as one comparable string: the instance-type multiset.
func (s Selection) Key() string {
	keys := make([]string, 0, len(s.InstanceTypes))
	for k, n := range s.InstanceTypes {
		keys = append(keys, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// Timing are latency percentiles in seconds, read from the observation's
// clock: the local receive times (milliseconds) on a cluster beside the
// harness, the API server's timestamps (one second) on an existing one.
type Timing struct {
	// Clock is the clock the latencies were read from.
	Clock observe.Clock `json:"clock,omitempty"`
	// PodReady is pod created → Ready.
	PodReady Percentiles `json:"podReady"`
	// NodeClaimReady is NodeClaim created → Initialized.
	NodeClaimReady Percentiles `json:"nodeClaimReady"`
	// The stages of the two: a slowdown shows whole in its own stage,
	// where the composite's noise (Karpenter's batch window, its retry
	// backoff on registration) would hide it. Pods: created → scheduled,
	// scheduled → Ready. NodeClaims: created → Launched (Karpenter's call
	// to the cloud), Launched → Registered (the node joins), Registered →
	// Initialized (the node Ready and initialised).
	PodScheduled       Percentiles `json:"podScheduled,omitzero"`
	PodStart           Percentiles `json:"podStart,omitzero"`
	NodeClaimLaunch    Percentiles `json:"nodeClaimLaunch,omitzero"`
	NodeRegistration   Percentiles `json:"nodeRegistration,omitzero"`
	NodeInitialization Percentiles `json:"nodeInitialization,omitzero"`
	// PodDecision is pod created → the NodeClaim it runs on created, for
	// the pods that waited for a new NodeClaim: Karpenter's decision,
	// its batch window included. PodScheduled is that wait plus the
	// launch plus kube-scheduler's retries of the pod, which add nothing
	// or most of a second to a run (cpu-heavy: 2.3 s or 3.1 s in
	// identical runs); this stage is Karpenter's alone.
	PodDecision Percentiles `json:"podDecision,omitzero"`
}

// Percentiles of a latency distribution, in seconds.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Outcomes count pods by how they ended.
type Outcomes struct {
	Running    int `json:"running"`
	Pending    int `json:"pending"`
	Restarting int `json:"restarting"`
	OOMKilled  int `json:"oomKilled"`
}

// Compute summarises an observation. Deleted objects are left out: a
// fingerprint describes the state the run settled in. A nil catalog leaves
// the cost at 0 (explain on a cluster whose catalog nodeprint does not know).
func Compute(ob *observe.Observation, cat *catalog.Catalog) (*Fingerprint, error) {
	fp := &Fingerprint{Selection: Selection{InstanceTypes: map[string]int{}, CapacityTypes: map[string]int{}}}
	zones := map[string]int{}
	var claimLat, launch, registration, initialization []float64
	for _, c := range ob.NodeClaims {
		if !c.Deleted.IsZero() {
			fp.Replaced += replaced(c)
			continue
		}
		if c.InstanceType == "" {
			// Not launched (yet): counted in timing when initialised only.
			continue
		}
		if err := fp.Selection.add(c, cat, zones); err != nil {
			return nil, err
		}
		if lat, ok := observe.Latency(ob.Clock, c.Created, c.Initialized, c.Received.Created, c.Received.Initialized); ok {
			claimLat = append(claimLat, lat)
		}
		launch = stage(launch, ob.Clock, c.Created, c.Launched, c.Received.Created, c.Received.Launched)
		registration = stage(registration, ob.Clock, c.Launched, c.Registered, c.Received.Launched, c.Received.Registered)
		initialization = stage(initialization, ob.Clock, c.Registered, c.Initialized, c.Received.Registered, c.Received.Initialized)
	}
	fp.Selection.HourlyCost = math.Round(fp.Selection.HourlyCost*1e4) / 1e4
	fp.Selection.Zones, fp.Selection.ZoneSkew = zoneShape(zones)
	perNode := map[string]int{}
	claimOf := claimsByNode(ob.NodeClaims)
	var podLat, scheduled, start, decision []float64
	for _, p := range ob.Pods {
		if !p.Deleted.IsZero() {
			continue
		}
		switch {
		case p.Restarts > 0 || p.Waiting != "":
			fp.Outcomes.Restarting++
		case p.Phase == "Running" && !p.Ready.IsZero():
			fp.Outcomes.Running++
		default:
			fp.Outcomes.Pending++
		}
		if p.LastTermination == "OOMKilled" {
			fp.Outcomes.OOMKilled++
		}
		if p.Node != "" {
			perNode[p.Node]++
		}
		if lat, ok := observe.Latency(ob.Clock, p.Created, p.Ready, p.Received.Created, p.Received.Ready); ok {
			podLat = append(podLat, lat)
		}
		scheduled = stage(scheduled, ob.Clock, p.Created, p.Scheduled, p.Received.Created, p.Received.Scheduled)
		start = stage(start, ob.Clock, p.Scheduled, p.Ready, p.Received.Scheduled, p.Received.Ready)
		if c := claimOf[p.Node]; c != nil {
			// Only a NodeClaim created after the pod was decided for it.
			if lat, ok := observe.Latency(ob.Clock, p.Created, c.Created, p.Received.Created, c.Received.Created); ok && lat > 0 {
				decision = append(decision, lat)
			}
		}
	}
	if len(perNode) > 0 {
		fp.Selection.PodsPerNodeMin = math.MaxInt
		for _, n := range perNode {
			fp.Selection.PodsPerNodeMin = min(fp.Selection.PodsPerNodeMin, n)
			fp.Selection.PodsPerNodeMax = max(fp.Selection.PodsPerNodeMax, n)
		}
	}
	fp.Timing.Clock = ob.Clock
	fp.Timing.PodReady = percentiles(podLat)
	fp.Timing.NodeClaimReady = percentiles(claimLat)
	fp.Timing.PodScheduled, fp.Timing.PodStart, fp.Timing.PodDecision = percentiles(scheduled), percentiles(start), percentiles(decision)
	fp.Timing.NodeClaimLaunch, fp.Timing.NodeRegistration, fp.Timing.NodeInitialization = percentiles(launch), percentiles(registration), percentiles(initialization)
	return fp, nil
}

// claimsByNode is the NodeClaims that hold a Node, by the Node's name;
// a deleted NodeClaim is left out, as Compute leaves it out of the
// selection.
func claimsByNode(claims map[string]*observe.NodeClaimRecord) map[string]*observe.NodeClaimRecord {
	out := map[string]*observe.NodeClaimRecord{}
	for _, c := range claims {
		if c.Node != "" && c.Deleted.IsZero() {
			out[c.Node] = c
		}
	}
	return out
}

// add counts a launched NodeClaim into the selection (and its zone into
// zones), priced from cat (nil: no cost).
func (s *Selection) add(c *observe.NodeClaimRecord, cat *catalog.Catalog, zones map[string]int) error {
	s.InstanceTypes[c.InstanceType+"/"+c.CapacityType]++
	s.CapacityTypes[c.CapacityType]++
	s.Nodes++
	zones[c.Zone]++
	if cat == nil {
		return nil
	}
	price, ok := cat.Price(c.InstanceType, c.Zone, c.CapacityType)
	if !ok {
		return fmt.Errorf("instance type %s (%s, %s) is not in the catalog: was Karpenter started with another one?", c.InstanceType, c.Zone, c.CapacityType)
	}
	s.HourlyCost += price
	return nil
}

// zoneShape is how many zones the nodes span and the difference between
// the most and least used of them.
func zoneShape(nodesByZone map[string]int) (zones, skew int) {
	if len(nodesByZone) == 0 {
		return 0, 0
	}
	lo, hi := math.MaxInt, 0
	for _, n := range nodesByZone {
		lo, hi = min(lo, n), max(hi, n)
	}
	return len(nodesByZone), hi - lo
}

// replaced is 1 for a deleted NodeClaim that had registered a node (a
// replacement, not a launch that failed), else 0.
func replaced(c *observe.NodeClaimRecord) int {
	if c.Registered.IsZero() {
		return 0
	}
	return 1
}

// stage appends the latency from one transition to the next, where both
// happened; a transition seen out of order (the watch delivered two
// conditions of one update) counts as no time.
func stage(xs []float64, clock observe.Clock, from, to, rFrom, rTo time.Time) []float64 {
	if lat, ok := observe.Latency(clock, from, to, rFrom, rTo); ok {
		return append(xs, max(lat, 0))
	}
	return xs
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		// Nearest rank: an observed value, never an interpolation.
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Percentiles{Count: len(s), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: s[len(s)-1]}
}
