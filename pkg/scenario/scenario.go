// Package scenario loads and validates scenario files: a workload, the
// NodePool policy it runs under, the instance-type catalog, how many runs a
// baseline takes and what tolerances verification applies. Decoding is
// strict: unknown fields, bad quantities, dangling references and invalid
// names are errors naming the file, the field path and the line.
package scenario

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nodeprint/nodeprint/pkg/layer"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// APIVersion and Kind identify a scenario file.
const (
	APIVersion = "nodeprint.dev/v1alpha1"
	Kind       = "Scenario"
)

// Defaults applied by Load.
const (
	DefaultCatalog = "kwok-generic"
	// DefaultRuns is ten because verification tests a run's latencies
	// against the recorded runs at a 1% false-alarm rate: ten let three
	// runs decide (1/C(13,3) = 0.35%); five would need five.
	DefaultRuns = 10
	// DefaultQuietPeriod is short because settling is proved by state, not
	// guessed from silence: once every pod is Ready and every NodeClaim
	// initialised, Karpenter's provisioner has nothing left to do, and the
	// quiet period only covers notifications still in flight.
	DefaultQuietPeriod   = 1 * time.Second
	DefaultStallPeriod   = 60 * time.Second
	DefaultSettleTimeout = 5 * time.Minute
	// MaxReplicas bounds a workload: the harness runs on a laptop.
	MaxReplicas = 10000
)

// Scenario is one scenario file.
type Scenario struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`

	// Path is the file it was loaded from.
	Path string `json:"-"`
	// NodePool is the resolved policy: the referenced fixture or the inline spec.
	NodePool *karpv1.NodePool `json:"-"`
	// OtherNodePools are, with policy.allNodePools, the other NodePools of
	// nodePoolFile, sorted by name; each run applies them beside NodePool.
	OtherNodePools []*karpv1.NodePool `json:"-"`
	// CatalogPath is the resolved catalog file.
	CatalogPath string `json:"-"`
	// Notes say what of the manifests the scenario names does not carry
	// over to a run on KWOK (a node class's AWS fields, images, volumes),
	// for the report.
	Notes []string `json:"-"`
}

// Metadata names the scenario.
type Metadata struct {
	// Name is a DNS label; it names the fingerprint file and prefixes run names.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Spec is what the scenario runs.
type Spec struct {
	// Catalog names fixtures/catalogs/<catalog>.json, or "kwok-generic" for
	// the KWOK provider's own catalog (default).
	Catalog string `json:"catalog,omitempty"`
	// CatalogFile is a catalog of your own (such as `nodeprint catalog
	// from-ec2` writes), relative to the scenario file; not with Catalog.
	// The scenario's catalog is then called after the file.
	CatalogFile string     `json:"catalogFile,omitempty"`
	Policy      Policy     `json:"policy"`
	Workloads   []Workload `json:"workloads"`
	Baseline    Baseline   `json:"baseline,omitempty"`
	// Karpenter sets Karpenter's settings for the scenario (default: its
	// defaults); a scenario with settings runs alone.
	Karpenter *Karpenter `json:"karpenter,omitempty"`
	Settle    Settle     `json:"settle,omitempty"`
	// Fault makes this a fault scenario: the harness runs the scenario
	// clean (the baseline), then again with the fault injected, and
	// classifies the difference.
	Fault *Fault `json:"fault,omitempty"`
	// ScaleIn, when set, follows the settled scale-out with steps that
	// take load away and records what Karpenter removes (the disruption
	// fingerprint).
	ScaleIn *ScaleIn `json:"scaleIn,omitempty"`
}

// Fault names an injector from the fault catalog (pkg/faults), its
// parameters, and the attribution a correct classifier must reach.
type Fault struct {
	Name string `json:"name"`
	// Params are the injector's parameters (see `nodeprint faults`); values
	// may be strings, numbers or booleans.
	Params Params `json:"params,omitempty"`
	// Window bounds how long the faulted run is observed after injection
	// (default 2m); the run ends earlier when it settles or stalls.
	Window Duration `json:"window,omitempty"`
	// Expect is the attribution a correct classifier reaches.
	Expect *Expectation `json:"expect,omitempty"`
}

// Expectation is the verdict a fault scenario must produce.
type Expectation struct {
	// Layer is L1, L2 or L3.
	Layer layer.Layer `json:"layer"`
	// Rule is the ID of the rule that must decide (optional).
	Rule string `json:"rule,omitempty"`
}

// DefaultFaultWindow bounds observation after a fault is injected.
const DefaultFaultWindow = 2 * time.Minute

// Params are fault parameters by name.
type Params map[string]string

