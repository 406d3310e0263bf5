package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// A scenario of a team's repository: the NodePool as committed (a file
// with an EC2NodeClass and two NodePools), the workload as Helm renders it
// (a ServiceAccount, ConfigMap, Service, the Deployment with an init
// container and a sidecar, its HPA).
func TestScenarioFromTeamManifests(t *testing.T) {
	s, err := loader(t).Load("testdata/team/scenarios/checkout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cpu := s.NodePool.Spec.Limits[corev1.ResourceCPU]
	if s.NodePool.Name != "general" || s.NodePool.Spec.Template.Labels["team"] != "platform" || cpu.Cmp(resource.MustParse("1000")) != 0 {
		t.Errorf("NodePool: got %s %+v", s.NodePool.Name, s.NodePool.Spec)
	}
	w := s.Spec.Workloads[0]
	// Karpenter sizes the pod by its containers' sum (750m+250m, 1536Mi+256Mi)
	// against the init container's peak (2 CPU, 1Gi), each resource apart.
	want := Workload{
		Name: "checkout", Manifest: "../rendered/checkout.yaml", Replicas: 6,
		Requests: Quantities{"cpu": "2", "memory": "1792Mi"},
		Limits:   Quantities{"memory": "2560Mi"},
		Labels:   map[string]string{"app.kubernetes.io/name": "checkout"},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: w.TopologySpreadConstraints[0].LabelSelector}},
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "checkout", Effect: corev1.TaintEffectNoSchedule}},
		HPA:         &HPA{MinReplicas: 4, MaxReplicas: 20, CPUUtilization: ptr.To[int32](70)},
		// The PDB that selects the pods, not the worker's beside it.
		PDB: &PDB{MinAvailable: ptr.To(intstr.FromString("50%"))},
	}
	if d := cmp.Diff(want, w); d != "" {
		t.Errorf("workload (-want +got):\n%s", d)
	}
	notes := strings.Join(s.Notes, "\n")
	for _, n := range []string{
		"nodeClassRef EC2NodeClass/default is replaced by the run's KWOKNodeClass",
		"EC2NodeClass default: ignored, no KWOK equivalent: amiSelectorTerms, kubelet, role, securityGroupSelectorTerms, subnetSelectorTerms",
		"workload checkout: from document 4 (Deployment checkout)",
		"3 containers become one",
		"images are not pulled on KWOK",
		"ignored: priorityClassName business-critical, 1 volume(s)",
		"HPA metrics ignored (only cpu and memory utilisation are simulated): Pods",
		"workload checkout: PodDisruptionBudget from document 7 (PodDisruptionBudget checkout)",
		"ignored: unhealthyPodEvictionPolicy AlwaysAllow",
	} {
		if !strings.Contains(notes, n) {
			t.Errorf("notes lack %q:\n%s", n, notes)
		}
	}
	if !s.ZonesMatter() {
		t.Error("the manifest's zone spread must make zones matter")
	}
}

