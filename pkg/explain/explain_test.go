package explain

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func TestProblem(t *testing.T) {
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	cases := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"unscheduled", corev1.Pod{}, "Pending"},
		{"running", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Ready: true}}}}, ""},
		{"creating", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating")}}}, ""},
		{"crash loop", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("CrashLoopBackOff")}}}, "CrashLoopBackOff"},
		{"image", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff")}}}, "ImagePullBackOff"},
		{"oom, running again", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Ready: true, RestartCount: 2,
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled"}}}}}}, "OOMKilled"},
		{"restarting", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 1}}}}, "Restarting"},
		{"completed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, ""},
	}
	for _, c := range cases {
		if got := Problem(&c.pod); got != c.want {
			t.Errorf("%s: Problem = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestNodePoolOf(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{karpv1.NodePoolLabelKey: "from-node"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).Build()
	pool := func(name string, labels map[string]string) karpv1.NodePool {
		np := karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Template.Labels = labels
		return np
	}
	pools := []karpv1.NodePool{pool("a", map[string]string{"team": "a"}), pool("b", map[string]string{"team": "b", "tier": "x"})}
	cases := []struct {
		name  string
		pod   corev1.Pod
		pools []karpv1.NodePool
		want  string
	}{
		{"its node's label", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}}, pools, "from-node"},
		{"a node selector naming it", corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{karpv1.NodePoolLabelKey: "x"}}}, pools, "x"},
		{"the template labels it selects", corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"team": "b"}}}, pools, "b"},
		{"ambiguous", corev1.Pod{}, pools, ""},
		{"the only one", corev1.Pod{}, pools[:1], "a"},
	}
	for _, tc := range cases {
		if got := nodePoolOf(context.Background(), c, &tc.pod, tc.pools); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
