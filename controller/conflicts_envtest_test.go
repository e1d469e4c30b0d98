package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// The controller suite installs no webhooks: conflicting gateways are
// admitted as they are while the operator's webhook is down, and the
// reconciler is all that stands between them.

// competitor is gateway(name, routes...) in ns, with the image and
// replicas the defaulting webhook, absent here, would have set.
func competitor(ns, name string, routes ...v1.Route) *v1.APIGateway {
	gw := gateway(name, routes...)
	gw.Namespace = ns
	gw.Spec.Image, gw.Spec.Replicas = testImage, ptr.To[int32](1)
	return gw
}

// served are the routes a gateway's children serve: each Ingress path as
// "host path pathType", and each backend its nginx configuration sends
// requests to.
type served struct {
	ingress  []string
	backends string // the rendered configuration
}

func servedBy(ctx context.Context, gw *v1.APIGateway) (served, error) {
	var s served
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: gw.Name + "-config"}, cm); err != nil {
		return s, err
	}
	s.backends = cm.Data[configKey]
	ing := &networkingv1.Ingress{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gw), ing); err != nil {
		return s, err
	}
	for _, r := range ing.Spec.Rules {
		for _, p := range r.HTTP.Paths {
			s.ingress = append(s.ingress, r.Host+" "+p.Path+" "+string(*p.PathType))
		}
	}
	return s, nil
}

// waitServing waits until gw's Ingress has exactly the paths want and its
// configuration sends requests to the Services backends and not to
// absent.
func waitServing(t *testing.T, gw *v1.APIGateway, want []string, backends, absent []string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, err := servedBy(context.Background(), gw)
		require.NoError(c, err)
		assert.ElementsMatch(c, want, s.ingress, "Ingress of %s/%s", gw.Namespace, gw.Name)
		for _, b := range backends {
			assert.Contains(c, s.backends, `set $backend "`+b+".", "configuration of %s/%s", gw.Namespace, gw.Name)
		}
		for _, b := range absent {
			assert.NotContains(c, s.backends, `set $backend "`+b+".", "configuration of %s/%s", gw.Namespace, gw.Name)
		}
	}, waitFor, tick)
}

// TestOlderGatewayKeepsASharedRoute: of two gateways in different
// namespaces with one route in common, the older serves it and the
// younger reports the conflict, serving only its other route; deleting the
// older hands the route to the younger. A gateway of another ingress class
// competes with neither.
func TestOlderGatewayKeepsASharedRoute(t *testing.T) {
	op := startOperator(t)
	ctx := context.Background()
	// Created in this order, so nsA is older or, within the same second,
	// first by name: the older gateway is olderGW either way.
	nsA, nsB := newNamespace(t, "conflict-a"), newNamespace(t, "conflict-b")
	const host = "conflict.example.com"

	older := createGateway(t, competitor(nsA, "shop",
		route(host, "/users", v1.PathTypePrefix, "users-a", 80),
		route(host, "/a-only", v1.PathTypePrefix, "only-a", 80)))
	settled(t, older)

	younger := createGateway(t, competitor(nsB, "shop",
		route(host, "/users/", v1.PathTypePrefix, "users-b", 80), // the same route once normalised
		route(host, "/b-only", v1.PathTypePrefix, "only-b", 80)))

	internal := competitor(nsB, "internal", route(host, "/users", v1.PathTypePrefix, "users-internal", 80))
	internal.Spec.IngressClassName = ptr.To("internal")
	internal = createGateway(t, internal)

	cur := waitCondition(t, younger, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionAccepted).Message
	assert.Contains(t, msg, "spec.routes[0] ("+host+" Prefix /users/) is served by APIGateway "+nsA+"/shop, ")
	assert.NotContains(t, msg, "spec.routes[1]")
	waitServing(t, younger, []string{host + " /b-only Prefix"}, []string{"only-b"}, []string{"users-b"})
	waitServing(t, older, []string{host + " /users Prefix", host + " /a-only Prefix"}, []string{"users-a", "only-a"}, nil)
	waitCondition(t, older, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitCondition(t, internal, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, internal, []string{host + " /users Prefix"}, []string{"users-internal"}, nil)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		reasons, err := gatewayEvents(ctx, younger)
		require.NoError(c, err)
		assert.Contains(c, reasons, "Warning RouteConflict: "+msg)
	}, waitFor, tick)

	// The loser is idle too: reconciling it again writes nothing, no
	// status and no second event.
	assertReconcilesWriteNothing(t, op, younger)

	require.NoError(t, env.Client.Delete(ctx, older))
	waitCondition(t, younger, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, younger, []string{host + " /users Prefix", host + " /b-only Prefix"}, []string{"users-b", "only-b"}, nil)
}

