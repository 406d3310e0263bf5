package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/kube"
	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func cluster(t *testing.T, read *[]string) client.Client {
	t.Helper()
	general := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general", ResourceVersion: "7", Annotations: map[string]string{"karpenter.sh/nodepool-hash": "1"}}}
	general.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	general.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}
	batch := general.DeepCopy()
	batch.Name = "batch"
	labels := map[string]string{"app.kubernetes.io/name": "checkout"}
	tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"checksum/config": "abc"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Image: "example.com/checkout:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Env: []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}}},
	}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop", Labels: labels, Annotations: map[string]string{"deployment.kubernetes.io/revision": "3"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tpl}}
	db := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}}}
	cronJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-123", Namespace: "shop", OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "u", Controller: ptr.To(true)}}},
		Spec: batchv1.JobSpec{Template: tpl}}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop"}, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout"}, MinReplicas: ptr.To[int32](3), MaxReplicas: 12,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}}}}
	budget := func(name string, match map[string]string, maxUnavailable int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", ResourceVersion: "9"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)), Selector: &metav1.LabelSelector{MatchLabels: match}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: maxUnavailable}}
	}
	pdbs := []client.Object{
		budget("checkout", labels, 1),
		budget("db", map[string]string{"app": "db"}, 0), budget("db-all", map[string]string{"app": "db"}, 1),
		budget("search", map[string]string{"app": "search"}, 2),
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "checkout-1", Namespace: "shop", Labels: labels}, Spec: corev1.PodSpec{NodeName: "n1"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}, StringData: map[string]string{"password": "hunter2"}}
	record := func(o any) {
		switch o.(type) {
		case *corev1.Secret, *corev1.SecretList, *corev1.ConfigMap, *corev1.ConfigMapList:
			*read = append(*read, "a Secret or ConfigMap")
		}
	}
	return fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(general, batch, dep, db, cronJob, hpa, node, pod, secret).WithObjects(pdbs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				record(obj)
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				record(list)
				return c.List(ctx, list, opts...)
			},
		}).Build()
}

// An import is a scenario the loader takes as it is: the workloads with
// their replicas and HPA, the NodePool their pods run on, nothing of
// Secrets, annotations or status.
func TestImportWritesAScenarioThatLoads(t *testing.T) {
	var read []string
	res, err := Import(context.Background(), cluster(t, &read), Options{Name: "shop", Namespaces: []string{"shop"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(read) > 0 {
		t.Errorf("import read %v", read)
	}
	dir := t.TempDir()
	for p, b := range res.Files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{"hunter2", "resourceVersion", "deployment.kubernetes.io/revision", "checksum/config", "status:"} {
			if strings.Contains(string(b), leak) {
				t.Errorf("%s holds %q:\n%s", p, leak, b)
			}
		}
	}
	l := &scenario.Loader{FixturesDir: "../../fixtures", GenericCatalog: "generic.json"}
	s, err := l.Load(filepath.Join(dir, res.Scenario))
	if err != nil {
		t.Fatalf("the imported scenario does not load: %v\n%s", err, res.Files[res.Scenario])
	}
	if s.NodePool.Name != "general" || len(s.Spec.Workloads) != 2 {
		t.Fatalf("NodePool %s, %d workloads", s.NodePool.Name, len(s.Spec.Workloads))
	}
	got := map[string]scenario.Workload{}
	for _, w := range s.Spec.Workloads {
		got[w.Name] = w
	}
	if c := got["checkout"]; c.Replicas != 5 || c.HPA == nil || c.HPA.MinReplicas != 3 || *c.HPA.CPUUtilization != 60 || c.Requests["cpu"] != "750m" {
		t.Errorf("checkout: %+v", c)
	}
	if d := cmp.Diff(&scenario.PDB{MaxUnavailable: ptr.To(intstr.FromInt32(1))}, got["checkout"].PDB); d != "" {
		t.Errorf("checkout's PodDisruptionBudget (-want +got):\n%s", d)
	}
	if db := got["db"]; db.Replicas != 3 || db.Requests["cpu"] != "2" || db.PDB != nil {
		t.Errorf("db: %+v", db)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, n := range []string{"shop/Job/nightly-123: left out, it belongs to a CronJob", "shop/Deployment/checkout: annotations not written",
		"1 reference(s) to Secrets or ConfigMaps kept as names",
		"shop/StatefulSet/db: its pods match 2 PodDisruptionBudgets (db, db-all), under which the API server evicts none; none is written"} {
		if !strings.Contains(notes, n) {
			t.Errorf("notes lack %q:\n%s", n, notes)
		}
	}
}

func TestImportRefuses(t *testing.T) {
	var read []string
	c := cluster(t, &read)
	for _, o := range []struct {
		opts Options
		want string
	}{
		{Options{}, "name the namespaces"},
		{Options{Namespaces: []string{"empty"}}, "no Deployment, StatefulSet, ReplicaSet or Job in namespace(s) empty"},
		{Options{Namespaces: []string{"shop"}, NodePool: "gpu"}, `no NodePool "gpu" (the cluster has: batch, general)`},
		{Options{Namespaces: []string{"shop"}, Name: "Not_A_Name"}, "scenario name"},
	} {
		if _, err := Import(context.Background(), c, o.opts); err == nil || !strings.Contains(err.Error(), o.want) {
			t.Errorf("%+v: got %v, want %q", o.opts, err, o.want)
		}
	}
}
