package example

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/k8s/resources"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"
)

// allowedInstanceTypes is the team's choice for its general NodePool:
// instance types of the KWOK provider's generic catalog.
var allowedInstanceTypes = []string{"c-4x-amd64-linux", "m-4x-amd64-linux"}

// waitTimeout bounds each wait: Karpenter launches KWOK nodes in seconds.
const waitTimeout = 2 * time.Minute

func TestGeneralNodePool(t *testing.T) {
	name := envconf.RandomName("general", 13)
	team := map[string]string{"team": name}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nodePool := generalNodePool(name, team)
	web := webDeployment(name, team)
	byNodePool := resources.WithLabelSelector(karpv1.NodePoolLabelKey + "=" + name)

	f := features.New("the general NodePool gets nodes of its own instance types").
		WithLabel("team", "platform").WithLabel("nodepool", "general").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := cfg.Client().Resources()
			for _, o := range []k8s.Object{ns, nodeClass, nodePool, web} {
				if err := r.Create(ctx, o); err != nil {
					t.Fatalf("failed to create %T %s: %v", o, o.GetName(), err)
				}
			}
			return ctx
		}).
		Assess("Karpenter launches NodeClaims", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := cfg.Client().Resources()
			// wait.For's error says only that time ran out: keep what was
			// last seen for the failure message.
			last := "no NodeClaim yet"
			err := wait.For(func(ctx context.Context) (bool, error) {
				claims := &karpv1.NodeClaimList{}
				if err := r.List(ctx, claims, byNodePool); err != nil {
					return false, err
				}
				for _, nc := range claims.Items {
					if !nc.StatusConditions().Get(karpv1.ConditionTypeLaunched).IsTrue() {
						last = "NodeClaim " + nc.Name + " not launched"
						return false, nil
					}
				}
				return len(claims.Items) > 0, nil
			}, wait.WithContext(ctx), wait.WithTimeout(waitTimeout), wait.WithInterval(250*time.Millisecond))
			if err != nil {
				t.Fatalf("waited %s for Karpenter to launch NodeClaims for NodePool %s (%s): %v", waitTimeout, name, last, err)
			}
			return ctx
		}).
		Assess("the Deployment's pods run", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			err := wait.For(conditions.New(cfg.Client().Resources()).DeploymentAvailable(web.Name, web.Namespace),
				wait.WithContext(ctx), wait.WithTimeout(waitTimeout), wait.WithInterval(250*time.Millisecond))
			if err != nil {
				t.Fatalf("waited %s for Deployment %s/%s to be available: %v", waitTimeout, web.Namespace, web.Name, err)
			}
			return ctx
		}).
		Assess("every node's instance type satisfies the NodePool", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			nodes := &corev1.NodeList{}
			if err := cfg.Client().Resources().List(ctx, nodes, byNodePool); err != nil {
				t.Fatalf("failed to list the nodes of NodePool %s: %v", name, err)
			}
			if len(nodes.Items) == 0 {
				t.Fatalf("NodePool %s has no node", name)
			}
			for _, n := range nodes.Items {
				if err := kube.NodeSatisfies(n.Labels, nodePool.Spec.Template.Spec.Requirements); err != nil {
					t.Errorf("node %s (%s) violates NodePool %s: %v", n.Name, n.Labels[corev1.LabelInstanceTypeStable], name, err)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			r := cfg.Client().Resources()
			// The Deployment first, then the NodePool, whose nodes
			// Karpenter must then remove, then what they used.
			for _, o := range []k8s.Object{web, nodePool} {
				if err := r.Delete(ctx, o); err != nil {
					t.Errorf("failed to delete %T %s: %v", o, o.GetName(), err)
				}
			}
			err := wait.For(func(ctx context.Context) (bool, error) {
				claims, nodes := &karpv1.NodeClaimList{}, &corev1.NodeList{}
				if err := r.List(ctx, claims, byNodePool); err != nil {
					return false, err
				}
				if err := r.List(ctx, nodes, byNodePool); err != nil {
					return false, err
				}
				return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
			}, wait.WithContext(ctx), wait.WithTimeout(waitTimeout), wait.WithInterval(250*time.Millisecond))
			if err != nil {
				t.Errorf("waited %s for Karpenter to remove the nodes of NodePool %s: %v", waitTimeout, name, err)
			}
			for _, o := range []k8s.Object{nodeClass, ns} {
				if err := r.Delete(ctx, o); err != nil {
					t.Errorf("failed to delete %T %s: %v", o, o.GetName(), err)
				}
			}
			return ctx
		}).Feature()

	testenv.Test(t, f)
}

func generalNodePool(name string, labels map[string]string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Labels = labels
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: name}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: allowedInstanceTypes},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
	}
	return np
}

func webDeployment(namespace string, nodeSelector map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](6),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{NodeSelector: nodeSelector, TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}}},
			},
		},
	}
}
