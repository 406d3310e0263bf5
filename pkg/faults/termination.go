package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpapis "sigs.k8s.io/karpenter/pkg/apis"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// terminationRefused is the termination-refused fault: the cloud refuses
// to terminate the run's instances, as EC2 answers TerminateInstances for
// an instance with termination protection or from a role that lost the
// permission. Karpenter's KWOK provider terminates an instance by deleting
// its NodeClaim once more, after the NodeClaim is already being deleted
// (its Delete); a ValidatingAdmissionPolicy denies exactly that second
// deletion. Karpenter's own decision to remove a node, the first deletion
// of its NodeClaim, and its deletion of the Node still go through, so the
// node is drained and then stays, held by Karpenter's own finalizer while
// it asks again and again. Nothing of Karpenter's binary changes.
type terminationRefused struct {
	base
	stages
}

// policy names the fault's ValidatingAdmissionPolicy and its binding.
func (f *terminationRefused) policy() string { return "nodeprint-refuse-termination-" + f.t.Run }

// probe is the Node the policy also rejects, so that the fault can see
// when the API server enforces it (a deletion cannot be tried ahead of the
// run: no NodeClaim of the run exists yet).
func (f *terminationRefused) probe() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   f.t.Run + "-termination-probe",
		Labels: map[string]string{karpv1.NodePoolLabelKey: f.t.Run},
	}}
}

func (f *terminationRefused) Inject(ctx context.Context) error {
	match := &admissionv1.MatchResources{
		// For a deletion the selector reads the stored object's labels.
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{karpv1.NodePoolLabelKey: f.t.Run}},
		ResourceRules: []admissionv1.NamedRuleWithOperations{
			policyRule(admissionv1.Delete, karpapis.Group, "nodeclaims"),
			policyRule(admissionv1.Create, "", "nodes"),
		},
	}
	return f.enforcePolicy(ctx, f.policy(), match, admissionv1.Validation{
		Expression: fmt.Sprintf(`request.operation == 'DELETE' ? !has(oldObject.metadata.deletionTimestamp) : object.metadata.name != '%s'`, f.probe().Name),
		Message: fmt.Sprintf("nodeprint fault termination-refused: the cloud refuses to terminate the instances of NodePool %s "+
			"(a NodeClaim already being deleted cannot be deleted again)", f.t.Run),
	}, f.probe())
}

// Restore deletes the policy, waits until the API server no longer
// enforces it, and then touches every NodeClaim and Node of the run that is
// being deleted: Karpenter retries a failed termination with a growing
// back-off (minutes after a few failures), and an update makes it try at
// once, so that cleanup does not wait on the back-off.
func (f *terminationRefused) Restore(ctx context.Context) error {
	if err := f.stages.Restore(ctx); err != nil {
		return err
	}
	if err := awaitPolicy(ctx, f.t.Client, f.policy(), f.probe(), false); err != nil {
		return err
	}
	return touchDeleting(ctx, f.t.Client, client.MatchingLabels{karpv1.NodePoolLabelKey: f.t.Run})
}

// MinObserve: the fault acts at scale-in, which the scenario's own
// settle timeout bounds.
func (f *terminationRefused) MinObserve() time.Duration { return 15 * time.Second }

// policyRule matches one operation on one resource, any version.
func policyRule(op admissionv1.OperationType, group, resource string) admissionv1.NamedRuleWithOperations {
	return admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{op},
		Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
	}}
}

// enforcePolicy creates a ValidatingAdmissionPolicy named name that denies
// what match selects and v rejects (failing closed), with its binding, as
// the fault's objects (deleted on Restore), and waits until the API server enforces it (probe, as awaitPolicy).
func (s *stages) enforcePolicy(ctx context.Context, name string, match *admissionv1.MatchResources, v admissionv1.Validation, probe *corev1.Node) error {
	fail := admissionv1.Fail
	vap := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail, MatchConstraints: match, Validations: []admissionv1.Validation{v}},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	if err := s.create(ctx, vap, binding); err != nil {
		return err
	}
	return awaitPolicy(ctx, s.b.t.Client, name, probe, true)
}

// awaitPolicy waits until the API server enforces the admission policy
// named (enforced: a dry-run create of probe is rejected with the policy's
// name in the error) or no longer does (the dry run is admitted). The API
// server compiles and drops policies asynchronously.
func awaitPolicy(ctx context.Context, c client.Client, name string, probe *corev1.Node, enforced bool) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		rejected := last != nil && strings.Contains(last.Error(), name)
		return rejected == enforced, nil
	})
	if err == nil {
		return nil
	}
	if enforced {
		return fmt.Errorf("ValidatingAdmissionPolicy %s was not enforced within 30s (a dry-run Node %s was still admitted): %w", name, probe.Name, err)
	}
	return fmt.Errorf("ValidatingAdmissionPolicy %s was still enforced 30s after it was deleted (a dry-run Node %s was rejected: %v): %w", name, probe.Name, last, err)
}

// touchDeleting annotates the selected NodeClaims and Nodes that are being
// deleted, which wakes the controllers that finalize them.
func touchDeleting(ctx context.Context, c client.Client, sel client.MatchingLabels) error {
	claims := &karpv1.NodeClaimList{}
	nodes := &corev1.NodeList{}
	var objs []client.Object
	for _, l := range []client.ObjectList{claims, nodes} {
		if err := c.List(ctx, l, sel); err != nil {
			return fmt.Errorf("failed to list the run's %T: %w", l, err)
		}
	}
	for i := range claims.Items {
		objs = append(objs, &claims.Items[i])
	}
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		Label+"-restored", time.Now().UTC().Format(time.RFC3339))))
	for _, o := range objs {
		if o.GetDeletionTimestamp() == nil {
			continue
		}
		if err := c.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed to touch %T %s after restoring the fault: %w", o, o.GetName(), err)
		}
	}
	return nil
}
