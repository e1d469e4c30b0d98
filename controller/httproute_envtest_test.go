package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/test/dataplane"
)

// gatewayController is the controllerName the tests write HTTPRoute
// status as, playing a Gateway controller (envtest runs none).
const gatewayController = "example.net/gateway-controller"

// createHTTPRouteGateway creates competitor(ns, name, routes...) exposed
// through HTTPRoutes attached to parents. Since envtest runs no garbage
// collector, the gateway's HTTPRoutes are deleted after it when the test
// ends.
func createHTTPRouteGateway(t *testing.T, ns, name string, parents []v1.ParentGatewayReference, routes ...v1.Route) *v1.APIGateway {
	t.Helper()
	for _, p := range parents {
		ensureGateway(t, validation.ParentGateway(ns, &p))
	}
	return createHTTPRouteGatewayWithoutParents(t, ns, name, parents, routes...)
}

// ensureGateway creates the Gateway namespace/name, and its namespace,
// unless they exist: a parent that does not exist routes nothing. No
// Gateway controller runs; tests answer for one (answerAsGatewayController).
func ensureGateway(t *testing.T, parent string) {
	t.Helper()
	ctx := context.Background()
	ns, name, _ := strings.Cut(parent, "/")
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "creating namespace %s: %v", ns, err)
	err = env.Client.Create(ctx, &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "example", Listeners: []gatewayv1.Listener{
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType},
		}},
	})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "creating Gateway %s: %v", parent, err)
}

// createHTTPRouteGatewayWithoutParents is createHTTPRouteGateway for
// parents that may not exist.
func createHTTPRouteGatewayWithoutParents(t *testing.T, ns, name string, parents []v1.ParentGatewayReference, routes ...v1.Route) *v1.APIGateway {
	t.Helper()
	gw := competitor(ns, name, routes...)
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: parents}}
	// Registered first, so it runs after createGateway's cleanup has
	// deleted the gateway and nothing re-applies the HTTPRoutes.
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(context.Background(), &gatewayv1.HTTPRoute{}, client.InNamespace(ns),
			client.MatchingLabels{LabelInstance: name})
	})
	return createGateway(t, gw)
}

// httpRoutesOf are the HTTPRoutes gw controls, by host.
func httpRoutesOf(ctx context.Context, gw *v1.APIGateway) (map[string]*gatewayv1.HTTPRoute, error) {
	list := &gatewayv1.HTTPRouteList{}
	if err := env.Client.List(ctx, list, client.InNamespace(gw.Namespace)); err != nil {
		return nil, err
	}
	out := map[string]*gatewayv1.HTTPRoute{}
	for i := range list.Items {
		r := &list.Items[i]
		if ref := metav1.GetControllerOf(r); ref == nil || ref.UID != gw.UID {
			continue
		}
		out[hostOf(r)] = r
	}
	return out, nil
}

// routeSummary is what r sends where: "type value -> service:port" for
// each match of each rule, sorted (a Gateway orders matches by its own
// precedence rules; the golden files pin the order the operator writes).
func routeSummary(r *gatewayv1.HTTPRoute) []string {
	var out []string
	for _, rule := range r.Spec.Rules {
		var backends []string
		for _, b := range rule.BackendRefs {
			backends = append(backends, fmt.Sprintf("%s:%d", b.Name, ptr.Deref(b.Port, 0)))
		}
		for _, m := range rule.Matches {
			out = append(out, fmt.Sprintf("%s %s -> %s", ptr.Deref(m.Path.Type, ""), ptr.Deref(m.Path.Value, ""), strings.Join(backends, ",")))
		}
	}
	sort.Strings(out)
	return out
}

