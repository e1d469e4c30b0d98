package manifests_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/policy"
)

// installHostsPolicies installs manifests/policy/hosts.yaml until the test
// ends.
func installHostsPolicies(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	policies, bindings, err := policy.HostsPolicies()
	require.NoError(t, err)
	for i := range policies {
		require.NoError(t, env.Client.Create(ctx, policies[i]))
		require.NoError(t, env.Client.Create(ctx, bindings[i]))
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), bindings[i])
			_ = env.Client.Delete(context.Background(), policies[i])
		})
	}
}

// impersonating is a client for user, with RBAC that allows everything
// (bound until the test ends), so that only admission can refuse it.
func impersonating(t testing.TB, username string, groups ...string) client.Client {
	t.Helper()
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: username}
	if sa, ok := strings.CutPrefix(username, "system:serviceaccount:"); ok {
		ns, name, _ := strings.Cut(sa, ":")
		subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	admin := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "hosts-policy-test-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{subject}}
	require.NoError(t, env.Client.Create(context.Background(), admin))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), admin) })
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: username, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

func tenantNamespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

func route(namespace, name string, hostnames ...string) *gatewayv1.HTTPRoute {
	hs := make([]gatewayv1.Hostname, len(hostnames))
	for i, h := range hostnames {
		hs[i] = gatewayv1.Hostname(h)
	}
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{Name: "shared"}}},
			Hostnames: hs}}
}

func ingressOf(namespace, name string, hosts []string, tlsHosts ...string) *networkingv1.Ingress {
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h, IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/login", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: backend}}}}})
	}
	if len(tlsHosts) > 0 {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: tlsHosts, SecretName: "tls"}}
	}
	return ing
}

func createClaim(t testing.TB, host, namespace string) *v1.HostClaim {
	t.Helper()
	c := &v1.HostClaim{ObjectMeta: metav1.ObjectMeta{Name: v1.HostClaimName(host)}, Spec: v1.HostClaimSpec{Host: v1.Hostname(host), Namespace: namespace}}
	require.NoError(t, env.Client.Create(context.Background(), c))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	return c
}

