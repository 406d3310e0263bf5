// Command karpenter-kwok is Karpenter with its KWOK cloud provider, built
// exactly as upstream's kwok/main.go builds it, plus nodeprint's capacity
// decorator (package capacity) below Karpenter's overlay decorator, so that a
// test can make the simulated cloud refuse offerings at run time.
//
// Upstream's wiring of the controllers changes between releases; it lives in
// controllers_*.go, one file per release line, chosen by build tag
// (tools/toolchain/build.sh sets the tag from KARPENTER_VERSION).
package main

import (
	"os"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
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
	op.WithControllers(ctx, newControllers(ctx, op, cloudProvider, overlayUndecoratedCloudProvider)...).Start(ctx)
}

// systemNamespace is where Karpenter keeps its own objects; the chart sets
// SYSTEM_NAMESPACE from the pod's namespace, nodeprint sets it explicitly.
func systemNamespace() string {
	if ns := os.Getenv("SYSTEM_NAMESPACE"); ns != "" {
		return ns
	}
	return "karpenter"
}