// waitHTTPRoutes waits until gw's HTTPRoutes are exactly one per host of
// want, each with the summary (routeSummary) want has for it, and returns
// them by host.
func waitHTTPRoutes(t *testing.T, gw *v1.APIGateway, want map[string][]string) map[string]*gatewayv1.HTTPRoute {
	t.Helper()
	var routes map[string]*gatewayv1.HTTPRoute
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		routes, err = httpRoutesOf(context.Background(), gw)
		require.NoError(c, err)
		got := map[string][]string{}
		for host, r := range routes {
			got[host] = routeSummary(r)
		}
		assert.Equal(c, want, got, "HTTPRoutes of %s/%s", gw.Namespace, gw.Name)
	}, waitFor, tick)
	return routes
}

// waitObserved waits until gw's status describes its current generation.
func waitObserved(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &v1.APIGateway{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
		assert.Equal(c, cur.Generation, cur.Status.ObservedGeneration, "status not yet written for this generation")
	}, waitFor, tick)
}

// assertNoIngress waits until gw has no Ingress.
func assertNoIngress(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), &networkingv1.Ingress{})
		assert.True(c, apierrors.IsNotFound(err), "the Ingress is there (%v)", err)
	}, waitFor, tick)
}

// answerAsGatewayController writes, through the status subresource, what a
// Gateway controller says of the HTTPRoute named key at parent ref: conds,
// describing the route's current generation.
func answerAsGatewayController(t *testing.T, key client.ObjectKey, ref gatewayv1.ParentReference, conds ...metav1.Condition) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, key, r); err != nil {
			return err
		}
		for i := range conds {
			conds[i].ObservedGeneration = r.Generation
			conds[i].LastTransitionTime = metav1.Now()
		}
		r.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: ref, ControllerName: gatewayController, Conditions: conds}}
		return env.Client.Status().Update(ctx, r)
	}))
}

// printedColumn is what `kubectl get agw` prints for gw in column (its
// header, such as EXPOSED).
func printedColumn(c *assert.CollectT, gw *v1.APIGateway, column string) string {
	res := env.Kubectl(context.Background(), nil, "get", "agw", gw.Name, "-n", gw.Namespace)
	require.NoError(c, res.Err)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(c, lines, 2, "kubectl printed:\n%s", res.Stdout)
	// kubectl aligns the columns: a value starts where its header does.
	at := strings.Index(lines[0], column)
	require.GreaterOrEqual(c, at, 0, "no %s column in:\n%s", column, res.Stdout)
	require.Greater(c, len(lines[1]), at, "kubectl printed:\n%s", res.Stdout)
	fields := strings.Fields(lines[1][at:])
	require.NotEmpty(c, fields)
	return fields[0]
}