// TestHostsPolicy installs manifests/policy/hosts.yaml and writes HTTPRoutes
// and Ingresses through the real API server as tenants (impersonated, with
// RBAC that allows everything): while a HostClaim gives shop.example.com to
// team-a, team-b may not name it, a name below it or a wildcard over it, in
// an HTTPRoute's hostnames or an Ingress's rules or TLS hosts, nor leave an
// HTTPRoute without hostnames; team-a may; a DomainBinding binds its domain
// alike; the operator's ServiceAccount is never refused; with no HostClaim
// every write is admitted.
func TestHostsPolicy(t *testing.T) {
	ctx := t.Context()
	teamA, teamB := tenantNamespace(t, "team-a-"), tenantNamespace(t, "team-b-")
	alice := impersonating(t, "alice") // a tenant: namespaces are hers by RBAC, not by the policy
	operator := impersonating(t, operatorUser, "system:serviceaccounts", "system:serviceaccounts:"+operatorNamespace)
	installHostsPolicies(t)

	// Stored before any claim: an update that keeps its names stays possible.
	// Until the API server has synced the params' informers the policy
	// fails closed ("not yet synced"), so the first write waits for that.
	legacy := route(teamB, "legacy", "shop.example.com")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := alice.Create(ctx, legacy)
		if err != nil && strings.Contains(err.Error(), "not yet synced") {
			return false, nil
		}
		return true, err
	}))
	createClaim(t, "shop.example.com", teamA)

	// The API server learns the policy and its params asynchronously: the
	// first refusal is awaited, the rest follow at once.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := alice.Create(ctx, route(teamB, "probe", "shop.example.com"), client.DryRunAll)
		return apierrors.IsForbidden(err), nil
	}), "the policy never refused team-b's route on team-a's host")

	t.Run("type-checked", func(t *testing.T) {
		// kube-controller-manager type-checks the expressions against the
		// schemas of the kinds matched (HTTPRoute v1, Ingress v1) and the
		// params, into the policy's status.
		env.RunControllers(t, "validatingadmissionpolicy-status-controller")
		for _, name := range []string{"apigateway-operator-host-claims", "apigateway-operator-domain-bindings"} {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			require.Eventually(t, func() bool {
				require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: name}, p))
				return p.Status.ObservedGeneration == p.Generation && p.Status.TypeChecking != nil
			}, 30*time.Second, 100*time.Millisecond)
			assert.Empty(t, p.Status.TypeChecking.ExpressionWarnings, name)
		}
	})
	refused := func(t *testing.T, err error, message string) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Contains(t, err.Error(), message)
		assert.NotContains(t, err.Error(), teamA, "a refusal never names the owner")
	}
	t.Run("HTTPRoute", func(t *testing.T) {
		for host, message := range map[string]string{
			"shop.example.com":       "host shop.example.com belongs to another namespace",
			"login.shop.example.com": "host login.shop.example.com belongs to another namespace (it is below shop.example.com",
			"*.example.com":          "host *.example.com covers shop.example.com, which belongs to another namespace",
		} {
			refused(t, alice.Create(ctx, route(teamB, "r", host)), message)
			require.NoError(t, alice.Create(ctx, route(teamA, "r", host), client.DryRunAll), "the owner names %s", host)
		}
		refused(t, alice.Create(ctx, route(teamB, "r")), "an HTTPRoute without hostnames takes every host that reaches it")
		require.NoError(t, alice.Create(ctx, route(teamA, "r"), client.DryRunAll))
		require.NoError(t, alice.Create(ctx, route(teamB, "r", "myshop.example.com"), client.DryRunAll))
	})
	t.Run("HTTPRoute v1beta1", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "HTTPRoute",
			"metadata": map[string]any{"namespace": teamB, "name": "beta"},
			"spec":     map[string]any{"hostnames": []any{"login.shop.example.com"}},
		}}
		refused(t, alice.Create(ctx, u), "host login.shop.example.com belongs to another namespace")
	})
	t.Run("Ingress", func(t *testing.T) {
		refused(t, alice.Create(ctx, ingressOf(teamB, "i", []string{"login.shop.example.com"})), "host login.shop.example.com belongs to another namespace")
		refused(t, alice.Create(ctx, ingressOf(teamB, "i", []string{"www.example.org"}, "www.example.org", "shop.example.com")),
			"host shop.example.com belongs to another namespace")
		refused(t, alice.Create(ctx, ingressOf(teamB, "i", []string{""})), "an Ingress rule without a host, or a defaultBackend, takes every host")
		require.NoError(t, alice.Create(ctx, ingressOf(teamA, "i", []string{"shop.example.com"}, "shop.example.com"), client.DryRunAll))
		require.NoError(t, alice.Create(ctx, ingressOf(teamB, "i", []string{"www.example.org"}, "www.example.org"), client.DryRunAll))
	})
	t.Run("an update keeps what it had, and adds nothing owned", func(t *testing.T) {
		legacy.Labels = map[string]string{"edited": "yes"}
		require.NoError(t, alice.Update(ctx, legacy))
		legacy.Spec.Hostnames = append(legacy.Spec.Hostnames, "login.shop.example.com")
		refused(t, alice.Update(ctx, legacy), "host login.shop.example.com belongs to another namespace")
	})
	t.Run("the operator's children", func(t *testing.T) {
		child := route(teamB, "child", "shop.example.com")
		child.Labels = map[string]string{"app.kubernetes.io/managed-by": "apigateway-operator"}
		require.NoError(t, operator.Create(ctx, child, client.DryRunAll))
		require.NoError(t, operator.Create(ctx, ingressOf(teamB, "child", []string{""}, "shop.example.com"), client.DryRunAll))
	})
	t.Run("DomainBinding", func(t *testing.T) {
		binding := &v1.DomainBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "corp-"},
			Spec: v1.DomainBindingSpec{Domain: "corp.example.com", Namespaces: []string{teamA}}}
		require.NoError(t, env.Client.Create(ctx, binding))
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsForbidden(alice.Create(ctx, route(teamB, "probe", "api.corp.example.com"), client.DryRunAll)), nil
		}), "the policy never refused a name in the bound domain")
		refused(t, alice.Create(ctx, ingressOf(teamB, "i", []string{"*.corp.example.com"})),
			"host *.corp.example.com is in corp.example.com, which a DomainBinding reserves for other namespaces")
		require.NoError(t, alice.Create(ctx, route(teamA, "r", "api.corp.example.com"), client.DryRunAll))
		require.NoError(t, operator.Create(ctx, route(teamB, "r", "api.corp.example.com"), client.DryRunAll))
	})
	t.Run("no HostClaim", func(t *testing.T) {
		require.NoError(t, env.Client.DeleteAllOf(ctx, &v1.HostClaim{}))
		require.NoError(t, env.Client.DeleteAllOf(ctx, &v1.DomainBinding{}))
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return alice.Create(ctx, route(teamB, "r", "shop.example.com"), client.DryRunAll) == nil, nil
		}), "with no HostClaim left, team-b's route was still refused")
		require.NoError(t, alice.Create(ctx, route(teamB, "r")))
		require.NoError(t, alice.Create(ctx, ingressOf(teamB, "i", []string{"login.shop.example.com", ""})))
	})
}

