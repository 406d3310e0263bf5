package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

// policyClient is a fake API server that, like the real one, rejects a
// dry-run Node while a ValidatingAdmissionPolicy of that name is bound
// (the faults' probe).
// The policy's CEL itself is proven on the real stack (the fault suite's
// termination-refused scenario).
func policyClient(t *testing.T) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(kube.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			o := &client.CreateOptions{}
			o.ApplyOptions(opts)
			if _, ok := obj.(*corev1.Node); ok && len(o.DryRun) > 0 {
				bindings := &admissionv1.ValidatingAdmissionPolicyBindingList{}
				if err := cl.List(ctx, bindings); err != nil {
					return err
				}
				for _, b := range bindings.Items {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, obj.GetName(),
						fmt.Errorf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", b.Spec.PolicyName, b.Name))
				}
			}
			return cl.Create(ctx, obj, opts...)
		},
	}).Build()
}

// termination-refused refuses a scenario that removes no node, binds a
// policy to the run's NodeClaims' second deletion only, waits until it is
// enforced, and on restore wakes Karpenter on exactly the run's NodeClaims
// and Nodes that are being deleted.
func TestTerminationRefusedBindsTheRunsSecondDeletionAndWakesKarpenterOnRestore(t *testing.T) {
	ctx := context.Background()
	tg := target(t)
	tg.Client = policyClient(t)
	tg.Scenario = &scenario.Scenario{}
	if _, err := New(&scenario.Fault{Name: "termination-refused"}, tg); err == nil || !strings.Contains(err.Error(), "scaleIn") {
		t.Errorf("a scenario without scaleIn: got %v", err)
	}
	tg.Scenario.Spec.ScaleIn = &scenario.ScaleIn{}
	inj := inject(t, tg, scenario.Fault{Name: "termination-refused"})

	vap := &admissionv1.ValidatingAdmissionPolicy{}
	if err := tg.Client.Get(ctx, client.ObjectKey{Name: "nodeprint-refuse-termination-run1"}, vap); err != nil {
		t.Fatal(err)
	}
	m := vap.Spec.MatchConstraints
	if diff := cmp.Diff(map[string]string{karpv1.NodePoolLabelKey: "run1"}, m.ObjectSelector.MatchLabels); diff != "" {
		t.Errorf("the policy's selector (-want +got):\n%s", diff)
	}
	var rules []string
	for _, r := range m.ResourceRules {
		rules = append(rules, string(r.Operations[0])+" "+r.APIGroups[0]+"/"+r.Resources[0])
	}
	if diff := cmp.Diff([]string{"DELETE karpenter.sh/nodeclaims", "CREATE /nodes"}, rules); diff != "" {
		t.Errorf("the policy's rules (-want +got):\n%s", diff)
	}
	if e := vap.Spec.Validations[0].Expression; !strings.Contains(e, "!has(oldObject.metadata.deletionTimestamp)") {
		t.Errorf("the policy must deny only a deletion of a NodeClaim already being deleted: %s", e)
	}

	claim := func(name, pool string, deleting bool) {
		nc := &karpv1.NodeClaim{}
		nc.Name, nc.Labels, nc.Finalizers = name, map[string]string{karpv1.NodePoolLabelKey: pool}, []string{karpv1.TerminationFinalizer}
		if err := tg.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		n := &corev1.Node{}
		n.Name, n.Labels, n.Finalizers = name, nc.Labels, nc.Finalizers
		if err := tg.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		if deleting {
			for _, o := range []client.Object{nc, n} {
				if err := tg.Client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
					t.Fatal(err)
				}
			}
		}
	}
	claim("stuck", "run1", true)
	claim("kept", "run1", false)
	claim("other", "run2", true)
	if err := inj.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	touched := map[string]bool{}
	for _, l := range []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}} {
		if err := tg.Client.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		switch l := l.(type) {
		case *karpv1.NodeClaimList:
			for _, o := range l.Items {
				touched["NodeClaim/"+o.Name] = o.Annotations[Label+"-restored"] != ""
			}
		case *corev1.NodeList:
			for _, o := range l.Items {
				touched["Node/"+o.Name] = o.Annotations[Label+"-restored"] != ""
			}
		}
	}
	want := map[string]bool{"NodeClaim/stuck": true, "Node/stuck": true, "NodeClaim/kept": false, "Node/kept": false, "NodeClaim/other": false, "Node/other": false}
	if diff := cmp.Diff(want, touched); diff != "" {
		t.Errorf("touched after restore (-want +got):\n%s", diff)
	}
	if left, _ := Leftovers(ctx, tg.Client); len(left) != 0 {
		t.Errorf("after restore: %v", left)
	}
}

// A policy the API server does not drop in time is an error that names it.
func TestAwaitPolicyNamesAPolicyStillEnforced(t *testing.T) {
	c := policyClient(t)
	b := &admissionv1.ValidatingAdmissionPolicyBinding{}
	b.Name, b.Spec.PolicyName = "p", "p"
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	err := awaitPolicy(ctx, c, "p", &corev1.Node{}, false)
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy p was still enforced") {
		t.Errorf("got %v", err)
	}
}