func patchSpec(t *testing.T, gw *v1.APIGateway, patch string) {
	t.Helper()
	require.NoError(t, env.Client.Patch(context.Background(), gw, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// TestHTTPRouteGatewayGetsHTTPRoutes: a gateway exposed through
// HTTPRoutes gets one per host, controlled by it, sending its paths to its
// Service, and no Ingress; hand edits are put back, a host removed takes
// its HTTPRoute with it and a host added brings one.
func TestHTTPRouteGatewayGetsHTTPRoutes(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "httproute")
	gw := createHTTPRouteGateway(t, ns, "shop", []v1.ParentGatewayReference{{Namespace: ptr.To("infra"), Name: "public", SectionName: ptr.To("https")}},
		route("shop.example.com", "/cart/", v1.PathTypePrefix, "cart", 8080),
		route("shop.example.com", "/caf%C3%A9", v1.PathTypeExact, "cafe", 8080),
		route("*.shop.example.com", "/", v1.PathTypePrefix, "tenants", 8080))

	routes := waitHTTPRoutes(t, gw, map[string][]string{
		"shop.example.com":   {"Exact /caf%C3%A9 -> shop:80", "PathPrefix /cart -> shop:80"},
		"*.shop.example.com": {"PathPrefix / -> shop:80"},
	})
	for host, r := range routes {
		assert.Equal(t, HTTPRouteName(gw, host), r.Name)
		assertControlledBy(t, r, gw)
		assert.Equal(t, []gatewayv1.ParentReference{{
			Group: ptr.To(gatewayv1.Group(gatewayv1.GroupName)), Kind: ptr.To(gatewayv1.Kind("Gateway")),
			Namespace: ptr.To(gatewayv1.Namespace("infra")), Name: "public", SectionName: ptr.To(gatewayv1.SectionName("https")),
		}}, r.Spec.ParentRefs)
	}
	cur := waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	assert.Contains(t, meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionDegraded).Message, "HTTPRoutes")
	waitCondition(t, gw, v1.ConditionExposed, "Unknown", v1.ReasonPending)
	assertNoIngress(t, gw)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reasons, err := gatewayEvents(ctx, gw)
		require.NoError(c, err)
		assert.Equal(c, []string{fmt.Sprintf("Normal Created: Created ConfigMap shop-config, Deployment shop, Service shop, HTTPRoute %s, HTTPRoute %s",
			HTTPRouteName(gw, "*.shop.example.com"), HTTPRouteName(gw, "shop.example.com"))}, reasons)
	}, waitFor, tick)
	// What the operator applied is what it wants: reconciling again
	// applies nothing (and records no Updated event).
	assertReconcilesWriteNothing(t, op, gw)

	name := HTTPRouteName(gw, "shop.example.com")
	t.Run("a hand-edited backend port is restored", func(t *testing.T) {
		res := env.Kubectl(ctx, nil, "patch", "httproute", name, "-n", ns, "--type=json",
			"-p", `[{"op":"replace","path":"/spec/rules/0/backendRefs/0/port","value":8080}]`)
		require.NoError(t, res.Err)
		require.NotContains(t, res.Stdout, "no change")
		waitHTTPRoutes(t, gw, map[string][]string{
			"shop.example.com":   {"Exact /caf%C3%A9 -> shop:80", "PathPrefix /cart -> shop:80"},
			"*.shop.example.com": {"PathPrefix / -> shop:80"},
		})
	})
	t.Run("a hand-edited path is restored", func(t *testing.T) {
		res := env.Kubectl(ctx, nil, "patch", "httproute", name, "-n", ns, "--type=json",
			"-p", `[{"op":"replace","path":"/spec/rules/0/matches/0/path/value","value":"/hijacked"}]`)
		require.NoError(t, res.Err)
		require.NotContains(t, res.Stdout, "no change")
		waitHTTPRoutes(t, gw, map[string][]string{
			"shop.example.com":   {"Exact /caf%C3%A9 -> shop:80", "PathPrefix /cart -> shop:80"},
			"*.shop.example.com": {"PathPrefix / -> shop:80"},
		})
	})
	t.Run("a removed host's HTTPRoute is deleted, the other left alone", func(t *testing.T) {
		before := routes["shop.example.com"]
		patchSpec(t, gw, `{"spec":{"routes":[
			{"host":"shop.example.com","path":"/cart/","pathType":"Prefix","backendService":{"name":"cart","port":8080}},
			{"host":"shop.example.com","path":"/caf%C3%A9","pathType":"Exact","backendService":{"name":"cafe","port":8080}}]}}`)
		after := waitHTTPRoutes(t, gw, map[string][]string{
			"shop.example.com": {"Exact /caf%C3%A9 -> shop:80", "PathPrefix /cart -> shop:80"},
		})
		assert.Equal(t, before.UID, after["shop.example.com"].UID, "recreated")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			reasons, err := gatewayEvents(ctx, gw)
			require.NoError(c, err)
			assert.Contains(c, reasons, "Normal Deleted HTTPRoute/"+HTTPRouteName(gw, "*.shop.example.com"))
		}, waitFor, tick)
	})
	t.Run("an added host gets an HTTPRoute", func(t *testing.T) {
		patchSpec(t, gw, `{"spec":{"routes":[
			{"host":"shop.example.com","path":"/cart/","pathType":"Prefix","backendService":{"name":"cart","port":8080}},
			{"host":"shop.example.com","path":"/caf%C3%A9","pathType":"Exact","backendService":{"name":"cafe","port":8080}},
			{"host":"pay.example.com","path":"/","pathType":"Exact","backendService":{"name":"pay","port":9000}}]}}`)
		waitHTTPRoutes(t, gw, map[string][]string{
			"shop.example.com": {"Exact /caf%C3%A9 -> shop:80", "PathPrefix /cart -> shop:80"},
			"pay.example.com":  {"Exact / -> shop:80"},
		})
		waitObserved(t, gw)
		waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	})
}