// TestGatewayThatLosesEveryRouteHasNoIngress: an Ingress without rules is
// refused by the API server, and one with only a default backend would
// take every request of its class; so a gateway that other gateways beat
// on every route has no Ingress (its existing one is deleted), while its
// Deployment and Service stay to take the routes back.
func TestGatewayThatLosesEveryRouteHasNoIngress(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	nsA, nsB := newNamespace(t, "lose-all-a"), newNamespace(t, "lose-all-b")
	const host = "lose-all.example.com"

	holder := createGateway(t, competitor(nsA, "holder", route(host, "/", v1.PathTypePrefix, "web-a", 80)))
	settled(t, holder)

	loser := createGateway(t, competitor(nsB, "loser", route(host, "/mine", v1.PathTypeExact, "web-b", 80)))
	_, ch := settled(t, loser)
	assertControlledBy(t, &ch.ing, loser)

	// Now it asks only for the holder's route (and a certificate for it).
	require.NoError(t, env.Client.Patch(ctx, loser, client.RawPatch(types.MergePatchType, []byte(
		`{"spec":{"routes":[{"host":"`+host+`","path":"/","pathType":"Prefix","backendService":{"name":"web-b","port":80}}],`+
			`"tls":[{"hosts":["`+host+`"],"secretName":"tls-b"}]}}`))))
	waitCondition(t, loser, v1.ConditionAccepted, "False", v1.ReasonRouteConflict)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(loser), &networkingv1.Ingress{})
		assert.True(c, apierrors.IsNotFound(err), "the Ingress is still there: %v", err)
	}, waitFor, tick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm := &corev1.ConfigMap{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "loser-config"}, cm))
		assert.NotContains(c, cm.Data[configKey], "web-b")
	}, waitFor, tick)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(loser), &appsv1.Deployment{}))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(loser), &corev1.Service{}))
	cur := waitCondition(t, loser, v1.ConditionDegraded, "False", ReasonChildrenApplied)
	assert.Equal(t, cur.Generation, cur.Status.ObservedGeneration)

	// The holder drops the route: the loser takes it, certificate and all.
	require.NoError(t, env.Client.Patch(ctx, holder, client.RawPatch(types.MergePatchType, []byte(
		`{"spec":{"routes":[{"host":"`+host+`","path":"/elsewhere","pathType":"Prefix","backendService":{"name":"web-a","port":80}}]}}`))))
	waitCondition(t, loser, v1.ConditionAccepted, "True", v1.ReasonAccepted)
	waitServing(t, loser, []string{host + " / Prefix"}, []string{"web-b"}, nil)
	ing := &networkingv1.Ingress{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(loser), ing))
	require.Len(t, ing.Spec.TLS, 1)
	assert.Equal(t, "tls-b", ing.Spec.TLS[0].SecretName)
}

// assertReconcilesWriteNothing makes the reconciler run gw again twice,
// by touching its Service in a way that changes nothing the operator
// owns, and checks the manager wrote nothing meanwhile.
func assertReconcilesWriteNothing(t *testing.T, op *operator, gw *v1.APIGateway) {
	t.Helper()
	ctx := context.Background()
	name := gw.Namespace + "/" + gw.Name
	// Let the writes of the start-up settle: wait for one second without any.
	require.Eventually(t, func() bool {
		n := len(op.writes.snapshot())
		time.Sleep(time.Second)
		return len(op.writes.snapshot()) == n
	}, waitFor, tick, "the operator kept writing: %v", op.writes.snapshot())
	start := len(op.writes.snapshot())
	before := op.reconcileCount(name)
	for i := range 2 {
		svc := &corev1.Service{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), svc))
		patch := []byte(`{"metadata":{"labels":{"example.com/touched":"` + strings.Repeat("x", i+1) + `"}}}`)
		require.NoError(t, env.Client.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch)))
		require.Eventually(t, func() bool { return op.reconcileCount(name) >= before+i+1 }, waitFor, tick,
			"touching the Service did not reconcile %s", name)
	}
	// A write a reconcile makes is sent before the reconcile returns, and
	// the count is taken as it starts: wait for one more quiet second.
	time.Sleep(time.Second)
	assert.Empty(t, op.writes.snapshot()[start:], "reconciling %s again wrote", name)
}
