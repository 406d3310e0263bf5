//go:build !karpenter_v115

package main

import (
	"context"

	"github.com/awslabs/operatorpkg/controller"

	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

// newControllers wires the controllers as kwok/main.go does in v1.14.x.
func newControllers(ctx context.Context, op *operator.Operator, cloudProvider, overlayUndecoratedCloudProvider cloudprovider.CloudProvider) []controller.Controller {
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider)
	return controllers.NewControllers(
		ctx,
		op.Manager,
		op.Clock,
		op.GetClient(),
		op.EventRecorder,
		cloudProvider,
		overlayUndecoratedCloudProvider,
		clusterState,
		op.InstanceTypeStore,
	)
}
