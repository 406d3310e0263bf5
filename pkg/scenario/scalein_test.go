package scenario

import (
	"strings"
	"testing"
	"time"
)

const scaleIn = `apiVersion: nodeprint.dev/v1alpha1
kind: Scenario
metadata:
  name: shrink
spec:
  policy:
    nodePoolRef: general-purpose
    disruption:
      consolidationPolicy: WhenEmptyOrUnderutilized
      consolidateAfter: 20s
      budgets:
      - nodes: "50%"
  workloads:
  - name: web
    replicas: 6
    requests: {cpu: "1", memory: 1Gi}
  - name: batch
    replicas: 2
    requests: {cpu: "2", memory: 4Gi}
  scaleIn:
    steps:
    - scale: {workload: web, replicas: 2}
    - after: 10s
      remove: batch
`

func TestScaleInLoads(t *testing.T) {
	s, err := loader(t).Load(write(t, scaleIn))
	if err != nil {
		t.Fatal(err)
	}
	d := s.NodePool.Spec.Disruption
	if d.ConsolidateAfter.Duration == nil || *d.ConsolidateAfter.Duration != 20*time.Second || len(d.Budgets) != 1 || d.Budgets[0].Nodes != "50%" {
		t.Fatalf("policy.disruption not applied to the NodePool: %+v", d)
	}
	si := s.Spec.ScaleIn
	if got, want := si.Settle.Quiet.Duration, DefaultScaleInQuiet+20*time.Second; got != want {
		t.Errorf("default quiet = %s, want consolidateAfter + %s = %s", got, DefaultScaleInQuiet, want)
	}
	if si.Settle.Timeout.Duration != DefaultScaleInTimeout {
		t.Errorf("default timeout = %s", si.Settle.Timeout.Duration)
	}
	if len(si.Steps) != 2 || *si.Steps[0].Scale.Replicas != 2 || si.Steps[1].Remove != "batch" || si.Steps[1].After.Duration != 10*time.Second {
		t.Errorf("steps = %+v", si.Steps)
	}
}

// The fixture the policy came from keeps its own disruption block: the
// override is the run's copy only.
func TestDisruptionOverrideLeavesFixture(t *testing.T) {
	l := loader(t)
	if _, err := l.Load(write(t, scaleIn)); err != nil {
		t.Fatal(err)
	}
	s, err := l.Load(write(t, valid))
	if err != nil {
		t.Fatal(err)
	}
	if s.NodePool.Spec.Disruption.ConsolidateAfter.Duration != nil {
		t.Fatalf("another scenario's override leaked into the fixture: %+v", s.NodePool.Spec.Disruption)
	}
}