// TestHundredPathsFitOneHTTPRoute: the most routes a gateway may have, all
// on one host, make an HTTPRoute Gateway API's schema accepts.
func TestHundredPathsFitOneHTTPRoute(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "httproute-many")
	gw := createHTTPRouteGateway(t, ns, "many", []v1.ParentGatewayReference{{Name: "public"}}, manyPaths("many.example.com", 100)...)
	var want []string
	for i := range 100 {
		want = append(want, fmt.Sprintf("PathPrefix /p%03d -> many:80", i))
	}
	waitHTTPRoutes(t, gw, map[string][]string{"many.example.com": want})
	waitObserved(t, gw)
	waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)
}

// TestRulesReachTheHTTPRoute: routes with rules, some of them the most
// matches an HTTPRoute holds, make an HTTPRoute Gateway API's schema
// accepts, its matches carrying their headers, query parameters and
// method.
func TestRulesReachTheHTTPRoute(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "httproute-rules")
	routes := dataplane.RulesRoutes(map[string]int32{"main": 80, "header": 80, "cookie": 80, "both": 80})
	gw := createHTTPRouteGateway(t, ns, "rules", []v1.ParentGatewayReference{{Name: "public"}}, routes...)
	waitObserved(t, gw)
	waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	stored := &gatewayv1.HTTPRoute{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: HTTPRouteName(gw, dataplane.RulesHost)}, stored))
	var conditions []string
	for _, rule := range stored.Spec.Rules {
		for _, m := range rule.Matches {
			for _, q := range m.QueryParams {
				conditions = append(conditions, *m.Path.Value+"?"+string(q.Name)+"="+q.Value)
			}
		}
	}
	assert.Equal(t, []string{"/beta?beta=on"}, conditions)
}

// TestGarbageCollectorDeletesTheHTTPRoutes: with the real garbage
// collector running, a deleted gateway's HTTPRoutes go through their owner
// references.
func TestGarbageCollectorDeletesTheHTTPRoutes(t *testing.T) {
	startOperator(t)
	env.RunControllers(t, "garbagecollector")
	ctx := context.Background()
	ns := newNamespace(t, "httproute-gc")
	gw := createHTTPRouteGateway(t, ns, "collected", []v1.ParentGatewayReference{{Name: "public"}},
		route("a.example.com", "/", v1.PathTypePrefix, "web", 80),
		route("b.example.com", "/", v1.PathTypePrefix, "web", 80))
	routes := waitHTTPRoutes(t, gw, map[string][]string{
		"a.example.com": {"PathPrefix / -> collected:80"},
		"b.example.com": {"PathPrefix / -> collected:80"},
	})

	require.NoError(t, env.Client.Delete(ctx, gw))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, r := range routes {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), &gatewayv1.HTTPRoute{})
			assert.True(c, apierrors.IsNotFound(err), "HTTPRoute %s still exists (%v)", r.Name, err)
		}
	}, 2*time.Minute, 250*time.Millisecond)
}

