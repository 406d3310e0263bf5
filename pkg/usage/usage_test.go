package usage

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const metrics = `# HELP client_go_request_total Number of HTTP requests, partitioned by status code and method.
# TYPE client_go_request_total counter
client_go_request_total{code="200",method="GET"} 25
client_go_request_total{code="403",method="POST"} 282
client_go_request_total{code="<error>",method="GET"} 7
client_go_request_total{code="503",method="PATCH"} 2
client_go_request_total{code="429",method="GET"} 1
client_go_request_duration_seconds_sum{group="",kind="nodes",subresource="",verb="GET",version="v1"} 1.5
client_go_request_duration_seconds_sum{group="",kind="pods",subresource="",verb="GET",version="v1"} 0.5
client_go_request_duration_seconds_count{group="",kind="nodes",subresource="",verb="GET",version="v1"} 6
client_go_request_duration_seconds_count{group="",kind="pods",subresource="eviction",verb="POST",version="v1"} 4
client_go_request_duration_seconds_bucket{group="",kind="pods",subresource="",verb="GET",version="v1",le="0.001"} 1
controller_runtime_reconcile_total{controller="nodeclaim.lifecycle",result="success"} 40
controller_runtime_reconcile_total{controller="provisioner",result="requeue_after"} 2
process_cpu_seconds_total 12.5
process_resident_memory_bytes 1.2e+08
process_start_time_seconds 1.7e+09
weird{a="x,y",b="q\"z"} 3
`

func TestParse(t *testing.T) {
	s, err := Parse(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	// 403 is an eviction refused by a PodDisruptionBudget: the API working.
	want := Sample{CPUSeconds: 12.5, RSSBytes: 1.2e8, StartSeconds: 1.7e9, Total: 317, Failed: 10, RequestSeconds: 2, Reconciles: 42,
		Requests: map[string]float64{"GET nodes": 6, "POST pods/eviction": 4}}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
}

func TestSince(t *testing.T) {
	before := Sample{CPUSeconds: 10, RSSBytes: 1e8, StartSeconds: 5, ReadSeconds: 7.34, Total: 300, Failed: 4, RequestSeconds: 1, Reconciles: 2,
		Requests: map[string]float64{"GET nodes": 2}}
	after := Sample{CPUSeconds: 12.5, RSSBytes: 0.9e8, StartSeconds: 5, Total: 317, Failed: 10, RequestSeconds: 2, Reconciles: 42,
		Requests: map[string]float64{"GET nodes": 6, "POST pods/eviction": 4}}
	want := Usage{CPUSeconds: 2.5, PeakRSSBytes: 1e8, Requests: map[string]int{"GET nodes": 4, "POST pods/eviction": 4}, RequestsTotal: 8,
		Failed: 6, MeanLatencyMs: 125, Reconciles: 40, UptimeSeconds: 2.3}
	if d := cmp.Diff(want, after.Since(before)); d != "" {
		t.Errorf("Since (-want +got):\n%s", d)
	}
	// A restart starts the counters again: the new process's own are the usage.
	restarted := after
	restarted.StartSeconds = 9
	u := restarted.Since(before)
	if !u.Restarted || u.CPUSeconds != 12.5 || u.RequestsTotal != 10 || u.UptimeSeconds != 0 {
		t.Errorf("after a restart: %+v, want the new process's counters, marked restarted, no uptime at the window's start", u)
	}
	if got := u.Top(1); len(got) != 1 || got[0] != "GET nodes: 6" {
		t.Errorf("Top(1) = %v", got)
	}
}

func TestDecisions(t *testing.T) {
	before, err := Parse(strings.NewReader(`process_start_time_seconds 100
karpenter_voluntary_disruption_decisions_total{consolidation_type="empty",decision="delete",reason="empty"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReader(`process_start_time_seconds 100
karpenter_voluntary_disruption_decisions_total{consolidation_type="empty",decision="delete",reason="empty"} 3
karpenter_voluntary_disruption_decisions_total{consolidation_type="multi",decision="delete",reason="underutilized"} 1
karpenter_voluntary_disruption_decisions_total{consolidation_type="",decision="replace",reason="drifted"} 0
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"delete/empty/empty": 1, "delete/underutilized/multi": 1}
	if diff := cmp.Diff(want, after.DecisionsSince(before)); diff != "" {
		t.Fatalf("decisions (-want +got):\n%s", diff)
	}
	restarted := after
	restarted.StartSeconds = 200
	if got := restarted.DecisionsSince(before); got != nil {
		t.Fatalf("a restarted Karpenter's decisions are unknown, got %v", got)
	}
	if got := (Sample{}).DecisionsSince(Sample{}); got != nil {
		t.Fatalf("a Karpenter without the metric has no decisions, got %v", got)
	}
}

func TestRemoved(t *testing.T) {
	before, _ := Parse(strings.NewReader(`process_start_time_seconds 100
karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="run-a",reason="expired"} 2
`))
	after, _ := Parse(strings.NewReader(`process_start_time_seconds 100
karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="run-a",reason="expired"} 5
karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="run-a",reason="expired"} 1
karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="run-b",reason="drifted"} 4
`))
	if diff := cmp.Diff(map[string]int{"expired": 4}, after.RemovedSince(before, "run-a")); diff != "" {
		t.Fatalf("run-a's removals (-want +got):\n%s", diff)
	}
	if got := after.RemovedSince(before, "run-c"); len(got) != 0 {
		t.Fatalf("another NodePool's removals are not the run's: %v", got)
	}
}