func TestScaleInBadInput(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown workload", "workload: web, replicas: 2", "workload: api, replicas: 2", `spec.scaleIn.steps[0]: workload "api" is not one of the scenario's`},
		{"replicas missing", "workload: web, replicas: 2", "workload: web", `spec.scaleIn.steps[0].scale.replicas: set the replicas`},
		{"negative replicas", "replicas: 2}", "replicas: -1}", `spec.scaleIn.steps[0].scale.replicas: -1 is out of range`},
		{"two actions", "    - scale: {workload: web, replicas: 2}\n", "    - scale: {workload: web, replicas: 2}\n      remove: web\n", `spec.scaleIn.steps[0]: set one of scale`},
		{"no action", "    - scale: {workload: web, replicas: 2}\n", "    - after: 5s\n", `spec.scaleIn.steps[0]: set one of scale`},
		{"removed twice", "    - scale: {workload: web, replicas: 2}\n", "    - remove: batch\n", `spec.scaleIn.steps[1]: workload "batch" was removed by an earlier step`},
		{"no steps", "    steps:\n    - scale: {workload: web, replicas: 2}\n    - after: 10s\n      remove: batch\n", "    steps: []\n", `spec.scaleIn.steps: at least one step`},
		{"unknown step field", "remove: batch", "remove: batch\n      drain: true", `spec.scaleIn.steps[1].drain: unknown field`},
		{"bad after", "after: 10s", "after: soon", `:23: spec.scaleIn.steps[1].after: want a duration`},
		{"bad policy", "consolidationPolicy: WhenEmptyOrUnderutilized", "consolidationPolicy: Always", `spec.policy.disruption.consolidationPolicy: want WhenEmpty`},
		{"bad budget nodes", `nodes: "50%"`, `nodes: "half"`, `spec.policy.disruption.budgets[0].nodes: "half" is not a node count`},
		{"schedule without duration", `nodes: "50%"`, `nodes: "0"` + "\n        schedule: \"0 9 * * *\"", `spec.policy.disruption.budgets[0]: set schedule and duration together`},
		{"bad schedule", `nodes: "50%"`, `nodes: "0"` + "\n        schedule: \"at nine\"\n        duration: 1h", `spec.policy.disruption.budgets[0].schedule: "at nine" is not a cron schedule`},
		{"bad reason", `nodes: "50%"`, `nodes: "1"` + "\n        reasons: [Expired]", `spec.policy.disruption.budgets[0].reasons[0]: want Empty, Underutilized or Drifted`},
		{"quiet too long", "      remove: batch\n", "      remove: batch\n    settle: {quiet: 2h}\n", `spec.scaleIn.settle.quiet: 2h0m0s is longer than 30m0s`},
		{"edit with an unknown field", "      remove: batch\n", "      nodePool: {template: {metadata: {lables: {a: b}}}}\n", `spec.scaleIn.steps[1].nodePool: the NodePool's spec after the edit is not valid: json: unknown field "lables"`},
		{"edit of the node class", "      remove: batch\n", "      nodePool: {template: {spec: {nodeClassRef: {name: mine}}}}\n", `spec.scaleIn.steps[1].nodePool.template.spec.nodeClassRef: the node class is the run's own`},
		{"edit to a bad budget", "      remove: batch\n", "      nodePool: {disruption: {budgets: [{nodes: lots}]}}\n", `spec.scaleIn.steps[1].nodePool.disruption.budgets[0].nodes: "lots" is not a node count`},
		{"empty edit", "      remove: batch\n", "      nodePool: {}\n", `spec.scaleIn.steps[1].nodePool: an empty edit changes nothing`},
		{"interrupt no node", "      remove: batch\n", "      interrupt: {nodes: 0}\n", `spec.scaleIn.steps[1].interrupt.nodes: 0 is out of range 1..100`},
		{"edit and remove", "      remove: batch\n", "      remove: batch\n      nodePool: {limits: {cpu: \"8\"}}\n", `spec.scaleIn.steps[1]: set one of scale`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(scaleIn, c.old) {
				t.Fatalf("the case's old text %q is not in the scenario", c.old)
			}
			_, err := loader(t).Load(write(t, strings.Replace(scaleIn, c.old, c.new, 1)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}

func TestScaleInOfHPAWorkload(t *testing.T) {
	in := strings.Replace(scaleIn, "    requests: {cpu: \"1\", memory: 1Gi}\n", "    requests: {cpu: \"1\", memory: 1Gi}\n    hpa: {minReplicas: 2, maxReplicas: 8, cpuUtilization: 50}\n", 1)
	_, err := loader(t).Load(write(t, in))
	if err == nil || !strings.Contains(err.Error(), `spec.scaleIn.steps[0].scale: workload "web" has an HPA`) {
		t.Fatalf("want the HPA refusal, got %v", err)
	}
}

func TestCommittedScaleInScenariosLoad(t *testing.T) {
	ss, err := loader(t).LoadDir("../../fixtures/scenarios/scale-in")
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) == 0 {
		t.Fatal("no committed scale-in scenario")
	}
	for _, s := range ss {
		if s.Spec.ScaleIn == nil {
			t.Errorf("%s: in scale-in/ without a scale-in", s.Metadata.Name)
		}
	}
}

func TestNodePoolEditStep(t *testing.T) {
	in := strings.Replace(scaleIn, "      remove: batch\n", "      nodePool: {template: {metadata: {labels: {generation: \"2\"}}, spec: {expireAfter: 1h}}}\n", 1)
	s, err := loader(t).Load(write(t, in))
	if err != nil {
		t.Fatal(err)
	}
	edited, err := EditNodePool(s.NodePool.Spec, s.Spec.ScaleIn.Steps[1].NodePool)
	if err != nil {
		t.Fatal(err)
	}
	if edited.Template.Labels["generation"] != "2" || edited.Template.Spec.ExpireAfter.Duration == nil || *edited.Template.Spec.ExpireAfter.Duration != time.Hour {
		t.Fatalf("edit not applied: labels %v, expireAfter %v", edited.Template.Labels, edited.Template.Spec.ExpireAfter)
	}
	if len(edited.Template.Spec.Requirements) != len(s.NodePool.Spec.Template.Spec.Requirements) {
		t.Fatalf("a merge patch keeps what it does not name: requirements %v", edited.Template.Spec.Requirements)
	}
}

// Karpenter notices a lost instance on its 2-minute garbage collection:
// a scale-in that interrupts nodes waits at least that long by default.
func TestInterruptQuiet(t *testing.T) {
	in := strings.Replace(scaleIn, "      remove: batch\n", "      interrupt: {nodes: 1}\n", 1)
	s, err := loader(t).Load(write(t, in))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Spec.ScaleIn.Settle.Quiet.Duration; got != InterruptQuiet {
		t.Fatalf("default quiet with an interrupt step = %s, want %s", got, InterruptQuiet)
	}
}
