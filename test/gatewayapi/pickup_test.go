package gatewayapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/testenv"
)

// noGatewayAPIWarning is how kubectl prints the validating webhook's
// warning about HTTPRoute exposure on a cluster without Gateway API.
const noGatewayAPIWarning = "Warning: spec.exposure.type is HTTPRoute, but the cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes"

// pickupGateways are a gateway exposed through HTTPRoutes and one
// through an Ingress, in ns.
func pickupGateways(ns string) string {
	return fmt.Sprintf(`
apiVersion: example.com/v1
kind: APIGateway
metadata: {name: wants, namespace: %[1]s}
spec:
  exposure:
    type: HTTPRoute
    httpRoute:
      parentRefs: [{namespace: infra, name: public, sectionName: http}]
  routes:
    - {host: wants.example.com, path: /, backendService: {name: web, port: 8080}}
---
apiVersion: example.com/v1
kind: APIGateway
metadata: {name: ingress, namespace: %[1]s}
spec:
  routes:
    - {host: ingress.example.com, path: /, backendService: {name: web, port: 8080}}
`, ns)
}

// TestGatewayAPIPickedUpWithoutRestart: an operator started on a cluster
// without Gateway API notices it being installed, removed and installed
// again, with no restart. Meanwhile, a gateway that wants HTTPRoutes is
// admitted with a warning and reports GatewayAPIMissing; once the CRDs are
// established it gets its HTTPRoute within seconds (its reconcile was
// terminal: only the requeue brings it back), and the HTTPRoute is watched
// (a hand edit is put back). A gateway exposed through an Ingress is
// served throughout.
func TestGatewayAPIPickedUpWithoutRestart(t *testing.T) {
	removeGatewayAPI(t, standardChannel(t))
	// The CRDs the operator needs, as a cluster might have them: fewer to
	// install and remove twice than the whole standard channel.
	crds, err := testenv.GatewayAPICRDs()
	require.NoError(t, err)
	startOperator(t, "127.0.0.1:53")
	ns := testenv.NewNamespace(t, env.Client, "pickup")
	wants := client.ObjectKey{Namespace: ns, Name: "wants"}
	ingress := client.ObjectKey{Namespace: ns, Name: "ingress"}

	warnings := apply(t, pickupGateways(ns))
	assert.Contains(t, warnings, noGatewayAPIWarning, "kubectl apply printed:\n%s", warnings)
	assertGatewayAPIMissing(t, wants)
	assertIngressServed(t, ingress)

	for round := 1; round <= 2; round++ {
		t.Logf("round %d: Gateway API installed", round)
		pickup := measurePickup(wants)
		installGatewayAPI(t, crds)
		route := waitHTTPRoute(t, wants)
		t.Logf("the HTTPRoute was created %s after its CRD was seen established", <-pickup)
		waitCondition(t, wants, v1.ConditionDegraded, "False", controller.ReasonChildrenApplied)
		waitCondition(t, wants, v1.ConditionExposed, "Unknown", v1.ReasonPending)
		warnings = apply(t, pickupGateways(ns))
		assert.NotContains(t, warnings, "Warning:", "no warning once Gateway API is served")
		assertHandEditUndone(t, route)
		assertIngressServed(t, ingress)

		t.Logf("round %d: Gateway API removed", round)
		removeGatewayAPI(t, crds)
		assertGatewayAPIMissing(t, wants)
		assertIngressServed(t, ingress)
	}
}

// measurePickup polls, every 10 ms, for the HTTPRoute CRD to be
// established and then for gw's HTTPRoute, and sends how long the second
// took after the first (or the time out): the figure the README's "within
// seconds" rests on. The test waits for the HTTPRoute itself.
func measurePickup(gw client.ObjectKey) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		var established time.Time
		for ctx.Err() == nil {
			if established.IsZero() {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if env.Client.Get(ctx, client.ObjectKey{Name: controller.HTTPRouteCRD}, crd) == nil &&
					apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
					established = time.Now()
				}
			} else {
				var list gatewayv1.HTTPRouteList
				if env.Client.List(ctx, &list, client.InNamespace(gw.Namespace)) == nil && len(list.Items) > 0 {
					out <- time.Since(established).Round(time.Millisecond)
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		out <- waitFor
	}()
	return out
}

// assertGatewayAPIMissing: gw says Gateway API is missing and what to do,
// with neither an HTTPRoute nor an Ingress.
func assertGatewayAPIMissing(t *testing.T, gw client.ObjectKey) {
	t.Helper()
	waitCondition(t, gw, v1.ConditionReady, "False", v1.ReasonGatewayAPIMissing)
	waitCondition(t, gw, v1.ConditionDegraded, "True", v1.ReasonGatewayAPIMissing)
	cur := waitCondition(t, gw, v1.ConditionExposed, "False", v1.ReasonGatewayAPIMissing)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed).Message
	assert.Contains(t, msg, "does not serve gateway.networking.k8s.io/v1 HTTPRoutes")
	assert.Contains(t, msg, "no restart needed")
	err := env.Client.Get(t.Context(), gw, &networkingv1.Ingress{})
	assert.True(t, apierrors.IsNotFound(err), "an Ingress stands in for the HTTPRoutes: %v", err)
}

// assertIngressServed: gw, exposed through an Ingress, has it and reports
// its children applied.
func assertIngressServed(t *testing.T, gw client.ObjectKey) {
	t.Helper()
	cur := waitCondition(t, gw, v1.ConditionDegraded, "False", controller.ReasonChildrenApplied)
	assert.Nil(t, meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed))
	require.NoError(t, env.Client.Get(t.Context(), gw, &networkingv1.Ingress{}))
}

// waitHTTPRoute waits for gw's only HTTPRoute and returns it.
func waitHTTPRoute(t *testing.T, gw client.ObjectKey) *gatewayv1.HTTPRoute {
	t.Helper()
	var route *gatewayv1.HTTPRoute
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		routes, err := listHTTPRoutes(context.Background(), gw)
		require.NoError(c, err)
		require.Len(c, routes, 1)
		route = &routes[0]
	}, waitFor, tick, "the HTTPRoute of %s", gw)
	return route
}

// assertHandEditUndone: the operator watches its HTTPRoutes: a hand edit
// of route's backend is put back.
func assertHandEditUndone(t *testing.T, route *gatewayv1.HTTPRoute) {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, "patch", "httproute", route.Name, "-n", route.Namespace, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/rules/0/backendRefs/0/port","value":8443}]`)
	require.NoError(t, res.Err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &gatewayv1.HTTPRoute{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(route), cur))
		require.NotEmpty(c, cur.Spec.Rules)
		require.NotEmpty(c, cur.Spec.Rules[0].BackendRefs)
		assert.Equal(c, gatewayv1.PortNumber(80), *cur.Spec.Rules[0].BackendRefs[0].Port)
	}, waitFor, tick, "the hand-edited HTTPRoute %s was not put back", route.Name)
}
