package faults

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/cluster"
)

// Infrastructure faults break what lies under Karpenter: the cloud's
// capacity (the capacity decorator of the harness's Karpenter build, see
// tools/karpenter/capacity), node start-up and registration, node health.

// CapacityConfigMap is the ConfigMap, in Karpenter's namespace, whose rules
// the capacity decorator applies.
const (
	CapacityConfigMap = cluster.CapacityConfigMap
	KarpenterNS       = cluster.KarpenterNamespace
)

func init() {
	register(&Definition{
		Name: "capacity-shortage", Layer: L1, Exclusive: true,
		Summary: "The cloud refuses offerings (insufficient capacity) through the capacity decorator's ConfigMap. " +
			"Where the NodePool allows another capacity type or zone, Karpenter falls back and the selection and cost shift; " +
			"where it does not, pods stay Pending.",
		Params: []Param{
			{Name: "capacityType", Kind: String, Default: "spot", Help: "refused capacity type (* for any)"},
			{Name: "zone", Kind: String, Default: "*", Help: "refused zone (* for any)"},
			{Name: "instanceType", Kind: String, Default: "*", Help: "refused instance type (* for any)"},
		},
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("capacity-shortage")
			c := &capacity{base: base{def, v, t}}
			c.stages = stages{b: &c.base}
			return c, nil
		},
	})
	register(&Definition{
		Name: "node-not-ready", Layer: L1,
		Summary: "The run's nodes turn NotReady some time after they became Ready (a KWOK node stage of the fault's own, like KWOK's node chaos stage).",
		Params: []Param{
			{Name: "after", Kind: Duration, Default: "10s", Help: "time a node stays Ready before it fails"},
		},
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("node-not-ready")
			n := &staged{base: base{def, v, t}, min: v.Duration("after") + 20*time.Second}
			n.stages = stages{b: &n.base}
			n.objs = func() ([]client.Object, error) {
				after := v.Duration("after")
				st, err := newStage("node-not-ready", stageParams{Run: t.Run, Delay: &after})
				return []client.Object{st}, err
			}
			return n, nil
		},
	})
	register(&Definition{
		Name: "node-finalizer", Layer: L1,
		Summary: "Another controller's finalizer holds the run's Nodes: a KWOK node stage of the fault's own adds " + NodeFinalizer +
			" to each Node as it appears, so a Node that Karpenter deletes, drains and terminates stays, and its NodeClaim waits for it " +
			"(needs a scenario with scaleIn).",
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("node-finalizer")
			if err := needScaleIn(t, "a finalizer that holds deleted Nodes only shows", "empty, drift or expire them"); err != nil {
				return nil, err
			}
			n := &nodeFinalizer{staged: staged{base: base{def, v, t}, min: 15 * time.Second}}
			n.stages = stages{b: &n.base}
			n.objs = func() ([]client.Object, error) {
				st, err := newStage("node-finalizer", stageParams{Run: t.Run})
				return []client.Object{st}, err
			}
			return n, nil
		},
	})
	register(&Definition{
		Name: "termination-refused", Layer: L1,
		Summary: "The cloud refuses to terminate the run's instances (as EC2 does for an instance with termination protection, or a role without " +
			"ec2:TerminateInstances): a ValidatingAdmissionPolicy denies the second deletion of a NodeClaim of the run, the KWOK provider's " +
			"instance termination, so a node Karpenter deletes and drains stays, held by Karpenter's own finalizer (needs a scenario with scaleIn).",
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("termination-refused")
			if err := needScaleIn(t, "a cloud that does not terminate instances only shows", "empty, drift or expire nodes"); err != nil {
				return nil, err
			}
			f := &terminationRefused{base: base{def, v, t}}
			f.stages = stages{b: &f.base}
			return f, nil
		},
	})
	register(&Definition{
		Name: "registration-blocked", Layer: L1,
		Summary: "A ValidatingAdmissionPolicy rejects the run's Node objects, so launched NodeClaims never register.",
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("registration-blocked")
			r := &registration{base: base{def, v, t}}
			r.stages = stages{b: &r.base}
			return r, nil
		},
	})
	register(&Definition{
		Name: "slow-boot", Layer: L1,
		Summary: "Instances take long to start: the run's KWOKNodeClass gets a large nodeRegistrationDelay.",
		Params: []Param{
			{Name: "delay", Kind: Duration, Default: "40s", Help: "time from launch to the Node's registration"},
		},
		new: func(v Values, t *Target) (Injector, error) {
			def, _ := Lookup("slow-boot")
			return &policy{base: base{def, v, t}, min: v.Duration("delay") + 15*time.Second, edit: func() {
				t.NodeClass.Spec.NodeRegistrationDelay = metav1.Duration{Duration: v.Duration("delay")}
			}}, nil
		},
	})
}