// TestExposedFollowsTheParentGateway plays the parent Gateway's
// controller: the Exposed condition, and the EXPOSED column of kubectl
// get, follow what it writes in the HTTPRoute's status, and a verdict on
// an older generation of the route counts for nothing.
func TestExposedFollowsTheParentGateway(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "exposed")
	gw := createHTTPRouteGateway(t, ns, "shop", []v1.ParentGatewayReference{{Name: "public", SectionName: ptr.To("https")}},
		route("shop.example.com", "/", v1.PathTypePrefix, "web", 80))
	key := client.ObjectKey{Namespace: ns, Name: HTTPRouteName(gw, "shop.example.com")}
	// As a Gateway controller writes it: group, kind and namespace left
	// to their defaults.
	ref := gatewayv1.ParentReference{Name: "public", SectionName: ptr.To(gatewayv1.SectionName("https"))}

	assertExposed := func(t *testing.T, status metav1.ConditionStatus, reason string) *metav1.Condition {
		t.Helper()
		cur := waitCondition(t, gw, v1.ConditionExposed, status, reason)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Equal(c, reason, printedColumn(c, gw, "EXPOSED"))
		}, waitFor, tick)
		return meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed)
	}

	c := assertExposed(t, "Unknown", v1.ReasonPending)
	assert.Contains(t, c.Message, "HTTPRoute "+key.Name+" (shop.example.com) at Gateway "+ns+"/public listener https: no status yet")

	answerAsGatewayController(t, key, ref,
		metav1.Condition{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "accepted by listener https"},
		metav1.Condition{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs", Message: "all references resolved"})
	assertExposed(t, "True", v1.ReasonExposed)

	answerAsGatewayController(t, key, ref,
		metav1.Condition{Type: "Accepted", Status: "False", Reason: "NotAllowedByListeners",
			Message: "listener https allows routes from namespaces labelled team=web only"},
		metav1.Condition{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs", Message: "all references resolved"})
	c = assertExposed(t, "False", "NotAllowedByListeners")
	assert.Contains(t, c.Message, "listener https allows routes from namespaces labelled team=web only")
	cur := waitCondition(t, gw, v1.ConditionReady, "False", ReasonReplicasNotReady)
	assert.Equal(t, cur.Generation, meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed).ObservedGeneration)

	// A new path is a new generation of the route: the refusal was of the
	// old one, so the gateway waits for the Gateway's word again.
	patchSpec(t, gw, `{"spec":{"routes":[{"host":"shop.example.com","path":"/v2","pathType":"Prefix","backendService":{"name":"web","port":80}}]}}`)
	waitHTTPRoutes(t, gw, map[string][]string{"shop.example.com": {"PathPrefix /v2 -> shop:80"}})
	assertExposed(t, "Unknown", v1.ReasonPending)
}

// TestSwitchingExposure: a gateway switched from Ingress to HTTPRoute
// exposure loses its Ingress and gets HTTPRoutes, and the Exposed
// condition; switched back, the HTTPRoutes and the condition go and the
// Ingress returns.
func TestSwitchingExposure(t *testing.T) {
	startOperator(t)
	ns := newNamespace(t, "switch")
	gw := competitor(ns, "shop", route("shop.example.com", "/cart", v1.PathTypePrefix, "cart", 8080))
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(context.Background(), &gatewayv1.HTTPRoute{}, client.InNamespace(ns))
	})
	gw = createGateway(t, gw)
	_, ch := settled(t, gw)
	assertControlledBy(t, &ch.ing, gw)

	patchSpec(t, gw, `{"spec":{"exposure":{"type":"HTTPRoute","httpRoute":{"parentRefs":[{"name":"public"}]}}}}`)
	waitHTTPRoutes(t, gw, map[string][]string{"shop.example.com": {"PathPrefix /cart -> shop:80"}})
	assertNoIngress(t, gw)
	waitCondition(t, gw, v1.ConditionExposed, "Unknown", v1.ReasonPending)
	waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)

	patchSpec(t, gw, `{"spec":{"exposure":{"type":"Ingress","httpRoute":null}}}`)
	waitHTTPRoutes(t, gw, map[string][]string{})
	cur, ch := settled(t, gw)
	assertControlledBy(t, &ch.ing, gw)
	require.Len(t, ch.ing.Spec.Rules, 1)
	assert.Equal(t, "shop.example.com", ch.ing.Spec.Rules[0].Host)
	assert.Nil(t, meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed), "an Ingress gateway has no Exposed condition")
}