// Bad manifests fail the load with the scenario's field, the manifest's
// file, document and field, and the fix.
func TestBadTeamManifests(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/team", dir)
	scenarioFile := filepath.Join(dir, "scenarios", "checkout.yaml")
	orig, _ := os.ReadFile(scenarioFile)
	deploy := filepath.Join(dir, "rendered", "checkout.yaml")
	origDeploy, _ := os.ReadFile(deploy)
	for _, c := range []struct {
		name, scenario, manifest string
		want                     []string
	}{
		{"two NodePools, none named", strings.Replace(string(orig), "    nodePoolName: general\n", "", 1), "",
			[]string{"spec.policy.nodePoolFile", "holds 2 of karpenter.sh/v1 NodePool (NodePool/general, NodePool/batch): name one with policy.nodePoolName"}},
		{"NodePool not there", strings.Replace(string(orig), "nodePoolName: general", "nodePoolName: gpu", 1), "",
			[]string{`holds no karpenter.sh/v1 NodePool called "gpu" (it holds: EC2NodeClass/default, NodePool/general, NodePool/batch)`}},
		{"file not there", strings.Replace(string(orig), "../gitops/karpenter.yaml", "../gitops/nope.yaml", 1), "",
			[]string{"spec.policy.nodePoolFile", "nope.yaml"}},
		{"requests beside the manifest", strings.Replace(string(orig), "  - manifest: ../rendered/checkout.yaml\n", "  - manifest: ../rendered/checkout.yaml\n    requests: {cpu: 1}\n", 1), "",
			[]string{"spec.workloads[0]: requests come(s) from the manifest"}},
		{"a typo in the Deployment", "", strings.Replace(string(origDeploy), "      tolerations:", "      toleration:", 1),
			[]string{"spec.workloads[0].manifest", "checkout.yaml:", "document 4 (Deployment checkout)", "spec.template.spec.toleration", "unknown field"}},
		{"a PDB beside the manifest's", strings.Replace(string(orig), "  - manifest: ../rendered/checkout.yaml\n", "  - manifest: ../rendered/checkout.yaml\n    pdb: {maxUnavailable: 1}\n", 1), "",
			[]string{"document 7 (PodDisruptionBudget checkout) selects the pods of workload checkout, which sets pdb too: keep one"}},
		{"two PDBs over the same pods", "", strings.Replace(string(origDeploy), "      app.kubernetes.io/name: checkout-worker\n", "      app.kubernetes.io/name: checkout\n", 1),
			[]string{"document 6 (PodDisruptionBudget checkout-worker) and document 7 (PodDisruptionBudget checkout) both select the pods of workload checkout", "more than one PodDisruptionBudget", "keep one"}},
		{"a PDB of an old API", "", strings.Replace(string(origDeploy), "apiVersion: policy/v1\n", "apiVersion: policy/v1beta1\n", 1),
			[]string{"only policy/v1 PodDisruptionBudgets are read, got policy/v1beta1"}},
		{"no workload in the file", strings.Replace(string(orig), "../rendered/checkout.yaml", "../gitops/karpenter.yaml", 1), "",
			[]string{"holds no Deployment, StatefulSet, ReplicaSet or Job"}},
		{"object without manifest", strings.Replace(string(orig), "  - manifest: ../rendered/checkout.yaml\n", "  - name: web\n    object: web\n    replicas: 1\n    requests: {cpu: 1}\n", 1), "",
			[]string{"spec.workloads[0].object: picks an object of manifest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, scenarioFile, string(orig))
			writeFile(t, deploy, string(origDeploy))
			if c.scenario != "" {
				writeFile(t, scenarioFile, c.scenario)
			}
			if c.manifest != "" {
				writeFile(t, deploy, c.manifest)
			}
			_, err := loader(t).Load(scenarioFile)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range append(c.want, scenarioFile) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// The documents of a Helm-rendered file keep their lines in the file, so
// an error points where the editor shows it.
func TestSplitDocumentsKeepsLines(t *testing.T) {
	parts := splitDocuments([]byte("---\n# Source: a\nkind: A\n---\nkind: B\n\n--- \nkind: C\n"))
	var got []int
	for _, p := range parts {
		got = append(got, p.line)
	}
	if d := cmp.Diff([]int{1, 2, 5, 8}, got); d != "" {
		t.Errorf("start lines (-want +got):\n%s", d)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A team's own catalog is named by path; the scenario's catalog is then
// called after the file.
func TestCatalogFile(t *testing.T) {
	s, err := loader(t).Load("testdata/team/scenarios/checkout-ec2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.CatalogPath != filepath.Join("testdata/team/catalogs/us-west-2.json") || s.Spec.Catalog != "us-west-2" {
		t.Errorf("catalog %q at %q", s.Spec.Catalog, s.CatalogPath)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/team", dir)
	path := filepath.Join(dir, "scenarios", "checkout-ec2.yaml")
	b, _ := os.ReadFile(path)
	for _, c := range []struct{ edit, want string }{
		{strings.Replace(string(b), "spec:\n", "spec:\n  catalog: aws-small\n", 1), "spec.catalogFile: set catalog (a name) or catalogFile (a path), not both"},
		{strings.Replace(string(b), "us-west-2.json", "nope.json", 1), "spec.catalogFile: failed to read "},
	} {
		writeFile(t, path, c.edit)
		if _, err := loader(t).Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
