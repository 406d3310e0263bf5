package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Lines as kwokctl v0.8 writes them (trimmed of source fields); a line of
// an earlier command before the offset and a line that is not JSON are
// skipped.
const kwokctlLog = `{"msg":"Cluster is created","elapsed":{"nanosecond":5000000000}}
{"msg":"Cluster is creating","cluster":"np"}
{"msg":"Cluster is created","cluster":"np","elapsed":{"nanosecond":897045795,"human":"897.045795ms"}}
{"msg":"Cluster is starting","cluster":"np"}
{"msg":"Cluster is started","cluster":"np","elapsed":{"nanosecond":2359840424,"human":"2.359840424s"}}
not json
{"msg":"Load resources","cluster":"np","crds":["Stage"],"counter":4,"elapsed":{"nanosecond":259097124}}
{"msg":"Load resources","cluster":"np","counter":2,"elapsed":{"nanosecond":70661936}}
{"msg":"Waiting for cluster to be ready","cluster":"np"}
{"msg":"Cluster is ready","cluster":"np","elapsed":{"nanosecond":1619514120}}
`

func TestKwokctlSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kwokctl.log")
	if err := os.WriteFile(path, []byte(kwokctlLog), 0o600); err != nil {
		t.Fatal(err)
	}
	first := int64(len(`{"msg":"Cluster is created","elapsed":{"nanosecond":5000000000}}` + "\n"))
	var got []string
	for _, e := range kwokctlSteps(path, first) {
		got = append(got, e.Phase+" "+e.Elapsed.String())
	}
	want := []string{
		"control-plane.create " + (897045795 * time.Nanosecond).String(),
		"control-plane.start " + (2359840424 * time.Nanosecond).String(),
		"control-plane.kwok-crds " + ((259097124 + 70661936) * time.Nanosecond).String(),
		"control-plane.ready " + (1619514120 * time.Nanosecond).String(),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	if steps := kwokctlSteps(filepath.Join(t.TempDir(), "missing.log"), 0); steps != nil {
		t.Fatalf("an unreadable log gives no steps, got %v", steps)
	}
}
