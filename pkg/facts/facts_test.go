package facts

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/kube"
)

// What a run applied against what the Deployment asks for now (an HPA
// grew it); on a live cluster, where nothing is known of what was applied,
// no growth; no Deployment, no template.
func TestReadReplicas(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](7),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}}}
	c := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(d).Build()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		workload  string
		applied   *int32
		want      attribute.Replicas
		wantFound bool
	}{
		{"a run's, grown", "web", ptr.To[int32](3), attribute.Replicas{Applied: 3, Desired: 7}, true},
		{"live", "web", nil, attribute.Replicas{Applied: 7, Desired: 7}, true},
		{"a run's, Deployment gone", "gone", ptr.To[int32](3), attribute.Replicas{Applied: 3, Desired: 3}, false},
		{"live, not a Deployment", "gone", nil, attribute.Replicas{}, false},
	} {
		got, tpl, found := ReadReplicas(ctx, c, "ns", tc.workload, tc.applied)
		if d := cmp.Diff(tc.want, got); d != "" || found != tc.wantFound || (tpl != nil) != tc.wantFound {
			t.Errorf("%s: (-want +got)\n%s found %v, template %v", tc.name, d, found, tpl != nil)
		}
	}
}

// The NodePool as the API server has it now, not as it was applied (a
// policy fault edits it); the applied one when it cannot be read, with
// the node class then unknown rather than missing.
func TestReadNodePool(t *testing.T) {
	now := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "np"}}
	now.Spec.Weight = ptr.To[int32](9)
	applied := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "np"}}
	ctx := context.Background()
	f := New()
	ReadNodePool(ctx, fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(now).Build(), &f, "np", applied)
	if f.NodePool == nil || ptr.Deref(f.NodePool.Spec.Weight, 0) != 9 {
		t.Errorf("got %+v, want the NodePool as the server has it", f.NodePool)
	}
	f = New()
	ReadNodePool(ctx, fake.NewClientBuilder().WithScheme(kube.Scheme).Build(), &f, "np", applied)
	if f.NodePool != applied || f.NodeClassExists || f.NodeClassUnreadable != "" {
		t.Errorf("unreadable: got %+v", f)
	}
}

func TestContainerUsageSumsContainers(t *testing.T) {
	got := containerUsage(map[string]any{"containers": []any{
		map[string]any{"usage": map[string]any{"cpu": "250m", "memory": "64Mi"}},
		map[string]any{"usage": map[string]any{"cpu": "750m", "memory": "not a quantity"}},
		"not a container",
	}})
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	for k, q := range want {
		if g := got[k]; g.Cmp(q) != 0 {
			t.Errorf("%s: got %s, want %s", k, g.String(), q.String())
		}
	}
}
