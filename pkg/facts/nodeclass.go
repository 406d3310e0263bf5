package facts

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// ReadNodeClass looks up the node class np names, its kind resolved
// through the API server's discovery (KWOKNodeClass on the KWOK provider,
// EC2NodeClass on AWS, at whatever version the cluster serves). It says
// exists=false only on evidence: the API server answered NotFound, or it
// serves no such kind at all. Any other failure (403 from RBAC, a timeout,
// a transient error) is returned as err, and the node class is then
// unknown, never "missing".
func ReadNodeClass(ctx context.Context, c client.Client, np *karpv1.NodePool) (exists bool, err error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Name == "" {
		return false, nil // Karpenter's webhook refuses this; nothing to look up
	}
	gk := schema.GroupKind{Group: ref.Group, Kind: ref.Kind}
	mapping, err := c.RESTMapper().RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to resolve node class kind %s through discovery: %w", gk, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	switch err := c.Get(ctx, client.ObjectKey{Name: ref.Name}, u); {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("failed to read %s %s: %w", ref.Kind, ref.Name, err)
	}
}
