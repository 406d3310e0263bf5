package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func loader(t *testing.T) *Loader {
	t.Helper()
	return &Loader{FixturesDir: "../../fixtures", GenericCatalog: "/nonexistent/generic.json"}
}

func write(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const valid = `apiVersion: nodeprint.dev/v1alpha1
kind: Scenario
metadata:
  name: ok
spec:
  policy:
    nodePoolRef: general-purpose
  workloads:
  - name: web
    replicas: 3
    requests: {cpu: 500m, memory: 1Gi}
`

func TestCommittedScenariosLoad(t *testing.T) {
	ss, err := loader(t).LoadDir("../../fixtures/scenarios")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) < 8 {
		t.Fatalf("want at least eight committed scenarios, got %d", len(ss))
	}
	for _, s := range ss {
		if s.NodePool == nil || len(s.NodePool.Spec.Template.Spec.Requirements) == 0 {
			t.Errorf("%s: policy not resolved", s.Metadata.Name)
		}
	}
}

func TestDefaults(t *testing.T) {
	s, err := loader(t).Load(write(t, valid))
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Catalog != DefaultCatalog || s.CatalogPath != "/nonexistent/generic.json" || s.Spec.Baseline.Runs != DefaultRuns ||
		s.Spec.Settle.Quiet.Duration != DefaultQuietPeriod || s.Spec.Settle.Timeout.Duration != DefaultSettleTimeout {
		t.Fatalf("defaults not applied: %+v", s.Spec)
	}
}

// Each bad input must name the field path and the line.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown field", "    replicas: 3\n", "    replicas: 3\n    replicaz: 4\n", `:11: spec.workloads[0].replicaz: unknown field`},
		{"field with wrong case", "    replicas: 3\n", "    Replicas: 3\n", `spec.workloads[0].Replicas: unknown field`},
		{"bad quantity", "cpu: 500m", "cpu: abc", `:11: spec.workloads[0].requests.cpu: "abc" is not a quantity`},
		{"negative quantity", "memory: 1Gi", "memory: -1Gi", `spec.workloads[0].requests.memory: "-1Gi" is negative`},
		{"dangling nodepool", "nodePoolRef: general-purpose", "nodePoolRef: nope", `:7: spec.policy.nodePoolRef: no NodePool fixture`},
		{"invalid name", "name: ok", "name: Not_OK", `:4: metadata.name: "Not_OK" is not a valid name`},
		{"wrong type", "replicas: 3", "replicas: three", `:10: spec.workloads.replicas: wrong type: want int32`},
		{"wrong kind", "kind: Scenario", "kind: Scenery", `:2: kind: want "Scenario"`},
		{"no workloads", "  workloads:\n  - name: web\n    replicas: 3\n    requests: {cpu: 500m, memory: 1Gi}\n", "  workloads: []\n", `spec.workloads: at least one workload`},
		{"missing requests", "    requests: {cpu: 500m, memory: 1Gi}\n", "", `spec.workloads[0].requests: requests are needed`},
		{"limit below request", "    requests: {cpu: 500m, memory: 1Gi}\n", "    requests: {cpu: 500m, memory: 1Gi}\n    limits: {memory: 512Mi}\n", `spec.workloads[0].limits.memory: limit 512Mi is below the request 1Gi`},
		{"too many replicas", "replicas: 3", "replicas: 100000", `spec.workloads[0].replicas: 100000 is out of range`},
		{"unknown catalog", "spec:\n", "spec:\n  catalog: nope\n", `spec.catalog: catalog "nope" does not exist`},
		{"bad duration", "spec:\n", "spec:\n  settle: {quiet: soon}\n", `want a duration`},
		{"both policies", "    nodePoolRef: general-purpose\n", "    nodePoolRef: general-purpose\n    nodePool: {template: {spec: {requirements: []}}}\n", `spec.policy: set one of nodePoolRef, nodePoolFile and nodePool`},
		{"duplicate workload", "    requests: {cpu: 500m, memory: 1Gi}\n", "    requests: {cpu: 500m, memory: 1Gi}\n  - name: web\n    replicas: 1\n    requests: {cpu: 1}\n", `spec.workloads[1].name: workload "web" is defined twice`},
		{"unknown field in inline NodePool", "    nodePoolRef: general-purpose\n", "    nodePool: {template: {spec: {requirement: []}}}\n", `spec.policy.nodePool.template.spec.requirement: unknown field`},
		{"not yaml", "kind: Scenario", "kind: [Scenario", `not valid YAML`},
		{"hpa without target", "    replicas: 3\n", "    replicas: 3\n    hpa: {minReplicas: 1, maxReplicas: 3}\n", `spec.workloads[0].hpa: set cpuUtilization or memoryUtilization`},
		{"pdb with both bounds", "    replicas: 3\n", "    replicas: 3\n    pdb: {minAvailable: 1, maxUnavailable: 1}\n", `spec.workloads[0].pdb: set exactly one of minAvailable and maxUnavailable`},
		{"pdb without a bound", "    replicas: 3\n", "    replicas: 3\n    pdb: {}\n", `spec.workloads[0].pdb: set exactly one of minAvailable and maxUnavailable`},
		{"pdb with a negative count", "    replicas: 3\n", "    replicas: 3\n    pdb: {maxUnavailable: -1}\n", `spec.workloads[0].pdb.maxUnavailable: -1 is negative`},
		{"pdb with a bad percentage", "    replicas: 3\n", "    replicas: 3\n    pdb: {minAvailable: \"150%\"}\n", `spec.workloads[0].pdb.minAvailable: "150%" is neither a count nor a percentage`},
		{"pdb with a word", "    replicas: 3\n", "    replicas: 3\n    pdb: {minAvailable: most}\n", `spec.workloads[0].pdb.minAvailable: "most" is neither a count nor a percentage`},
		{"pdb with an unknown field", "    replicas: 3\n", "    replicas: 3\n    pdb: {maxUnavailable: 1, selector: {}}\n", `:11: spec.workloads[0].pdb.selector: unknown field`},
		{"usage of a resource that cannot be simulated", "    replicas: 3\n", "    replicas: 3\n    usage: {gpu: \"1\"}\n", `spec.workloads[0].usage.gpu: only cpu and memory`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(valid, c.old) {
				t.Fatalf("test bug: %q not in the valid scenario", c.old)
			}
			path := write(t, strings.Replace(valid, c.old, c.new, 1))
			_, err := loader(t).Load(path)
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q\nshould name the file and contain %q", err, c.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a *FieldError, got %T", err)
			}
		})
	}
}

