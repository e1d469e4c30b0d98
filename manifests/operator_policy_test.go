package manifests_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/policy"
)

// operatorUser is the operator's ServiceAccount as the API server names
// it in a request.
const operatorUser = "system:serviceaccount:" + operatorNamespace + ":apigateway-operator"

// TestOperatorPolicies installs manifests/policy/operator.yaml and writes
// through the real API server as the operator's ServiceAccount (with RBAC
// that allows everything, so only the policy can refuse): it may write the
// children it builds, and nothing else of those kinds, never in
// kube-system; and no one else may change the claims in a gateway's
// status.
func TestOperatorPolicies(t *testing.T) {
	ctx := t.Context()
	policies, bindings, err := policy.OperatorPolicies()
	require.NoError(t, err)
	for i := range policies {
		require.NoError(t, env.Client.Create(ctx, policies[i]))
		require.NoError(t, env.Client.Create(ctx, bindings[i]))
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), bindings[i])
			_ = env.Client.Delete(context.Background(), policies[i])
		})
	}
	admin := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator-policy-test"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: "apigateway-operator"}}}
	require.NoError(t, env.Client.Create(ctx, admin))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), admin) })
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"}}
	operator, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	for _, name := range []string{operatorNamespace, "kube-system"} {
		require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})))
	}
	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop"},
		Spec: v1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Routes: []v1.Route{{Host: "policy.example.com", Path: "/",
			PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "web", Port: 80}}}},
	}
	require.NoError(t, env.Client.Create(ctx, gw))
	child := func(namespace, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "apigateway-operator"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "APIGateway", Name: gw.Name,
				UID: gw.UID, Controller: ptr.To(true)}}}}
	}
	// The API server learns a new policy asynchronously: the first refusal
	// is awaited, the rest follow at once.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := operator.Create(ctx, child("kube-system", "probe"), client.DryRunAll)
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	}), "the policy never refused a write in kube-system")

	forbidden := func(t *testing.T, err error, contains string) {
		t.Helper()
		require.Error(t, err)
		assert.Contains(t, err.Error(), contains)
	}
	t.Run("a child in kube-system", func(t *testing.T) {
		forbidden(t, operator.Create(ctx, child("kube-system", "shop-config")), "the apigateway-operator writes nothing in namespace kube-system")
	})
	t.Run("an object without the operator's label", func(t *testing.T) {
		cm := child(ns.Name, "unlabelled")
		cm.Labels = nil
		forbidden(t, operator.Create(ctx, cm), "writes only objects it built")
	})
	t.Run("an object no APIGateway controls", func(t *testing.T) {
		cm := child(ns.Name, "orphan")
		cm.OwnerReferences = nil
		forbidden(t, operator.Create(ctx, cm), "writes only objects it built")
	})
	t.Run("taking another's object over", func(t *testing.T) {
		theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "theirs"}, Data: map[string]string{"k": "v"}}
		require.NoError(t, env.Client.Create(ctx, theirs))
		takeover := child(ns.Name, "theirs")
		takeover.ResourceVersion = theirs.ResourceVersion
		forbidden(t, operator.Update(ctx, takeover), "writes only objects it built")
		forbidden(t, operator.Delete(ctx, theirs), "writes only objects it built")
	})
	t.Run("its own child", func(t *testing.T) {
		mine := child(ns.Name, "shop-config")
		require.NoError(t, operator.Create(ctx, mine))
		mine.Data = map[string]string{"gateway.conf.template": "x"}
		require.NoError(t, operator.Update(ctx, mine))
		require.NoError(t, operator.Delete(ctx, mine))
	})
	t.Run("a PodDisruptionBudget", func(t *testing.T) {
		budget := func(name string) *policyv1.PodDisruptionBudget {
			cm := child(ns.Name, name)
			return &policyv1.PodDisruptionBudget{ObjectMeta: cm.ObjectMeta, Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": gw.Name}}}}
		}
		orphan := budget("every-pod")
		orphan.OwnerReferences = nil
		forbidden(t, operator.Create(ctx, orphan), "writes only objects it built")
		mine := budget(gw.Name)
		require.NoError(t, operator.Create(ctx, mine))
		require.NoError(t, operator.Delete(ctx, mine))
	})
	t.Run("a NetworkPolicy", func(t *testing.T) {
		netpol := func(namespace, name string) *networkingv1.NetworkPolicy {
			cm := child(namespace, name)
			return &networkingv1.NetworkPolicy{ObjectMeta: cm.ObjectMeta, Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
		}
		orphan := netpol(ns.Name, "deny-all")
		orphan.OwnerReferences = nil
		forbidden(t, operator.Create(ctx, orphan), "writes only objects it built")
		forbidden(t, operator.Create(ctx, netpol("kube-system", "deny-all")), "writes nothing in namespace kube-system")
		mine := netpol(ns.Name, gw.Name)
		require.NoError(t, operator.Create(ctx, mine))
		require.NoError(t, operator.Delete(ctx, mine))
	})
	t.Run("a Secret", func(t *testing.T) {
		secret := func(namespace, name string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: child(namespace, name).ObjectMeta, Data: map[string][]byte{"auth": []byte("x")}}
		}
		orphan := secret(ns.Name, "orphan")
		orphan.OwnerReferences = nil
		forbidden(t, operator.Create(ctx, orphan), "writes only objects it built")
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "users"}, Data: map[string][]byte{"auth": []byte("x")}}
		require.NoError(t, env.Client.Create(ctx, theirs))
		takeover := secret(ns.Name, "users")
		takeover.ResourceVersion = theirs.ResourceVersion
		forbidden(t, operator.Update(ctx, takeover), "writes only objects it built")
		forbidden(t, operator.Delete(ctx, theirs), "writes only objects it built")
		forbidden(t, operator.Create(ctx, secret("kube-system", "shop-basic-auth")), "writes nothing in namespace kube-system")
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "another"}}
		forbidden(t, operator.Create(ctx, other), "writes only objects it built")
		mine := secret(ns.Name, gw.Name+"-basic-auth")
		require.NoError(t, operator.Create(ctx, mine))
		mine.Data = map[string][]byte{"htpasswd-0": []byte("y")}
		require.NoError(t, operator.Update(ctx, mine))
		key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "apigateway-operator-push-key"}}
		require.NoError(t, client.IgnoreAlreadyExists(operator.Create(ctx, key)), "its push key")
	})
	t.Run("the defaults policy's parameters", func(t *testing.T) {
		params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: policy.ParamsName}}
		require.NoError(t, client.IgnoreAlreadyExists(operator.Create(ctx, params)))
	})

	t.Run("claims are the operator's", func(t *testing.T) {
		claims := &v1.Claims{Routes: []v1.RouteClaim{{Route: "Prefix policy.example.com/", Since: metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}}}
		cur := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		cur.Status.Claims = claims
		forbidden(t, env.Client.Status().Update(ctx, cur), "only the apigateway-operator ServiceAccount may change them")

		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		cur.Status.ObservedGeneration = 1
		require.NoError(t, env.Client.Status().Update(ctx, cur), "the rest of the status is not guarded")

		require.NoError(t, operator.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		cur.Status.Claims = claims
		require.NoError(t, operator.Status().Update(ctx, cur), "the operator writes its claims")

		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		cur.Status.Claims.Routes[0].Since = metav1.NewMicroTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		forbidden(t, env.Client.Status().Update(ctx, cur), "only the apigateway-operator ServiceAccount may change them")
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), cur))
		cur.Status.Claims = nil
		forbidden(t, env.Client.Status().Update(ctx, cur), "only the apigateway-operator ServiceAccount may change them")
	})
}