// TestHostsPolicyIsShipped: the default install (and so the chart, which
// TestModesRenderTheirOverlays holds to it) carries both policies, bound
// to deny with every HostClaim or DomainBinding as params, failing closed,
// exempting the operator's ServiceAccount; and no ClusterRole it ships but
// the operator's grants a write on HostClaims or DomainBindings, nor
// aggregates into the built-in roles tenants get.
func TestHostsPolicyIsShipped(t *testing.T) {
	objs := kustomize(t, "default")
	for name, kind := range map[string]string{"apigateway-operator-host-claims": "HostClaim", "apigateway-operator-domain-bindings": "DomainBinding"} {
		p := find(t, objs, "ValidatingAdmissionPolicy", name)
		b := find(t, objs, "ValidatingAdmissionPolicyBinding", name)
		assert.Equal(t, "Fail", p.Object["spec"].(map[string]any)["failurePolicy"], name)
		got, _, _ := unstructured.NestedString(p.Object, "spec", "paramKind", "kind")
		assert.Equal(t, kind, got)
		conditions, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConditions")
		require.NotEmpty(t, conditions)
		assert.Equal(t, "not-the-operator", conditions[0].(map[string]any)["name"])
		assert.Contains(t, conditions[0].(map[string]any)["expression"], "!= '"+operatorUser+"'")
		assert.Equal(t, []any{"Deny"}, b.Object["spec"].(map[string]any)["validationActions"])
		ref, _, _ := unstructured.NestedMap(b.Object, "spec", "paramRef")
		assert.Equal(t, map[string]any{"selector": map[string]any{}, "parameterNotFoundAction": "Allow"}, ref)
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		for k := range o.GetLabels() {
			assert.NotContains(t, k, "aggregate-to", "%s %s aggregates into the built-in roles", o.GetKind(), o.GetName())
		}
		if o.GetName() == "apigateway-operator" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			for _, res := range r.(map[string]any)["resources"].([]any) {
				assert.NotContains(t, []any{"hostclaims", "domainbindings", "*"}, res, "%s %s", o.GetKind(), o.GetName())
			}
		}
	}
}

