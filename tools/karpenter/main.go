// Command karpenter-kwok is Karpenter with its KWOK cloud provider, built
// exactly as upstream's kwok/main.go builds it, plus nodeprint's capacity
// decorator (package capacity) below Karpenter's overlay decorator, so that a
// test can make the simulated cloud refuse offerings at run time.
package main

import (
	"os"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"

	"github.com/nodeprint/nodeprint/tools/karpenter/capacity"
)

func main() {
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
	}

	kwokCloudProvider := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	source := capacity.NewConfigMapSource(op.Manager.GetAPIReader(), systemNamespace(), time.Second, clock.RealClock{})
	overlayUndecoratedCloudProvider := capacity.Decorate(kwokCloudProvider, source)
	cloudProvider := overlay.Decorate(overlayUndecoratedCloudProvider, op.GetClient(), op.InstanceTypeStore)
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider)
	op.
		WithControllers(ctx, controllers.NewControllers(
			ctx,
			op.Manager,
			op.Clock,
			op.GetClient(),
			op.EventRecorder,
			cloudProvider,
			overlayUndecoratedCloudProvider,
			clusterState,
			op.InstanceTypeStore,
		)...).Start(ctx)
}

// systemNamespace is where Karpenter keeps its own objects; the chart sets
// SYSTEM_NAMESPACE from the pod's namespace, nodeprint sets it explicitly.
func systemNamespace() string {
	if ns := os.Getenv("SYSTEM_NAMESPACE"); ns != "" {
		return ns
	}
	return "karpenter"
}
