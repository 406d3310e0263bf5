package run

import (
	"bufio"
	"strings"
	"testing"
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
client_go_request_duration_seconds_count{group="",kind="pods",subresource="",verb="GET",version="v1"} 4
`

func TestParseAPIStatsCountsOnlyServerFailures(t *testing.T) {
	s, err := parseAPIStats(bufio.NewScanner(strings.NewReader(metrics)))
	if err != nil {
		t.Fatal(err)
	}
	// 403 is an eviction refused by a PodDisruptionBudget: the API working.
	if s.errors != 10 || s.requests != 317 || s.seconds != 2 {
		t.Fatalf("got %+v, want 10 errors of 317 requests, 2 s", s)
	}
	before := apiStats{errors: 4, requests: 300, seconds: 1}
	if d := s.since(before); d.errors != 6 || d.requests != 17 || d.seconds != 1 {
		t.Errorf("since: got %+v", d)
	}
	if d := s.since(apiStats{requests: 1000}); d != s {
		t.Errorf("after a restart the counters start again: got %+v, want %+v", d, s)
	}
}