// UnmarshalJSON accepts strings, numbers and booleans.
func (p *Params) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("want a map of parameters such as {rate: 20Mi, hpa: true}")
	}
	out := Params{}
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		out[k] = string(v)
	}
	*p = out
	return nil
}

// Policy is the NodePool (and node class) the workloads run under. Exactly
// one of NodePoolRef, NodePoolFile and NodePool is set.
type Policy struct {
	// NodePoolRef names fixtures/nodepools/<ref>.yaml, a NodePool manifest.
	NodePoolRef string `json:"nodePoolRef,omitempty"`
	// NodePoolFile is a NodePool manifest as a team commits it, relative
	// to the scenario file; it may hold several documents (other kinds, an
	// EC2NodeClass, several NodePools: NodePoolName picks one).
	NodePoolFile string `json:"nodePoolFile,omitempty"`
	NodePoolName string `json:"nodePoolName,omitempty"`
	// AllNodePools applies every NodePool of nodePoolFile in each run, not
	// only NodePoolName's, which stays the run's own (the one a fault and
	// the facts read): Karpenter weighs a cluster's NodePools against each
	// other and takes the topology domains of a spread from all of them,
	// and its cost grows with their number (kubernetes-sigs/karpenter#2954).
	AllNodePools bool `json:"allNodePools,omitempty"`
	// NodePool is an inline NodePool spec.
	NodePool *karpv1.NodePoolSpec `json:"nodePool,omitempty"`
	// NodeClass configures the run's KWOKNodeClass.
	NodeClass NodeClass `json:"nodeClass,omitempty"`
	// Disruption replaces the run's own NodePool's disruption block
	// (consolidationPolicy, consolidateAfter, budgets with their
	// schedules): the scale-in's policy, set beside a NodePool that is
	// shared with production.
	Disruption *karpv1.Disruption `json:"disruption,omitempty"`
}

// NodeClass configures the KWOKNodeClass each run creates.
type NodeClass struct {
	// NodeRegistrationDelay simulates instance start-up time, e.g. "30s".
	NodeRegistrationDelay string `json:"nodeRegistrationDelay,omitempty"`
}

// Workload becomes a Deployment whose pods select the run's nodes. It is
// written out here, or taken from a manifest.
type Workload struct {
	// Name names the workload in the run (default, with a manifest: the
	// object's name).
	Name string `json:"name"`
	// Manifest is a file holding the workload as a team deploys it (a
	// Deployment, StatefulSet, ReplicaSet or Job, and the HPA that targets
	// it; Helm and kustomize output too), relative to the scenario file.
	// Its pod template gives the requests, limits, labels, node selector,
	// affinity, spread, tolerations and replicas; Object picks the object
	// when the file holds several workloads.
	Manifest string `json:"manifest,omitempty"`
	Object   string `json:"object,omitempty"`
	// Replicas, with a manifest, overrides the manifest's when above 0.
	Replicas int32 `json:"replicas"`
	// Labels are the pods' labels, beside the run's own (a manifest's
	// spread constraints and affinities select on them).
	Labels map[string]string `json:"labels,omitempty"`
	// Requests and Limits are resource quantities by name (cpu, memory, …).
	Requests Quantities `json:"requests"`
	Limits   Quantities `json:"limits,omitempty"`
	// NodeSelector is merged with the run's own node selector.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Affinity     *corev1.Affinity  `json:"affinity,omitempty"`
	// TopologySpreadConstraints without a labelSelector select the workload's own pods.
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	// Usage is the simulated usage per pod (cpu, memory), reported through
	// metrics-server; default: KWOK's 1m and 1Mi.
	Usage Quantities `json:"usage,omitempty"`
	HPA   *HPA       `json:"hpa,omitempty"`
	// PDB adds a policy/v1 PodDisruptionBudget over the workload's pods:
	// what Karpenter's drains and voluntary disruptions must respect.
	PDB *PDB `json:"pdb,omitempty"`
}

