package environment

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// ApplyNodeClass creates a KWOKNodeClass (deleted after the spec) and
// returns it.
func (e *Environment) ApplyNodeClass(ctx context.Context, name string) *kwokv1alpha1.KWOKNodeClass {
	GinkgoHelper()
	By("applying the KWOKNodeClass " + name)
	nc := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	e.ExpectCreated(ctx, nc)
	return nc
}

// ApplyNodePool creates a NodePool (deleted after the spec) for
// on-demand amd64 Linux nodes of any size, with templateLabels on its
// nodes, naming the KWOK node class; extra requirements are added to
// those three (an instance type, a zone, …). It returns the NodePool as
// created, for ExpectNodesSatisfy.
func (e *Environment) ApplyNodePool(ctx context.Context, name, nodeClass string, templateLabels map[string]string,
	extra ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	GinkgoHelper()
	By(fmt.Sprintf("applying the NodePool %s (node class %s, %d extra requirement(s))", name, nodeClass, len(extra)))
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Labels = templateLabels
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: nodeClass}
	np.Spec.Template.Spec.Requirements = append([]karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
	}, extra...)
	e.ExpectCreated(ctx, np)
	return np
}

// ApplyDeployment creates a Deployment (deleted after the spec) of pods
// labelled app=name, each requesting cpu and memory (quantities such as
// "500m" and "1Gi") and selecting nodeSelector, and returns it.
func (e *Environment) ApplyDeployment(ctx context.Context, namespace, name string, replicas int32, cpu, memory string,
	nodeSelector map[string]string) *appsv1.Deployment {
	GinkgoHelper()
	By(fmt.Sprintf("applying the Deployment %s/%s: %d pod(s) of %s CPU and %s memory", namespace, name, replicas, cpu, memory))
	cpuQ, err := resource.ParseQuantity(cpu)
	Expect(err).NotTo(HaveOccurred(), "the CPU request of Deployment %s", name)
	memQ, err := resource.ParseQuantity(memory)
	Expect(err).NotTo(HaveOccurred(), "the memory request of Deployment %s", name)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// No grace period: the pods run nothing, and the cleanup
				// should not wait 30 s for each.
				Spec: corev1.PodSpec{NodeSelector: nodeSelector, TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: cpuQ, corev1.ResourceMemory: memQ}}}}},
			},
		},
	}
	e.ExpectCreated(ctx, d)
	return d
}
