package observe

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func fullObjects(t *testing.T) (pod *corev1.Pod, node *corev1.Node, claim *unstructured.Unstructured, event *corev1.Event) {
	t.Helper()
	ts := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	later := metav1.NewTime(ts.Add(3 * time.Second))
	managed := []metav1.ManagedFieldsEntry{{Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate}}
	pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abc-1", Namespace: "r", ResourceVersion: "42", CreationTimestamp: ts,
			DeletionTimestamp: &later, ManagedFields: managed, Annotations: map[string]string{"kwok.x-k8s.io/usage-memory": "1Gi"},
			Labels:          map[string]string{"app": "web", "pod-template-hash": "abc"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-abc", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: ts},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: later},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: later},
		}, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 2, Image: "busybox",
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}}},
	}
	node = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "7", CreationTimestamp: ts, ManagedFields: managed,
			Finalizers: []string{"storage.example.com/detach"},
			Labels:     map[string]string{corev1.LabelInstanceTypeStable: "c-4x", karpv1.CapacityTypeLabelKey: "spot", corev1.LabelTopologyZone: "zone-a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: ts},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: later},
		}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
	}
	nc := &karpv1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "r-abc", ResourceVersion: "9", CreationTimestamp: ts, ManagedFields: managed,
			Labels: map[string]string{corev1.LabelInstanceTypeStable: "c-4x", karpv1.CapacityTypeLabelKey: "spot", corev1.LabelTopologyZone: "zone-a"}},
		Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Kind: "KWOKNodeClass", Name: "r"}},
	}
	nc.Status.NodeName = "n1"
	nc.Status.ProviderID = "kwok://n1"
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeInitialized)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
	if err != nil {
		t.Fatal(err)
	}
	event = &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "r", CreationTimestamp: ts, ManagedFields: managed},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-abc-1", Namespace: "r", UID: "u1"},
		Reason:         "Nominated", Message: "Pod should schedule on n1", Type: "Normal", Count: 3, LastTimestamp: later,
		Source: corev1.EventSource{Component: "karpenter"}}
	return pod, node, &unstructured.Unstructured{Object: u}, event
}

// The transforms keep everything the observation reads: the same objects,
// trimmed or whole, give the same observation.
func TestTrimmedObjectsObserveTheSame(t *testing.T) {
	observeAll := func(trimmed bool) *Observation {
		pod, node, claim, event := fullObjects(t)
		o := newTestObserver(1)
		feed := func(obj any, trim func(any) (any, error), fn func(any, bool)) {
			if trimmed {
				var err error
				if obj, err = trim(obj); err != nil {
					t.Fatal(err)
				}
			} else if u, ok := obj.(*unstructured.Unstructured); ok {
				nc := &karpv1.NodeClaim{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
					t.Fatal(err)
				}
				obj = nc
			}
			fn(obj, false)
		}
		feed(node, trimNode, o.onNode)
		feed(claim, trimNodeClaim, o.onNodeClaim)
		feed(pod, trimPod, o.onPod)
		feed(event, trimEvent, o.onEvent)
		return o.Snapshot()
	}
	whole, trimmed := observeAll(false), observeAll(true)
	if len(whole.Pods) != 1 || len(whole.NodeClaims) != 1 || len(whole.Nodes) != 1 || len(whole.Events) != 1 {
		t.Fatalf("the fixture must exercise every handler: %+v", whole)
	}
	// The receive times are the moments each was fed, not the objects'.
	if diff := cmp.Diff(whole, trimmed, cmpopts.IgnoreTypes(Received{})); diff != "" {
		t.Fatalf("trimmed objects observe differently (-whole +trimmed):\n%s", diff)
	}
}

func TestTrimDropsWhatIsNotRead(t *testing.T) {
	pod, node, claim, _ := fullObjects(t)
	p, _ := trimPod(pod)
	tp := p.(*corev1.Pod)
	if tp.ManagedFields != nil || tp.Annotations != nil || tp.Spec.Containers != nil || tp.Status.PodIP != "" || len(tp.Status.Conditions) != 2 {
		t.Fatalf("the trimmed pod keeps fields nobody reads: %+v", tp)
	}
	n, _ := trimNode(node)
	if tn := n.(*corev1.Node); tn.Status.Allocatable != nil || len(tn.Status.Conditions) != 1 {
		t.Fatalf("the trimmed node keeps fields nobody reads: %+v", tn)
	}
	c, _ := trimNodeClaim(claim)
	if tc, ok := c.(*karpv1.NodeClaim); !ok || tc.Spec.NodeClassRef != nil || tc.Status.ProviderID != "" {
		t.Fatalf("the trimmed NodeClaim is typed and small: %#v", c)
	}
	if same, _ := trimPod("not a pod"); same != "not a pod" {
		t.Fatal("objects of another type pass through")
	}
}