// PDB is a PodDisruptionBudget over a workload's pods: exactly one of
// MinAvailable (pods that must stay available) and MaxUnavailable (pods
// that may be unavailable at once), each a count or a percentage such as
// "50%".
type PDB struct {
	MinAvailable   *intstr.IntOrString `json:"minAvailable,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// HPA adds an autoscaling/v2 HorizontalPodAutoscaler to the workload.
type HPA struct {
	MinReplicas int32 `json:"minReplicas"`
	MaxReplicas int32 `json:"maxReplicas"`
	// Target utilisation in percent of requests; at least one is set.
	CPUUtilization    *int32 `json:"cpuUtilization,omitempty"`
	MemoryUtilization *int32 `json:"memoryUtilization,omitempty"`
}

// Baseline says how a baseline is recorded and verified.
type Baseline struct {
	// Runs is how many runs a baseline is recorded from (default 10).
	Runs int `json:"runs,omitempty"`
	// FalseAlarm is the share of verifications of an unchanged stack that
	// may fail on latencies or Karpenter's usage (default 0.01; see
	// docs/scenarios.md, "How timings are verified").
	FalseAlarm float64    `json:"falseAlarm,omitempty"`
	Tolerances Tolerances `json:"tolerances,omitempty"`
}

// Tolerances widen what verification accepts beyond what the baseline saw.
type Tolerances struct {
	// CostPercent accepts an unseen selection whose hourly cost is within
	// this percentage of the baseline's range (default 0: only seen selections).
	CostPercent float64 `json:"costPercent,omitempty"`
	// Nodes accepts an unseen selection whose node count is within this many
	// nodes of the baseline's range (default 0).
	Nodes int `json:"nodes,omitempty"`
}

// Settle says when a run is over.
type Settle struct {
	// Quiet is how long nothing may change, once every pod is Ready and
	// every NodeClaim initialised, before the run counts as settled (default 1s).
	Quiet Duration `json:"quiet,omitempty"`
	// Stall is how long pods may stay pending with no provisioning progress
	// before the run counts as stalled (default 60s).
	Stall Duration `json:"stall,omitempty"`
	// Timeout bounds the whole run (default 5m).
	Timeout Duration `json:"timeout,omitempty"`
}

// Quantities are resource quantities by name. Values may be written as
// strings ("500m", "1Gi") or plain numbers (2), as in Kubernetes manifests.
type Quantities map[string]string

// UnmarshalJSON accepts strings and numbers.
func (q *Quantities) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("want a map of quantities such as {cpu: 500m, memory: 1Gi}")
	}
	out := Quantities{}
	for k, v := range raw {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		var n json.Number
		if err := json.Unmarshal(v, &n); err == nil {
			out[k] = n.String()
			continue
		}
		out[k] = string(v) // reported as not a quantity by validation
	}
	*q = out
	return nil
}

// Duration is a time.Duration written as "30s".
type Duration struct{ time.Duration }

// UnmarshalJSON parses "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) < 2 || s[0] != '"' {
		return &durationError{s}
	}
	v, err := time.ParseDuration(s[1 : len(s)-1])
	if err != nil || v < 0 {
		return &durationError{s}
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

type durationError struct{ s string }

func (e *durationError) Error() string {
	return "want a duration such as \"30s\" or \"2m\", got " + e.s
}

// UserMessage is the message to show (strictyaml.UserError).
func (e *durationError) UserMessage() string { return e.Error() }

// RefusedValue is the value as the file has it (strictyaml.ValueError),
// for the error to name its field.
func (e *durationError) RefusedValue() string {
	if v, err := strconv.Unquote(e.s); err == nil {
		return v
	}
	return e.s
}

// NodePoolNames maps the names of the NodePools a run applies, as the
// scenario's files call them, to their index: 0 for the run's own, i+1 for
// OtherNodePools[i]. An inline NodePool has no name.
func (s *Scenario) NodePoolNames() map[string]int {
	out := map[string]int{}
	if s.NodePool != nil && s.NodePool.Name != "" {
		out[s.NodePool.Name] = 0
	}
	for i, np := range s.OtherNodePools {
		out[np.Name] = i + 1
	}
	return out
}

// TotalReplicas is the sum of the workloads' initial replicas.
func (s *Scenario) TotalReplicas() int {
	n := 0
	for _, w := range s.Spec.Workloads {
		n += int(w.Replicas)
	}
	return n
}

// ZonesMatter reports whether the scenario constrains zones (a zone
// requirement in its NodePool, or a workload spreading or (anti-)affining
// over zones). Otherwise which zone a node lands in is a price tie-break
// in the KWOK catalogs, and the number of zones is noise.
func (s *Scenario) ZonesMatter() bool {
	for _, np := range append([]*karpv1.NodePool{s.NodePool}, s.OtherNodePools...) {
		if np == nil {
			continue
		}
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == corev1.LabelTopologyZone {
				return true
			}
		}
	}
	for _, w := range s.Spec.Workloads {
		if _, ok := w.NodeSelector[corev1.LabelTopologyZone]; ok {
			return true
		}
		for _, c := range w.TopologySpreadConstraints {
			if c.TopologyKey == corev1.LabelTopologyZone {
				return true
			}
		}
		if a := w.Affinity; a != nil {
			b, _ := json.Marshal(a)
			if strings.Contains(string(b), corev1.LabelTopologyZone) {
				return true
			}
		}
	}
	return false
}
