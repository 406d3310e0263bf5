package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// badRoot is a repository root of its own (versions, NodePool fixtures,
// catalogs and a fingerprints directory) that the bad-input cases may
// break without touching the real one.
func badRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	copyTree := func(src, dst string) {
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyTree("../../tools/toolchain", filepath.Join(root, "tools", "toolchain"))
	copyTree("../../fixtures/nodepools", filepath.Join(root, "fixtures", "nodepools"))
	copyTree("../../fixtures/catalogs", filepath.Join(root, "fixtures", "catalogs"))
	copyTree("../../fingerprints", filepath.Join(root, "fingerprints"))
	return root
}

const goodScenario = `apiVersion: nodeprint.dev/v1alpha1
kind: Scenario
metadata:
  name: web-service
spec:
  policy:
    nodePoolRef: general-purpose
  workloads:
  - name: web
    replicas: 3
    requests: {cpu: 500m, memory: 1Gi}
    limits: {memory: 2Gi}
`

func yamlBomb() string {
	b := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b += n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
		prev = n
	}
	return b
}

// Every malformed input fails with exit 2 and a message naming the file
// (and the field and line where there is one) before any cluster starts.
// It is long because it is a table, one row per bad input: the rows read
// best side by side.
func TestBadInputTable(t *testing.T) {
	scenarioWith := func(old, new string) string {
		if !strings.Contains(goodScenario, old) {
			panic("test bug: " + old)
		}
		return strings.Replace(goodScenario, old, new, 1)
	}
	fingerprint, err := os.ReadFile("../../fingerprints/web-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fingerprintWith := func(old, new string) string {
		if !strings.Contains(string(fingerprint), old) {
			panic("test bug: " + old)
		}
		return strings.Replace(string(fingerprint), old, new, 1)
	}
	catalogScenario := scenarioWith("spec:\n", "spec:\n  catalog: broken\n")
	manifestScenario := "apiVersion: nodeprint.dev/v1alpha1\nkind: Scenario\nmetadata: {name: web-service}\nspec:\n  policy:\n    nodePoolRef: general-purpose\n  workloads:\n  - manifest: w.yaml\n"
	type file struct{ path, content string }
	cases := []struct {
		name string
		// files are written under the test's root; "S" is the scenario file.
		files []file
		args  []string
		// want are substrings of stderr; {root} is the test's root.
		want []string
	}{
		{"scenario: unknown field", []file{{"S", scenarioWith("    replicas: 3\n", "    replicas: 3\n    replicaz: 4\n")}}, nil, []string{"S:11: spec.workloads[0].replicaz: unknown field"}},
		{"scenario: field with the wrong case", []file{{"S", scenarioWith("    replicas: 3", "    Replicas: 3")}}, nil, []string{"S:10: spec.workloads[0].Replicas: unknown field"}},
		{"scenario: wrong type", []file{{"S", scenarioWith("replicas: 3", "replicas: three")}}, nil, []string{"S:10: spec.workloads.replicas: wrong type"}},
		{"scenario: impossible quantity", []file{{"S", scenarioWith("cpu: 500m", "cpu: abc")}}, nil, []string{"S:11: spec.workloads[0].requests.cpu: \"abc\" is not a quantity"}},
		{"scenario: negative quantity", []file{{"S", scenarioWith("memory: 1Gi", "memory: -1Gi")}}, nil, []string{"spec.workloads[0].requests.memory: \"-1Gi\" is negative"}},
		{"scenario: limit below request", []file{{"S", scenarioWith("limits: {memory: 2Gi}", "limits: {memory: 512Mi}")}}, nil, []string{"spec.workloads[0].limits.memory: limit 512Mi is below the request 1Gi"}},
		{"scenario: replicas out of range", []file{{"S", scenarioWith("replicas: 3", "replicas: 100000")}}, nil, []string{"spec.workloads[0].replicas: 100000 is out of range"}},
		{"scenario: duplicate workload", []file{{"S", goodScenario + "  - name: web\n    replicas: 1\n    requests: {cpu: 1}\n"}}, nil, []string{"spec.workloads[1].name: workload \"web\" is defined twice"}},
		{"scenario: duplicate field", []file{{"S", scenarioWith("    replicas: 3\n", "    replicas: 3\n    replicas: 4\n")}}, nil, []string{"S", "duplicate"}},
		{"scenario: dangling NodePool reference", []file{{"S", scenarioWith("nodePoolRef: general-purpose", "nodePoolRef: nope")}}, nil, []string{"S:7: spec.policy.nodePoolRef: no NodePool fixture"}},
		{"scenario: unknown catalog", []file{{"S", scenarioWith("spec:\n", "spec:\n  catalog: nope\n")}}, nil, []string{"spec.catalog: catalog \"nope\" does not exist"}},
		{"scenario: name that is a path", []file{{"S", scenarioWith("name: web-service", "name: ../../etc")}}, nil, []string{"S:4: metadata.name: \"../../etc\" is not a valid name"}},
		// Names become paths and arguments of commands: validated first.
		{"scenario: catalog that is a path", []file{{"S", scenarioWith("spec:\n", "spec:\n  catalog: ../../etc/passwd\n")}}, nil, []string{"spec.catalog: \"../../etc/passwd\" is not a catalog name"}},
		{"scenario: NodePool reference that is a path", []file{{"S", scenarioWith("nodePoolRef: general-purpose", "nodePoolRef: ../../../etc/hosts")}}, nil, []string{"S:7: spec.policy.nodePoolRef: \"../../../etc/hosts\" is not a valid reference"}},
		{"scenario: workload name with shell characters", []file{{"S", scenarioWith("- name: web", "- name: \"web;$(id)\"")}}, nil, []string{"spec.workloads[0].name: \"web;$(id)\" is not a valid name"}},
		{"scenario: bad duration", []file{{"S", scenarioWith("spec:\n", "spec:\n  settle: {quiet: soon}\n")}}, nil, []string{"S", "want a duration"}},
		{"scenario: unknown fault", []file{{"S", goodScenario + "  fault:\n    name: disk-full\n"}}, nil, []string{"S:14: spec.fault.name: unknown fault \"disk-full\""}},
		{"scenario: impossible fault parameter", []file{{"S", goodScenario + "  fault:\n    name: memory-leak\n    params: {rate: fast}\n"}}, nil, []string{"spec.fault.params.rate: \"fast\" is not a positive quantity"}},
		{"scenario: not YAML", []file{{"S", "kind: [Scenario\n"}}, nil, []string{"S:", "not valid YAML"}},
		{"scenario: empty file", []file{{"S", ""}}, nil, []string{"S: file is empty"}},
		{"scenario: non-UTF-8", []file{{"S", "kind: \xff\xfe\n"}}, nil, []string{"S: file is not valid UTF-8"}},
		{"scenario: oversized file", []file{{"S", goodScenario + "#" + strings.Repeat("x", 1<<20)}}, nil, []string{"S: file is", "more than the 1048576 allowed"}},
		{"scenario: YAML bomb", []file{{"S", yamlBomb()}}, nil, []string{"S", "not valid YAML"}},
		{"scenarios: duplicate names", []file{{"S", goodScenario}, {"other.yaml", goodScenario}}, []string{"run", "S", "{root}/other.yaml"}, []string{"web-service", "names must be unique"}},
		{"scenario: inline NodePool with an unknown field", []file{{"S", scenarioWith("    nodePoolRef: general-purpose\n", "    nodePool: {template: {spec: {requirement: []}}}\n")}}, nil, []string{"spec.policy.nodePool.template.spec.requirement: unknown field"}},
		{"NodePool fixture: unknown field", []file{{"fixtures/nodepools/general-purpose.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: general-purpose}\nspec:\n  templat: {}\n"}, {"S", goodScenario}}, nil, []string{"general-purpose.yaml:5: spec.templat: unknown field"}},
		{"NodePool fixture: not a NodePool", []file{{"fixtures/nodepools/general-purpose.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: general-purpose}\n"}, {"S", goodScenario}}, nil, []string{"general-purpose.yaml", "kind", "want a karpenter.sh/v1 NodePool"}},
		{"catalog: unknown field", []file{{"fixtures/catalogs/broken.json", `[{"name": "a", "offerings": [{"Price": 1, "Available": true, "Requirements": []}], "prise": 3}]`}, {"S", catalogScenario}}, nil, []string{"broken.json", "[0].prise: unknown field"}},
		{"catalog: negative price", []file{{"fixtures/catalogs/broken.json", `[{"name": "a", "offerings": [{"Price": -1, "Available": true, "Requirements": []}]}]`}, {"S", catalogScenario}}, nil, []string{"broken.json", "[0].offerings[0].Price: -1: a price is finite and not negative"}},
		{"catalog: impossible quantity", []file{{"fixtures/catalogs/broken.json", `[{"name": "a", "resources": {"cpu": "lots"}, "offerings": [{"Price": 1, "Available": true, "Requirements": []}]}]`}, {"S", catalogScenario}}, nil, []string{"broken.json", "[0].resources.cpu: \"lots\" is not a quantity"}},
		{"catalog: not JSON", []file{{"fixtures/catalogs/broken.json", `[{"name": `}, {"S", catalogScenario}}, nil, []string{"broken.json", "not valid JSON"}},
		{"fingerprint: unknown field", []file{{"fingerprints/web-service.yaml", fingerprintWith("runs: ", "runz: 1\nruns: ")}, {"S", goodScenario}}, []string{"verify", "S"}, []string{"fingerprints/web-service.yaml:", "runz: unknown field"}},
		{"fingerprint: schema version from the future", []file{{"fingerprints/web-service.yaml", fingerprintWith("schemaVersion: 3", "schemaVersion: 9")}, {"S", goodScenario}}, []string{"verify", "S"}, []string{"fingerprints/web-service.yaml:", "schemaVersion: 9, this nodeprint reads 1 to 3"}},
		{"fingerprint: wrong type", []file{{"fingerprints/web-service.yaml", fingerprintWith("runs: ", "runs: many\nx: ")}, {"S", goodScenario}}, []string{"verify", "S"}, []string{"fingerprints/web-service.yaml", "wrong type"}},
		{"fingerprint: non-UTF-8", []file{{"fingerprints/web-service.yaml", "scenario: \xff\n"}, {"S", goodScenario}}, []string{"verify", "S"}, []string{"fingerprints/web-service.yaml: file is not valid UTF-8"}},
		{"fingerprint: YAML bomb", []file{{"fingerprints/web-service.yaml", yamlBomb()}, {"S", goodScenario}}, []string{"verify", "S"}, []string{"fingerprints/web-service.yaml", "not valid YAML"}},
		{"fingerprint: missing", []file{{"S", scenarioWith("name: web-service", "name: never-recorded")}}, []string{"verify", "S"}, []string{"S is compared with its baseline", "no baseline", "never-recorded.yaml"}},
		{"fingerprint: missing for a plain run", []file{{"S", scenarioWith("name: web-service", "name: never-recorded")}}, []string{"run", "S"}, []string{"S is compared with its baseline", "nodeprint record"}},
		{"scenario: a workload manifest with a typo", []file{{"S", manifestScenario}, {"w.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicaz: 3\n"}}, nil,
			[]string{"spec.workloads[0].manifest", "{root}/w.yaml:5: document 1 (Deployment web): spec.replicaz: unknown field"}},
		{"scenario: a NodePool file with two NodePools, none named", []file{{"S", strings.Replace(manifestScenario, "nodePoolRef: general-purpose", "nodePoolFile: np.yaml", 1)},
			{"np.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {}\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: b}\nspec: {}\n"},
			{"w.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {}\n"}}, nil,
			[]string{"spec.policy.nodePoolFile", "holds 2 of karpenter.sh/v1 NodePool (NodePool/a, NodePool/b): name one with policy.nodePoolName"}},
		{"scenario: an unknown Karpenter setting", []file{{"S", scenarioWith("spec:\n", "spec:\n  karpenter:\n    settings: {batchWindow: 10s}\n")}}, nil, []string{"spec.karpenter.settings.batchWindow: unknown field"}},
		{"catalog from-ec2: no price file", []file{{"t.json", `{"InstanceTypes": []}`}}, []string{"catalog", "from-ec2", "{root}/t.json"}, []string{"--prices FILE is needed"}},
		{"catalog from-ec2: a price with a typo", []file{{"t.json", `{"InstanceTypes": [{"InstanceType": "m5.large"}]}`}, {"p.yaml", "zones: [us-west-2a]\nprices:\n  m5.large: {on-demnd: 0.1}\n"}},
			[]string{"catalog", "from-ec2", "{root}/t.json", "--prices", "{root}/p.yaml"}, []string{"{root}/p.yaml", "prices.m5.large.on-demnd: unknown field"}},
		{"forecast drift: a NodePool file with a typo", []file{{"np.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec:\n  templat: {}\n"}},
			[]string{"forecast", "drift", "{root}/np.yaml", "--kubeconfig", "{root}/none.yaml"}, []string{"{root}/np.yaml:5", "spec.templat: unknown field"}},
		{"forecast drift: neither cluster nor kubeconfig", []file{{"np.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {}\n"}},
			[]string{"forecast", "drift", "{root}/np.yaml"}, []string{"give either --cluster NAME (a local cluster) or --kubeconfig PATH"}},
		{"import: no kubeconfig", nil, []string{"import", "-n", "shop"}, []string{"--kubeconfig PATH is needed"}},
		{"import: a kubeconfig that does not exist", nil, []string{"import", "--kubeconfig", "{root}/none.yaml", "-n", "shop"}, []string{"{root}/none.yaml"}},
		{"flag: --parallel out of range", []file{{"S", goodScenario}}, []string{"run", "--parallel", "0", "S"}, []string{"--parallel 0 is out of range 1..32"}},
		{"flag: malformed --shard", []file{{"S", goodScenario}}, []string{"run", "--shard", "3/2", "S"}, []string{"--shard", "3/2"}},
		{"flag: unknown flag", []file{{"S", goodScenario}}, []string{"run", "--paralel", "2", "S"}, []string{"unknown flag: --paralel"}},
		{"flag: wrong type", []file{{"S", goodScenario}}, []string{"run", "--parallel", "two", "S"}, []string{"invalid argument \"two\""}},
		{"flag: a --repeat that cannot decide", []file{{"S", goodScenario}}, []string{"verify", "--repeat", "2", "S"}, []string{"fingerprints/web-service.yaml", "cannot decide", "at least 3"}},
		{"fingerprint: per-run values emptied", []file{{"fingerprints/web-service.yaml", emptiedValues(t)}, {"S", goodScenario}}, []string{"verify", "S"}, []string{"fingerprints/web-service.yaml", "timing.podReadyP50.values: missing"}},
	}
	if len(cases) < 25 {
		t.Fatalf("the issue asks for at least 25 malformed inputs, the table has %d", len(cases))
	}
	// docs/cluster.md says how many: it must be this table's.
	doc, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`badinput_test.go` + "`" + ` drives (\d+) malformed inputs`).FindSubmatch(doc); m == nil || string(m[1]) != strconv.Itoa(len(cases)) {
		t.Errorf("docs/cluster.md gives the bad-input count as %q; the table has %d", m, len(cases))
	}
	before, _ := os.ReadDir("../../.work/clusters")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := badRoot(t)
			t.Setenv("NODEPRINT_ROOT", root)
			scenarioPath := filepath.Join(root, "scenario.yaml")
			expand := func(s string) string {
				s = strings.ReplaceAll(s, "{root}", root)
				if s == "S" {
					return scenarioPath
				}
				return strings.ReplaceAll(strings.ReplaceAll(s, "S:", scenarioPath+":"), "S ", scenarioPath+" ")
			}
			for _, f := range c.files {
				p := filepath.Join(root, f.path)
				if f.path == "S" {
					p = scenarioPath
				}
				if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := c.args
			if args == nil {
				args = []string{"run", "S"}
			}
			var full []string
			for _, a := range args {
				full = append(full, expand(a))
			}
			var out, errOut bytes.Buffer
			if code := run(context.Background(), full, &out, &errOut); code != exitUsage {
				t.Fatalf("exit %d, want %d (bad input); stderr:\n%s", code, exitUsage, errOut.String())
			}
			for _, w := range c.want {
				if w = expand(w); !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut.String())
				}
			}
			if strings.Contains(errOut.String(), "panic") || strings.Contains(errOut.String(), "goroutine ") {
				t.Errorf("a panic reached the user:\n%s", errOut.String())
			}
			if _, err := os.Stat(filepath.Join(root, ".work")); err == nil {
				t.Errorf("a work directory appeared under %s: something was started", root)
			}
		})
	}
	// The checkout's clusters are shared with other test packages and
	// suites running beside this one: only a directory named for this
	// process (a cluster the in-process CLI started) is this test's.
	after, _ := os.ReadDir("../../.work/clusters")
	had := map[string]bool{}
	for _, e := range before {
		had[e.Name()] = true
	}
	mine := "-" + strconv.Itoa(os.Getpid())
	for _, e := range after {
		if !had[e.Name()] && strings.Contains(e.Name(), mine) {
			t.Fatalf("a cluster directory appeared: %s", e.Name())
		}
	}
}

// emptiedValues is the committed web-service baseline with the per-run
// values of its pod-ready p50 emptied and its median kept.
func emptiedValues(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../fingerprints/web-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)(podReadyP50:\n\s+median: [0-9.]+\n\s+values:)\n(\s+- [0-9.]+\n)+`)
	out := re.ReplaceAllString(string(b), "$1 []\n")
	if out == string(b) {
		t.Fatal("fingerprints/web-service.yaml: podReadyP50's values not found")
	}
	return out
}