// TestHTTPRouteConflictsArePerParentGateway: two gateways of a namespace
// attached to one Gateway with a route in common (admitted while the
// webhook was down): the first to claim it serves it, the other reports
// the conflict and its HTTPRoute leaves the path out, and one that loses
// every route has no HTTPRoute at all. A gateway attached to another
// Gateway competes with neither.
func TestHTTPRouteConflictsArePerParentGateway(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "hr-conflict")
	const host = "hr-conflict.example.com"
	public := []v1.ParentGatewayReference{{Namespace: ptr.To("infra"), Name: "public"}}

	older := createHTTPRouteGateway(t, ns, "shop", public,
		route(host, "/users", v1.PathTypePrefix, "users-a", 80),
		route(host, "/a-only", v1.PathTypePrefix, "only-a", 80))
	waitHTTPRoutes(t, older, map[string][]string{host: {"PathPrefix /a-only -> shop:80", "PathPrefix /users -> shop:80"}})
	waitObserved(t, older)

	younger := createHTTPRouteGateway(t, ns, "younger", public,
		route(host, "/users/", v1.PathTypePrefix, "users-b", 80), // the same route once normalised
		route(host, "/b-only", v1.PathTypePrefix, "only-b", 80))
	loser := createHTTPRouteGateway(t, ns, "loser", public, route(host, "/a-only", v1.PathTypePrefix, "only-loser", 80))
	elsewhere := createHTTPRouteGateway(t, ns, "elsewhere", []v1.ParentGatewayReference{{Namespace: ptr.To("infra"), Name: "internal"}},
		route(host, "/users", v1.PathTypePrefix, "users-internal", 80))

	cur := waitCondition(t, younger, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted).Message
	assert.Contains(t, msg, "spec.routes[0] ("+host+" Prefix /users/) is served by APIGateway shop, which claimed it first (gateway infra/public)")
	assert.NotContains(t, msg, "spec.routes[1]")
	waitHTTPRoutes(t, younger, map[string][]string{host: {"PathPrefix /b-only -> younger:80"}})

	waitCondition(t, loser, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	waitCondition(t, loser, v1.ConditionExposed, "False", v1.ReasonRouteConflict)
	waitHTTPRoutes(t, loser, map[string][]string{})

	waitCondition(t, elsewhere, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitHTTPRoutes(t, elsewhere, map[string][]string{host: {"PathPrefix /users -> elsewhere:80"}})
	waitCondition(t, older, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitHTTPRoutes(t, older, map[string][]string{host: {"PathPrefix /a-only -> shop:80", "PathPrefix /users -> shop:80"}})

	// The older lets its routes go: the others take them.
	require.NoError(t, env.Client.Delete(ctx, older))
	waitCondition(t, younger, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitHTTPRoutes(t, younger, map[string][]string{host: {"PathPrefix /b-only -> younger:80", "PathPrefix /users -> younger:80"}})
	waitCondition(t, loser, v1.ConditionExposed, "Unknown", v1.ReasonPending)
	waitHTTPRoutes(t, loser, map[string][]string{host: {"PathPrefix /a-only -> loser:80"}})
}

// TestARefusedGatewayHoldsNothing: a gateway whose parent Gateway refuses
// it (its listeners do not admit the namespace) routes nowhere, so it
// claims no host and blocks no one: a namespace the Gateway does admit
// takes the host.
func TestARefusedGatewayHoldsNothing(t *testing.T) {
	startOperator(t)
	nsA, nsB := newNamespace(t, "hr-refused"), newNamespace(t, "hr-admitted")
	// A host of this run only: an earlier run's (-count) gateways still
	// own theirs.
	host := nsA + ".example.com"
	public := []v1.ParentGatewayReference{{Namespace: ptr.To("infra"), Name: "public"}}

	refused := createHTTPRouteGateway(t, nsA, "squat", public, route(host, "/", v1.PathTypePrefix, "web-a", 80))
	waitHTTPRoutes(t, refused, map[string][]string{host: {"PathPrefix / -> squat:80"}})
	cur := waitCondition(t, refused, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	require.NotNil(t, cur.Status.Claims.RoutingSince, "not refused yet: it holds the host")

	answerAsGatewayController(t, client.ObjectKey{Namespace: nsA, Name: HTTPRouteName(refused, host)},
		gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace("infra")), Name: "public"},
		metav1.Condition{Type: "Accepted", Status: "False", Reason: "NotAllowedByListeners", Message: "no listener admits namespace " + nsA},
		metav1.Condition{Type: "ResolvedRefs", Status: "True", Reason: "ResolvedRefs", Message: "all references resolved"})
	waitRouting(t, refused, false, "refused everywhere: it routes nowhere")
	// Its namespace's record of the host runs out after the release grace
	// period (a second in this suite), not at once.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		err := env.Client.Get(context.Background(), client.ObjectKey{Name: v1.HostClaimName(host)}, &v1.HostClaim{})
		assert.True(ct, apierrors.IsNotFound(err), "the record of a namespace that routes the host nowhere: %v", err)
	}, 30*time.Second, 100*time.Millisecond)

	admitted := createHTTPRouteGateway(t, nsB, "shop", public, route(host, "/", v1.PathTypePrefix, "web-b", 80))
	waitCondition(t, admitted, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitHTTPRoutes(t, admitted, map[string][]string{host: {"PathPrefix / -> shop:80"}})

	// The refused gateway is told it lost the host, and keeps its HTTPRoute
	// with the parent's refusal in it: recreated, with no answer yet, it
	// would count as routing and claim the host afresh.
	cur = waitCondition(t, refused, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	assert.Nil(t, cur.Status.Claims.RoutingSince, "the refused gateway routes again")
	rt := &gatewayv1.HTTPRoute{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: nsA, Name: HTTPRouteName(refused, host)}, rt))
	assert.NotEmpty(t, rt.Status.Parents, "the refused gateway's HTTPRoute was deleted and recreated: the refusal is gone")
}