func TestOversizedAndBinaryFiles(t *testing.T) {
	big := write(t, valid+"#"+strings.Repeat("x", MaxFileSize))
	if _, err := loader(t).Load(big); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("oversized: got %v", err)
	}
	bin := write(t, "kind: \xff\xfe\n")
	if _, err := loader(t).Load(bin); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Fatalf("non-UTF-8: got %v", err)
	}
}

func TestDuplicateScenarioNames(t *testing.T) {
	a, b := write(t, valid), write(t, valid)
	if _, err := loader(t).LoadFiles(a, b); err == nil || !strings.Contains(err.Error(), "names must be unique") {
		t.Fatalf("want a duplicate-name error, got %v", err)
	}
}

func TestZonesMatter(t *testing.T) {
	for name, want := range map[string]bool{"zone-spread": true, "web-service": false, "burst-1000": false, "mixed-arch": false} {
		s, err := loader(t).Load("../../fixtures/scenarios/" + name + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ZonesMatter(); got != want {
			t.Errorf("%s: ZonesMatter = %v, want %v", name, got, want)
		}
	}
}

func TestFaultBlock(t *testing.T) {
	l := loader(t)
	var seen *Fault
	l.ValidateFault = func(f *Fault, add func(field, msg string, args ...any)) {
		seen = f
		if f.Params["rate"] == "fast" {
			add("spec.fault.params.rate", "not a quantity")
		}
	}
	s, err := l.Load(write(t, valid+"  fault:\n    name: memory-leak\n    params: {rate: 20Mi, hpa: true, count: 3}\n    expect: {layer: L3, rule: L3-oom-killed}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || s.Spec.Fault.Window.Duration != DefaultFaultWindow {
		t.Fatalf("validator not called or window not defaulted: %+v", s.Spec.Fault)
	}
	if p := s.Spec.Fault.Params; p["rate"] != "20Mi" || p["hpa"] != "true" || p["count"] != "3" {
		t.Errorf("params should accept strings, booleans and numbers: %v", p)
	}
	for doc, want := range map[string]string{
		"  fault:\n    name: memory-leak\n    params: {rate: fast}\n": "s.yaml:14: spec.fault.params.rate: not a quantity",
		"  fault:\n    name: x\n    expect: {layer: L4}\n":            "s.yaml:14: spec.fault.expect.layer: want L1, L2 or L3",
		"  fault:\n    params: {a: b}\n":                              "spec.fault.name: name a fault",
		"  fault:\n    name: x\n    window: 2h\n":                     "spec.fault.window: 2h0m0s is longer than the 30m",
		"  fault:\n    name: x\n    colour: red\n":                    "spec.fault.colour: unknown field",
	} {
		_, err := l.Load(write(t, valid+doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", doc, err, want)
		}
	}
}
