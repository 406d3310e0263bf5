package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// allNodePoolsScenario is checkout.yaml under every NodePool of the team's
// file, its pods selecting the batch NodePool by name.
func allNodePoolsScenario(t *testing.T, edit func(string) string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, "testdata/team", dir)
	f := filepath.Join(dir, "scenarios", "many.yaml")
	writeFile(t, f, edit(`apiVersion: nodeprint.dev/v1alpha1
kind: Scenario
metadata: {name: many}
spec:
  policy:
    nodePoolFile: ../gitops/karpenter.yaml
    nodePoolName: general
    allNodePools: true
  workloads:
  - name: web
    replicas: 2
    requests: {cpu: 1}
    nodeSelector: {karpenter.sh/nodepool: batch}
`))
	return f, nil
}

func TestAllNodePools(t *testing.T) {
	f, _ := allNodePoolsScenario(t, func(s string) string { return s })
	s, err := loader(t).Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodePool.Name != "general" || len(s.OtherNodePools) != 1 || s.OtherNodePools[0].Name != "batch" {
		t.Fatalf("want general as the run's own and batch beside it, got %s and %d others", s.NodePool.Name, len(s.OtherNodePools))
	}
	if d := cmp.Diff(map[string]int{"general": 0, "batch": 1}, s.NodePoolNames()); d != "" {
		t.Errorf("NodePoolNames (-want +got):\n%s", d)
	}
	notes := strings.Join(s.Notes, "\n")
	if strings.Count(notes, "nodeClassRef EC2NodeClass/default is replaced") != 1 {
		t.Errorf("the node class note should be said once for the two NodePools:\n%s", notes)
	}
}

func TestAllNodePoolsErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"without nodePoolName", func(s string) string { return strings.Replace(s, "    nodePoolName: general\n", "", 1) },
			"spec.policy.allNodePools: name the run's own NodePool"},
		{"without nodePoolFile", func(s string) string {
			return strings.Replace(strings.Replace(s, "    nodePoolFile: ../gitops/karpenter.yaml\n", "    nodePoolRef: general\n", 1), "    nodePoolName: general\n", "", 1)
		}, "spec.policy.allNodePools: applies every NodePool of nodePoolFile; set nodePoolFile"},
		{"own NodePool not in the file", func(s string) string { return strings.Replace(s, "nodePoolName: general", "nodePoolName: gpu", 1) },
			`spec.policy.nodePoolName: ../gitops/karpenter.yaml holds no NodePool called "gpu"`},
		{"with a fault", func(s string) string { return s + "  fault: {name: memory-leak}\n" },
			"spec.policy.allNodePools: a fault scenario runs under one NodePool"},
		{"selecting a NodePool it does not apply", func(s string) string {
			return strings.Replace(s, "karpenter.sh/nodepool: batch", "karpenter.sh/nodepool: gpu", 1)
		},
			`spec.workloads[0].nodeSelector.karpenter.sh/nodepool: selects NodePool "gpu", which the scenario does not apply (it applies: batch, general)`},
		{"selecting another NodePool without allNodePools", func(s string) string { return strings.Replace(s, "    allNodePools: true\n", "", 1) },
			`selects NodePool "batch", which the scenario does not apply (it applies: general)`},
		{"selecting by affinity", func(s string) string {
			return strings.Replace(s, "    nodeSelector: {karpenter.sh/nodepool: batch}\n",
				"    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: karpenter.sh/nodepool, operator: In, values: [batch, gpu]}]}]}}}\n", 1)
		}, `spec.workloads[0].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: selects NodePool "gpu"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _ := allNodePoolsScenario(t, c.edit)
			_, err := loader(t).Load(f)
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), f) {
				t.Errorf("error lacks %q and the file:\n%v", c.want, err)
			}
		})
	}
}

// The team's NodePool file edited: batch renamed to name.
func renameBatch(t *testing.T, f, name string) {
	t.Helper()
	np := filepath.Join(filepath.Dir(filepath.Dir(f)), "gitops", "karpenter.yaml")
	b, err := os.ReadFile(np)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, np, strings.Replace(string(b), "name: batch", "name: "+name, 1))
}

func TestAllNodePoolsRefusesTwoOfOneName(t *testing.T) {
	f, _ := allNodePoolsScenario(t, func(s string) string { return s })
	renameBatch(t, f, "general")
	_, err := loader(t).Load(f)
	if err == nil || !strings.Contains(err.Error(), `holds two NodePools called "general"`) {
		t.Fatalf("want the duplicate named, got %v", err)
	}
}

// 40 (the scenario) + 6 (the run's suffix) + 1 + 11 + 6 (the NodeClaim's
// suffix) is 64 characters, one too many for a hostname label.
func TestAllNodePoolsRefusesNamesTooLongForAHostname(t *testing.T) {
	long := strings.Repeat("m", 40)
	f, _ := allNodePoolsScenario(t, func(s string) string {
		return strings.Replace(strings.Replace(s, "metadata: {name: many}", "metadata: {name: "+long+"}", 1), "nodepool: batch", "nodepool: batch-pools", 1)
	})
	renameBatch(t, f, "batch-pools")
	_, err := loader(t).Load(f)
	want := `NodePool "batch-pools": a run names it <run>-batch-pools and its nodes <run>-batch-pools-xxxxx, longer than the 63 characters of a hostname label: shorten it to 10 characters or the scenario's name`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
	if strings.Contains(err.Error(), "holds one NodePool") {
		t.Errorf("a NodePool refused for its name is still one of the file's: %v", err)
	}
	// 10 characters: 63 exactly.
	np := filepath.Join(filepath.Dir(filepath.Dir(f)), "gitops", "karpenter.yaml")
	for _, p := range []string{np, f} {
		b, _ := os.ReadFile(p)
		writeFile(t, p, strings.Replace(string(b), "batch-pools", "batch-pool", 1))
	}
	if _, err := loader(t).Load(f); err != nil {
		t.Fatalf("a name of 63 characters is a valid hostname: %v", err)
	}
}