// TestHTTPRouteTimeoutsReachTheGateway: the request timeouts of routes
// that set timeouts are in the HTTPRoute the API server stores, through
// Gateway API's own schema (its Duration pattern, 16 rules, 128 matches),
// including a host whose 100 routes each set their own; applying again
// writes nothing (the API server keeps a Duration as written).
func TestHTTPRouteTimeoutsReachTheGateway(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	ns := newNamespace(t, "httproute-timeouts")
	const host = "timeouts.example.com"
	gw := createHTTPRouteGateway(t, ns, "slow", []v1.ParentGatewayReference{{Name: "public"}},
		route(host, "/plain", v1.PathTypePrefix, "plain", 80),
		withTimeouts(route(host, "/fast", v1.PathTypeExact, "fast", 80), 5, 10),
		withTimeouts(route(host, "/reports", v1.PathTypePrefix, "reports", 80), 0, 3600))
	routes := waitHTTPRoutes(t, gw, map[string][]string{host: {"Exact /fast -> slow:80", "PathPrefix /plain -> slow:80", "PathPrefix /reports -> slow:80"}})
	assert.Equal(t, map[string]string{"PathPrefix /plain": "", "Exact /fast": "15s", "PathPrefix /reports": "1h1m"}, matchTimeouts(t, routes[host]))
	waitObserved(t, gw)
	waitCondition(t, gw, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	assertReconcilesWriteNothing(t, op, gw)

	t.Run("a timeout changed is applied", func(t *testing.T) {
		patchSpec(t, gw, `{"spec":{"routes":[
			{"host":"`+host+`","path":"/plain","pathType":"Prefix","backendService":{"name":"plain","port":80},"timeouts":{"connectSeconds":2}}]}}`)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			routes, err := httpRoutesOf(ctx, gw)
			require.NoError(c, err)
			require.Contains(c, routes, host)
			require.Len(c, routes[host].Spec.Rules, 1)
			assert.Equal(c, &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(gatewayv1.Duration("1m2s"))}, routes[host].Spec.Rules[0].Timeouts)
		}, waitFor, tick)
	})

	t.Run("100 routes with 100 timeouts on one host", func(t *testing.T) {
		paths := manyPaths("many-timeouts.example.com", 100)
		for i := range paths {
			paths[i] = withTimeouts(paths[i], int32(i%75+1), int32(i*36+1))
		}
		many := createHTTPRouteGateway(t, ns, "many", []v1.ParentGatewayReference{{Name: "public"}}, paths...)
		waitObserved(t, many)
		waitCondition(t, many, v1.ConditionDegraded, "False", ReasonChildrenApplied)
		routes, err := httpRoutesOf(ctx, many)
		require.NoError(t, err)
		r := routes["many-timeouts.example.com"]
		require.NotNil(t, r)
		assert.Len(t, r.Spec.Rules, 16)
		assert.Len(t, matchTimeouts(t, r), 100)
	})

	t.Run("the schema refuses what is not a Gateway API Duration", func(t *testing.T) {
		// The check the test relies on: these would have been refused.
		for _, d := range []string{"75", "1.5s", "1d", "-1s"} {
			r := &gatewayv1.HTTPRoute{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad-duration"},
				Spec: gatewayv1.HTTPRouteSpec{Rules: []gatewayv1.HTTPRouteRule{{
					Timeouts: &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(gatewayv1.Duration(d))},
				}}},
			}
			err := env.Client.Create(ctx, r)
			assert.True(t, apierrors.IsInvalid(err), "%q: %v", d, err)
		}
	})
}

