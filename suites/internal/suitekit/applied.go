package suitekit

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive,staticcheck
	. "github.com/onsi/gomega"    //nolint:revive,staticcheck
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kwokv1alpha1 "sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/environment"
	"github.com/nodeprint/nodeprint/pkg/kube"
)

// Catalog is the instance catalog the suite's cluster runs Karpenter with.
func (e *Environment) Catalog() string {
	GinkgoHelper()
	return e.catalogOf(context.Background())
}

// ForbiddenNodeClasses is access as a service account that may read
// everything explain reads except node classes: every read of a
// KWOKNodeClass answers 403, as on a cluster whose RBAC withholds them.
func (e *Environment) ForbiddenNodeClasses(ctx context.Context, a *environment.Applied) (*rest.Config, client.Client) {
	GinkgoHelper()
	name := "explain-no-nodeclasses-" + a.Suffix
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "apps", "events.k8s.io", "metrics.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: a.Namespace}}}
	e.ExpectCreated(ctx, sa, role, binding)
	admin, _ := e.Admin()
	cs, err := kubernetes.NewForConfig(admin)
	Expect(err).NotTo(HaveOccurred())
	tok, err := cs.CoreV1().ServiceAccounts(a.Namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "a token for the service account")
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tok.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme})
	Expect(err).NotTo(HaveOccurred())
	By("checking that the service account is refused node classes")
	Eventually(func(g Gomega) {
		err := c.Get(ctx, client.ObjectKey{Name: "any"}, &kwokv1alpha1.KWOKNodeClass{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading a KWOKNodeClass: %v", err)
		g.Expect(c.List(ctx, &karpv1.NodePoolList{})).To(Succeed(), "listing NodePools")
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	return cfg, c
}
