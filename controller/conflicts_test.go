package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
	"example.com/apigateway-operator/test/testenv"
)

// heldBy is the production routeindex.Finder over a fixed list of
// gateways.
func heldBy(gws ...*v1.APIGateway) routeindex.Finder {
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, routeindex.Indexers())
	for _, gw := range gws {
		if err := indexer.Add(gw); err != nil {
			panic(err)
		}
	}
	return routeindex.NewFinder(indexer)
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// competing is a gateway ns/name created age seconds before t0.
func competing(ns, name string, age int, routes ...v1.Route) *v1.APIGateway {
	gw := gateway(name, routes...)
	gw.Namespace = ns
	gw.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(age) * time.Second))
	return gw
}

func TestConflictsMessageIsBounded(t *testing.T) {
	gw := competing("team-a", "mine", 1)
	holder := competing("team-a", "shop", 1)
	var lost []routeConflict
	for i := range 8 {
		lost = append(lost, routeConflict{of: gw, Loss: ownership.Loss{Index: i, Route: route("api.example.com", fmt.Sprintf("/r%d", i), v1.PathTypePrefix, "s", 80),
			Holder: holder, Reason: v1.ReasonRouteConflict, Scope: "default"}})
	}
	msg := conflictsMessage(lost)
	for i := range 5 {
		assert.Contains(t, msg, fmt.Sprintf("spec.routes[%d] (api.example.com Prefix /r%d) is served by APIGateway shop, which claimed it first (default)", i, i))
	}
	assert.NotContains(t, msg, "spec.routes[5]")
	assert.Contains(t, msg, "; and 3 more.")

	assert.NotContains(t, conflictsMessage(lost[:5]), "more")
}

// TestConflictsMessageDisclosesNoOtherNamespace: the status, which the
// gateway's namespace reads, never names another namespace's gateway nor
// that namespace.
func TestConflictsMessageDisclosesNoOtherNamespace(t *testing.T) {
	gw := competing("team-b", "mine", 1)
	holder := competing("team-a", "secret-shop", 1)
	r := route("api.example.com", "/x", v1.PathTypePrefix, "s", 80)
	for _, reason := range []string{v1.ReasonRouteConflict, v1.ReasonHostOwned} {
		msg := conflictsMessage([]routeConflict{{of: gw, Loss: ownership.Loss{Route: r, Holder: holder, Reason: reason, Scope: "default"}}})
		assert.NotContains(t, msg, "team-a", reason)
		assert.NotContains(t, msg, "secret-shop", reason)
		assert.Contains(t, msg, "another namespace", reason)
	}
	assert.Equal(t, v1.ReasonHostOwned, conflictsReason([]routeConflict{
		{of: gw, Loss: ownership.Loss{Reason: v1.ReasonRouteConflict}}, {of: gw, Loss: ownership.Loss{Reason: v1.ReasonHostOwned}}}))
}

func TestServedGateway(t *testing.T) {
	gw := gateway("shop",
		route("api.example.com", "/users", v1.PathTypePrefix, "users", 80),
		route("api.example.com", "/cart", v1.PathTypePrefix, "cart", 80),
		route("www.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Spec.TLS = []v1.GatewayTLS{
		{Hosts: []string{"api.example.com", "www.example.com"}, SecretName: "both"},
		{Hosts: []string{"www.example.com"}, SecretName: "www"},
	}
	assert.Same(t, gw, servedGateway(gw, gw.Spec.Routes), "a gateway that keeps every route is built as it is")

	before := gw.DeepCopy()
	served := servedGateway(gw, gw.Spec.Routes[:2])
	assert.Equal(t, before, gw, "gw is left unchanged")
	assert.Equal(t, gw.Spec.Routes[:2], served.Spec.Routes)
	assert.Equal(t, []v1.GatewayTLS{{Hosts: []string{"api.example.com"}, SecretName: "both"}}, served.Spec.TLS,
		"no certificate for a host the gateway no longer routes")
	assert.Equal(t, gw.UID, served.UID, "the children keep their owner")

	served = servedGateway(gw, gw.Spec.Routes[1:2])
	assert.Len(t, served.Spec.TLS, 1, "a host keeps its certificate while it has a route")
}

// TestCompetitorHandler: an event on a gateway reconciles the others that
// compete with it, before or after: those with one of its routes, and the
// other namespaces' gateways on its hosts; and only when what decides a
// winner changed.
func TestCompetitorHandler(t *testing.T) {
	users := route("api.example.com", "/users", v1.PathTypePrefix, "users", 80)
	cart := route("api.example.com", "/cart", v1.PathTypePrefix, "cart", 80)
	orders := route("api.example.com", "/orders", v1.PathTypePrefix, "orders", 80)
	gw := competing("team-a", "shop", 5, users, cart)
	index := heldBy(
		gw,
		competing("team-b", "shop", 1, users),
		competing("team-c", "shop", 1, cart, users),
		competing("team-d", "shop", 1, orders),
		competing("team-e", "unrelated", 1, route("other.example.com", "/", v1.PathTypePrefix, "web", 80)),
		competing("team-a", "sibling", 1, route("api.example.com", "/sibling", v1.PathTypePrefix, "web", 80)),
	)
	h := competitorHandler{gateways: index, classes: fake.NewClientBuilder().WithScheme(testenv.NewScheme()).Build()}
	claimsChanged := gw.DeepCopy()
	claimsChanged.Status.Claims = &v1.Claims{Routes: []v1.RouteClaim{{Route: "Prefix api.example.com/users", Lost: true}}}
	withOrders := gw.DeepCopy()
	withOrders.Spec.Routes = []v1.Route{orders}
	withOrders.Generation++
	statusOnly := gw.DeepCopy()
	statusOnly.Status.ObservedGeneration = 7
	replicasOnly := gw.DeepCopy()
	replicasOnly.Spec.Replicas = ptr.To[int32](3)
	replicasOnly.Generation++
	deleting := gw.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))

	tests := map[string]struct {
		send func(context.Context, requestQueue)
		want []string
	}{
		"created": {
			send: func(ctx context.Context, q requestQueue) { h.Create(ctx, event.CreateEvent{Object: gw}, q) },
			want: []string{"team-b/shop", "team-c/shop", "team-d/shop", "team-a/sibling"},
		},
		"routes changed: old and new": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: withOrders}, q)
			},
			want: []string{"team-b/shop", "team-c/shop", "team-d/shop", "team-a/sibling"},
		},
		"being deleted": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: deleting}, q)
			},
			want: []string{"team-b/shop", "team-c/shop", "team-d/shop", "team-a/sibling"},
		},
		"deleted": {
			send: func(ctx context.Context, q requestQueue) { h.Delete(ctx, event.DeleteEvent{Object: gw}, q) },
			want: []string{"team-b/shop", "team-c/shop", "team-d/shop", "team-a/sibling"},
		},
		"its claims changed": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: claimsChanged}, q)
			},
			want: []string{"team-b/shop", "team-c/shop", "team-d/shop", "team-a/sibling"},
		},
		"status written": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: statusOnly}, q)
			},
		},
		"replicas changed": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: replicasOnly}, q)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tc.send(context.Background(), q)
			var got []string
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req.String())
				q.Done(req)
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}
