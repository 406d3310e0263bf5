package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// These cases need no cluster: they fail before anything starts.
func TestExitCodes(t *testing.T) {
	t.Setenv("NODEPRINT_ROOT", "../..")
	cases := []struct {
		args    []string
		code    int
		message string
	}{
		{[]string{"cluster", "up", "--name", "Bad_Name"}, exitUsage, "invalid cluster name"},
		{[]string{"cluster", "up", "--name", strings.Repeat("a", 41)}, exitUsage, "invalid cluster name"},
		{[]string{"cluster", "up", "--nmae", "x"}, exitUsage, "unknown flag"},
		{[]string{"cluster", "status", "--provider", "eks"}, exitUsage, "unknown cluster provider"},
		{[]string{"cluster", "up", "--provider", "kind"}, exitUsage, "not implemented yet"},
		{[]string{"cluster", "down", "--provider", "existing"}, exitUsage, "not implemented yet"},
		{[]string{"cluster", "restart", "etcd"}, exitUsage, "only karpenter"},
		{[]string{"cluster", "restart"}, exitUsage, "accepts 1 arg"},
		{[]string{"frobnicate"}, exitUsage, "unknown command"},
		{[]string{"cluster", "kubeconfig", "--name", "never-started-xyz"}, exitEnvironment, "no cluster named"},
		{[]string{"cluster", "status", "--name", "never-started-xyz"}, exitEnvironment, "no cluster named"},
		{[]string{"cluster", "down", "--name", "never-started-xyz"}, exitOK, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(context.Background(), c.args, &out, &errOut)
			if got != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, c.code, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.message) {
				t.Fatalf("stderr %q does not say %q", errOut.String(), c.message)
			}
		})
	}
}
