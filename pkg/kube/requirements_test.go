package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func req(key string, op corev1.NodeSelectorOperator, vals ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: vals}
}

func TestNodeSatisfies(t *testing.T) {
	labels := map[string]string{"arch": "amd64", "cpu": "16", "ct": "on-demand"}
	cases := []struct {
		name    string
		req     karpv1.NodeSelectorRequirementWithMinValues
		wantErr string
	}{
		{"in", req("arch", corev1.NodeSelectorOpIn, "amd64", "arm64"), ""},
		{"in, other value", req("arch", corev1.NodeSelectorOpIn, "arm64"), "the node has arch=amd64"},
		{"in, no label", req("zone", corev1.NodeSelectorOpIn, "a"), "the node has no label zone"},
		{"not in", req("ct", corev1.NodeSelectorOpNotIn, "spot"), ""},
		{"not in, listed", req("ct", corev1.NodeSelectorOpNotIn, "on-demand"), "the node has ct=on-demand"},
		{"not in, no label", req("zone", corev1.NodeSelectorOpNotIn, "a"), ""},
		{"exists", req("cpu", corev1.NodeSelectorOpExists), ""},
		{"exists, no label", req("gpu", corev1.NodeSelectorOpExists), "no label gpu"},
		{"does not exist", req("gpu", corev1.NodeSelectorOpDoesNotExist), ""},
		{"does not exist, present", req("cpu", corev1.NodeSelectorOpDoesNotExist), "cpu=16"},
		{"gt", req("cpu", corev1.NodeSelectorOpGt, "8"), ""},
		{"gt, equal", req("cpu", corev1.NodeSelectorOpGt, "16"), "cpu=16"},
		{"lt", req("cpu", corev1.NodeSelectorOpLt, "32"), ""},
		{"lt, not a number", req("arch", corev1.NodeSelectorOpLt, "32"), "arch=amd64"},
		{"unknown operator", req("cpu", "Near", "1"), "unknown operator"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := NodeSatisfies(labels, []karpv1.NodeSelectorRequirementWithMinValues{c.req})
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("want no error, got %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("want an error containing %q, got %v", c.wantErr, err)
			}
		})
	}
}