// TestTenantsCannotWriteOwnership asks the API server (SubjectAccessReview)
// whether a tenant holding the built-in admin role in its namespace, or
// edit cluster-wide, may write HostClaims or DomainBindings: it may not.
func TestTenantsCannotWriteOwnership(t *testing.T) {
	ctx := t.Context()
	// admin, edit and view are aggregated: this controller fills them in.
	env.RunControllers(t, "clusterrole-aggregation-controller")
	ns := tenantNamespace(t, "team-")
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bob-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}
	require.NoError(t, env.Client.Create(ctx, rb))
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "carol-edit-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "carol"}}}
	require.NoError(t, env.Client.Create(ctx, crb))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crb) })
	can := func(user, verb, resource, namespace string) bool {
		group := v1.GroupVersion.Group
		if resource == "configmaps" {
			group = ""
		}
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource}}}
		require.NoError(t, env.Client.Create(ctx, sar))
		return sar.Status.Allowed
	}
	// RBAC authorizes from its informers: wait (bounded) until both
	// bindings grant what they grant of a built-in kind.
	require.Eventually(t, func() bool {
		return can("bob", "create", "configmaps", ns) && can("carol", "create", "configmaps", ns)
	}, 30*time.Second, 100*time.Millisecond)
	for _, user := range []string{"bob", "carol"} {
		for _, resource := range []string{"hostclaims", "domainbindings"} {
			for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
				assert.False(t, can(user, verb, resource, ""), "%s may %s %s", user, verb, resource)
				assert.False(t, can(user, verb, resource, ns), "%s may %s %s in %s", user, verb, resource, ns)
			}
		}
	}
}

// BenchmarkHostsPolicyWrite measures what the HostClaim policy costs a
// write: a dry-run create of a 16-hostname HTTPRoute by a tenant, with 0
// to 2500 HostClaims stored (the policy is evaluated once per claim).
// docs/security.md gives the figures:
//
//	go test -run '^$' -bench BenchmarkHostsPolicyWrite -benchtime 10x ./manifests
func BenchmarkHostsPolicyWrite(b *testing.B) {
	ctx := context.Background()
	teamA, teamB := tenantNamespace(b, "team-a-"), tenantNamespace(b, "team-b-")
	alice := impersonating(b, "alice")
	installHostsPolicies(b)
	var hostnames []string
	for i := range 16 {
		hostnames = append(hostnames, fmt.Sprintf("app-%02d.team-b.example.org", i))
	}
	created := 0
	for _, claims := range []int{0, 250, 1000, 2500} {
		createClaims(b, teamA, created, claims)
		created = claims
		if claims == 0 {
			// Refused (failing closed) until the API server has synced
			// its caches of both params kinds.
			require.NoError(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return alice.Create(ctx, route(teamB, "probe", "www.example.org"), client.DryRunAll) == nil, nil
			}))
		} else {
			// The last claim made the probe's host team-a's: wait until
			// the API server's cache holds it.
			probe := fmt.Sprintf("host-%d.example.com", claims-1)
			require.NoError(b, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				return apierrors.IsForbidden(alice.Create(ctx, route(teamB, "probe", probe), client.DryRunAll)), nil
			}))
		}
		b.Run(fmt.Sprintf("claims=%d", claims), func(b *testing.B) {
			r := route(teamB, "r", hostnames...)
			for b.Loop() {
				require.NoError(b, alice.Create(ctx, r.DeepCopy(), client.DryRunAll))
			}
		})
	}
	b.Cleanup(func() { _ = env.Client.DeleteAllOf(context.Background(), &v1.HostClaim{}) })
}

// createClaims creates the HostClaims host-from.example.com up to
// host-(to-1).example.com for namespace, 16 at a time.
func createClaims(b *testing.B, namespace string, from, to int) {
	b.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				host := fmt.Sprintf("host-%d.example.com", i)
				c := &v1.HostClaim{ObjectMeta: metav1.ObjectMeta{Name: v1.HostClaimName(host)},
					Spec: v1.HostClaimSpec{Host: v1.Hostname(host), Namespace: namespace}}
				if err := env.Client.Create(context.Background(), c); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := from; i < to; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
}
