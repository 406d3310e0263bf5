//go:build karpenter_v115

package main

import (
	"context"

	"github.com/awslabs/operatorpkg/controller"
	"github.com/samber/lo"

	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

// newControllers wires the controllers as kwok/main.go does in v1.15.x:
// the cluster state takes a repair-policy matcher and the controllers the
// operator's prediction store.
func newControllers(ctx context.Context, op *operator.Operator, cloudProvider, overlayUndecoratedCloudProvider cloudprovider.CloudProvider) []controller.Controller {
	repairPolicyMatcher := lo.Must(health.NewRepairPolicyMatcher(ctx, cloudProvider))
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider, state.WithRepairPolicyMatcher(repairPolicyMatcher))
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
		op.PredictionStore,
	)
}
