package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// Secrets in the places a cluster quotes them.
		{`Failed to pull image: unauthorized: Authorization: Bearer abcdefghijklmnop.qrs`, `Failed to pull image: unauthorized: Authorization: Bearer [REDACTED]`},
		{`basic ZGV2OnMzY3IzdHBhc3N3b3Jk`, `basic [REDACTED]`},
		{`token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl used`, `token [REDACTED] used`},
		{`container env DB_PASSWORD=hunter22 and API_KEY: abc123`, `container env DB_PASSWORD=[REDACTED] and API_KEY: [REDACTED]`},
		{`{"password":"hunter22","user":"app"}`, `{"password":"[REDACTED]","user":"app"}`},
		{`{"name":"DB_PASSWORD","value":"hunter22"}`, `{"name":"DB_PASSWORD","value":"[REDACTED]"}`},
		{`--client-secret s3cr3t --v=2`, `--client-secret [REDACTED] --v=2`},
		{`AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG key AKIAIOSFODNN7EXAMPLE`, `AWS_SECRET_ACCESS_KEY=[REDACTED] key [REDACTED]`},
		{"key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nafter", "key:\n[REDACTED]\nafter"},
		{`DB_URL=postgres://app:s3cret@db:5432/app`, `DB_URL=postgres://app:[REDACTED]@db:5432/app`},
		// What the harness writes every day stays as it is.
		{`Get "https://127.0.0.1:32764/readyz?timeout=3s": dial tcp 127.0.0.1:32764: connect: connection refused`, `Get "https://127.0.0.1:32764/readyz?timeout=3s": dial tcp 127.0.0.1:32764: connect: connection refused`},
		{`secret "db-creds" not found`, `secret "db-creds" not found`},
		{`0/3 nodes are available: 3 Insufficient cpu`, `0/3 nodes are available: 3 Insufficient cpu`},
		{`launched nodeclaim web-abcde, instance-type c-4x-amd64-linux, zone test-zone-a, capacity-type on-demand`, `launched nodeclaim web-abcde, instance-type c-4x-amd64-linux, zone test-zone-a, capacity-type on-demand`},
		{`karpenter exited (pid 6991; its log: .work/clusters/np-1/logs/karpenter.log)`, `karpenter exited (pid 6991; its log: .work/clusters/np-1/logs/karpenter.log)`},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestValueMasksEveryStringAndKeepsTheRest(t *testing.T) {
	type inner struct {
		Message string   `json:"message"`
		Count   int      `json:"count"`
		Tags    []string `json:"tags"`
	}
	type outer struct {
		Name   string           `json:"name"`
		Events []inner          `json:"events"`
		ByKey  map[string]inner `json:"byKey"`
	}
	in := outer{Name: "run-1", Events: []inner{{Message: "token=abc123", Count: 3, Tags: []string{"Bearer abcdefghijkl"}}},
		ByKey: map[string]inner{"password=x": {Message: "ok", Count: 1}}}
	got, err := Value(in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Events[0].Message != "token=[REDACTED]" || got.Events[0].Tags[0] != "Bearer [REDACTED]" || got.Events[0].Count != 3 || got.Name != "run-1" {
		t.Fatalf("got %+v", got)
	}
	// Keys are names, not values: kept.
	if _, ok := got.ByKey["password=x"]; !ok {
		t.Fatalf("map keys must stay: %+v", got.ByKey)
	}
	if strings.Contains(in.Events[0].Message, Mask) {
		t.Fatal("Value must not change its argument")
	}
}
