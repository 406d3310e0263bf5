package run

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeprint/nodeprint/pkg/scenario"
)

func TestInputsIgnoreTheRunButNotTheInputs(t *testing.T) {
	s := load(t, "web-service")
	a, err := Build(s, "web-service-aaaaa")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(s, "web-service-bbbbb")
	if err != nil {
		t.Fatal(err)
	}
	ia, ib := inputsOf(a), inputsOf(b)
	if ia.Policy != ib.Policy || ia.NodeClass != ib.NodeClass || ia.Workloads["web"] != ib.Workloads["web"] {
		t.Fatalf("two runs of one scenario must hash the same: %+v vs %+v", ia, ib)
	}
	b.NodePool.Spec.Limits = map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("4")}
	b.Deployments[0].Spec.Template.Spec.Containers[0].Image = "example.com/other:v2"
	ib = inputsOf(b)
	if ia.Policy == ib.Policy || ia.Workloads["web"] == ib.Workloads["web"] || ia.NodeClass != ib.NodeClass {
		t.Fatalf("changed inputs must hash differently, unchanged ones the same: %+v vs %+v", ia, ib)
	}
}

func TestPreflightCatchesFaultsThatCannotBind(t *testing.T) {
	s := load(t, "web-service")
	s.CatalogPath = "../../fixtures/catalogs/aws-small.json"
	s.Spec.Workloads[0].Limits = nil
	s.Spec.Fault = &scenario.Fault{Name: "memory-leak"}
	if err := Preflight(context.Background(), s); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("a leak without a memory limit: got %v", err)
	}
	s.Spec.Fault = &scenario.Fault{Name: "nodepool-mismatch"}
	if err := Preflight(context.Background(), s); err != nil {
		t.Fatalf("a fault that binds: %v", err)
	}
}