// TestAMissingParentHoldsNothing: a gateway whose parent Gateway does not
// exist routes nowhere, as one of an ingress class that does not exist
// does, so it claims no host: naming a Gateway no one will create blocks
// no one. Once the Gateway exists and accepts it, it routes, with a claim
// later than the host's owner's, and stays out.
func TestAMissingParentHoldsNothing(t *testing.T) {
	startOperator(t)
	nsA, nsB := newNamespace(t, "hr-missing"), newNamespace(t, "hr-present")
	host := nsA + ".example.com"
	nowhere := gatewayv1.ParentReference{Namespace: ptr.To(gatewayv1.Namespace(nsA)), Name: "nowhere"}

	squat := createHTTPRouteGatewayWithoutParents(t, nsA, "squat", []v1.ParentGatewayReference{{Namespace: ptr.To(nsA), Name: "nowhere"}},
		route(host, "/", v1.PathTypePrefix, "web-a", 80))
	waitHTTPRoutes(t, squat, map[string][]string{host: {"PathPrefix / -> squat:80"}})
	waitRouting(t, squat, false, "its parent does not exist: it routes nowhere")

	public := []v1.ParentGatewayReference{{Namespace: ptr.To("infra"), Name: "public"}}
	shop := createHTTPRouteGateway(t, nsB, "shop", public, route(host, "/", v1.PathTypePrefix, "web-b", 80))
	waitCondition(t, shop, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitHTTPRoutes(t, shop, map[string][]string{host: {"PathPrefix / -> shop:80"}})

	// The Gateway appears and its controller accepts the squatter's
	// HTTPRoute: the squatter routes from now on, after shop's claim.
	ensureGateway(t, nsA+"/nowhere")
	answerAsGatewayController(t, client.ObjectKey{Namespace: nsA, Name: HTTPRouteName(squat, host)}, nowhere,
		metav1.Condition{Type: "Accepted", Status: "True", Reason: "Accepted", Message: "accepted"})
	waitRouting(t, squat, true, "its parent accepted it: it routes")
	waitCondition(t, squat, v1.ConditionAccepted, "False", v1.ReasonHostOwned)
	waitCondition(t, shop, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitHTTPRoutes(t, shop, map[string][]string{host: {"PathPrefix / -> shop:80"}})
}