type staged struct {
	base
	stages
	objs func() ([]client.Object, error)
	min  time.Duration
}

func (s *staged) Inject(ctx context.Context) error {
	objs, err := s.objs()
	if err != nil {
		return err
	}
	return s.create(ctx, objs...)
}

func (s *staged) MinObserve() time.Duration { return s.min }

// NodeFinalizer is the finalizer the node-finalizer fault's stage
// (stages/node-finalizer.yaml) adds to the run's Nodes.
const NodeFinalizer = "nodeprint.dev/fault-node-finalizer"

// nodeFinalizer is the node-finalizer fault: its stage adds NodeFinalizer
// to the run's Nodes; Restore deletes the stage, then takes the finalizer
// off every Node that has it, so that the run's cleanup can delete them.
type nodeFinalizer struct {
	staged
}

func (n *nodeFinalizer) Restore(ctx context.Context) error {
	if err := n.stages.Restore(ctx); err != nil {
		return err
	}
	// KWOK may still act on the deleted stage for a moment: the finalizer
	// is taken off until two reads a second apart find none.
	clean := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		held, err := releaseNodes(ctx, n.t.Client, client.MatchingLabels{karpv1.NodePoolLabelKey: n.t.Run})
		if err != nil {
			return false, err
		}
		if held > 0 {
			clean = 0
			return false, nil
		}
		clean++
		return clean == 2, nil
	})
	if err != nil {
		return fmt.Errorf("fault node-finalizer: the run's Nodes still carried %s after 30s of taking it off: %w", NodeFinalizer, err)
	}
	return nil
}

// releaseNodes takes NodeFinalizer off the selected Nodes that have it
// and says how many had it.
func releaseNodes(ctx context.Context, c client.Client, opts ...client.ListOption) (int, error) {
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, opts...); err != nil {
		return 0, fmt.Errorf("failed to list Nodes: %w", err)
	}
	held := 0
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if !controllerutil.ContainsFinalizer(node, NodeFinalizer) {
			continue
		}
		held++
		stored := node.DeepCopy()
		controllerutil.RemoveFinalizer(node, NodeFinalizer)
		// A strategic merge patch removes the one finalizer and leaves the
		// others, Karpenter's among them, whatever was written since.
		if err := c.Patch(ctx, node, client.StrategicMergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return held, fmt.Errorf("failed to take %s off Node %s: %w", NodeFinalizer, node.Name, err)
		}
	}
	return held, nil
}

type capacity struct {
	base
	stages
}

type refusal struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
}

func (c *capacity) Inject(ctx context.Context) error {
	existing := &corev1.ConfigMap{}
	err := c.t.Client.Get(ctx, client.ObjectKey{Namespace: KarpenterNS, Name: CapacityConfigMap}, existing)
	switch {
	case err == nil:
		return fmt.Errorf("ConfigMap %s/%s already exists (another capacity fault is active, or a leftover: delete it with `kubectl -n %s delete configmap %s`)",
			KarpenterNS, CapacityConfigMap, KarpenterNS, CapacityConfigMap)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("failed to read ConfigMap %s/%s: %w", KarpenterNS, CapacityConfigMap, err)
	}
	r := refusal{InstanceType: c.v["instanceType"], Zone: c.v["zone"], CapacityType: c.v["capacityType"]}
	b, err := yaml.Marshal([]refusal{r})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: KarpenterNS, Name: CapacityConfigMap},
		Data:       map[string]string{"refuse": string(b)},
	}
	if err := c.create(ctx, cm); err != nil {
		return err
	}
	// The decorator caches its rules for a second.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Second):
	}
	return nil
}

func (c *capacity) MinObserve() time.Duration { return 20 * time.Second }

type registration struct {
	base
	stages
}

func (r *registration) Inject(ctx context.Context) error {
	match := &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{policyRule(admissionv1.Create, "", "nodes")}}
	// A dry-run Node of the run is rejected once the policy is enforced.
	probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.t.Run + "-probe", Labels: map[string]string{"karpenter.sh/nodepool": r.t.Run}}}
	return r.enforcePolicy(ctx, "nodeprint-block-registration-"+r.t.Run, match, admissionv1.Validation{
		Expression: fmt.Sprintf(`!has(object.metadata.labels) || !('karpenter.sh/nodepool' in object.metadata.labels) || object.metadata.labels['karpenter.sh/nodepool'] != '%s'`, r.t.Run),
		Message:    fmt.Sprintf("nodeprint fault registration-blocked: Nodes of NodePool %s are rejected", r.t.Run),
	}, probe)
}

// MinObserve outlasts the classifier's registration timeout, after which a
// launched NodeClaim that has not registered counts as failed.
func (r *registration) MinObserve() time.Duration {
	return attribute.RegistrationTimeout + 15*time.Second
}
