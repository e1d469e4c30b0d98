package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// heldBy is a routeindex.Finder over a fixed list of gateways.
type heldBy []*v1.APIGateway

func (h heldBy) Serving(_ context.Context, key string) ([]*v1.APIGateway, error) {
	var out []*v1.APIGateway
	for _, gw := range h {
		for _, k := range validation.RouteKeys(gw) {
			if k == key {
				out = append(out, gw)
				break
			}
		}
	}
	return out, nil
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// competing is a gateway ns/name created age seconds before t0.
func competing(ns, name string, age int, routes ...v1.Route) *v1.APIGateway {
	gw := gateway(name, routes...)
	gw.Namespace = ns
	gw.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(age) * time.Second))
	return gw
}

func TestResolveConflicts(t *testing.T) {
	users := route("api.example.com", "/users", v1.PathTypePrefix, "users", 80)
	usersSlash := route("api.example.com", "/users/", v1.PathTypePrefix, "users-v2", 80) // the same key as users
	usersExact := route("api.example.com", "/users", v1.PathTypeExact, "users", 80)
	cart := route("api.example.com", "/cart", v1.PathTypePrefix, "cart", 80)
	noKey := route("api.example.com", "/%zz", v1.PathTypePrefix, "bad", 80)
	deleting := competing("team-a", "old", 60, users)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	internal := competing("team-a", "internal", 60, users)
	internal.Spec.IngressClassName = ptr.To("internal")

	tests := map[string]struct {
		gw       *v1.APIGateway
		others   []*v1.APIGateway
		wantKept []v1.Route
		wantLost []string // routeConflict.String()
	}{
		"alone": {gw: competing("team-b", "shop", 0, users, cart), wantKept: []v1.Route{users, cart}},
		"an older gateway holds a route": {
			gw:       competing("team-b", "shop", 0, cart, users),
			others:   []*v1.APIGateway{competing("team-a", "shop", 1, users)},
			wantKept: []v1.Route{cart},
			wantLost: []string{"spec.routes[1] (api.example.com Prefix /users) is served by APIGateway team-a/shop, created earlier"},
		},
		"the same key written differently": {
			gw:       competing("team-b", "shop", 0, usersSlash),
			others:   []*v1.APIGateway{competing("team-a", "shop", 1, users)},
			wantKept: []v1.Route{},
			wantLost: []string{"spec.routes[0] (api.example.com Prefix /users/) is served by APIGateway team-a/shop, created earlier"},
		},
		"a younger gateway holds it": {
			gw:       competing("team-b", "shop", 5, users),
			others:   []*v1.APIGateway{competing("team-a", "shop", 1, users)},
			wantKept: []v1.Route{users},
		},
		"same age: the first namespace wins": {
			gw:       competing("team-b", "aaa", 1, users),
			others:   []*v1.APIGateway{competing("team-a", "zzz", 1, users)},
			wantKept: []v1.Route{},
			wantLost: []string{"spec.routes[0] (api.example.com Prefix /users) is served by APIGateway team-a/zzz, same age, first by namespace/name"},
		},
		"same age and namespace: the first name wins": {
			gw:       competing("team-a", "shop", 1, users),
			others:   []*v1.APIGateway{competing("team-a", "api", 1, users)},
			wantKept: []v1.Route{},
			wantLost: []string{"spec.routes[0] (api.example.com Prefix /users) is served by APIGateway team-a/api, same age, first by namespace/name"},
		},
		"same age, and gw is first": {
			gw:       competing("team-a", "api", 1, users),
			others:   []*v1.APIGateway{competing("team-a", "shop", 1, users), competing("team-b", "api", 1, users)},
			wantKept: []v1.Route{users},
		},
		"the oldest of several holders is named": {
			gw: competing("team-c", "shop", 0, users),
			others: []*v1.APIGateway{
				competing("team-b", "shop", 5, users), competing("team-a", "shop", 9, users), competing("team-d", "shop", 3, users),
			},
			wantKept: []v1.Route{},
			wantLost: []string{"spec.routes[0] (api.example.com Prefix /users) is served by APIGateway team-a/shop, created earlier"},
		},
		"a gateway being deleted holds nothing": {
			gw:       competing("team-b", "shop", 0, users),
			others:   []*v1.APIGateway{deleting},
			wantKept: []v1.Route{users},
		},
		"another ingress class": {
			gw:       competing("team-b", "shop", 0, users),
			others:   []*v1.APIGateway{internal},
			wantKept: []v1.Route{users},
		},
		"another pathType": {
			gw:       competing("team-b", "shop", 0, usersExact),
			others:   []*v1.APIGateway{competing("team-a", "shop", 1, users)},
			wantKept: []v1.Route{usersExact},
		},
		"the gateway's own stored copy is not a holder": {
			gw:       competing("team-b", "shop", 0, users),
			others:   []*v1.APIGateway{competing("team-b", "shop", 0, users)},
			wantKept: []v1.Route{users},
		},
		"a route without a key competes with nothing": {
			gw:       competing("team-b", "shop", 0, noKey),
			others:   []*v1.APIGateway{competing("team-a", "shop", 1, noKey)},
			wantKept: []v1.Route{noKey},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			held, err := holders(context.Background(), heldBy(append(tc.others, tc.gw)), tc.gw)
			require.NoError(t, err)
			kept, lost := resolveConflicts(tc.gw, held)
			assert.Equal(t, tc.wantKept, kept)
			var got []string
			for _, c := range lost {
				got = append(got, c.String())
			}
			assert.Equal(t, tc.wantLost, got)
		})
	}
}

// TestResolveConflictsAgreement: whichever of two competing gateways is
// reconciled, exactly one of them serves the route.
func TestResolveConflictsAgreement(t *testing.T) {
	users := route("api.example.com", "/users", v1.PathTypePrefix, "users", 80)
	for name, pair := range map[string][2]*v1.APIGateway{
		"different ages": {competing("b", "x", 3, users), competing("a", "x", 1, users)},
		"same age":       {competing("b", "x", 1, users), competing("a", "y", 1, users)},
	} {
		t.Run(name, func(t *testing.T) {
			index := heldBy(pair[:])
			serving := 0
			for _, gw := range pair {
				held, err := holders(context.Background(), index, gw)
				require.NoError(t, err)
				if kept, _ := resolveConflicts(gw, held); len(kept) == 1 {
					serving++
				}
			}
			assert.Equal(t, 1, serving)
		})
	}
}

func TestConflictsMessageIsBounded(t *testing.T) {
	holder := competing("team-a", "shop", 1)
	var lost []routeConflict
	for i := range 8 {
		lost = append(lost, routeConflict{index: i, route: route("api.example.com", fmt.Sprintf("/r%d", i), v1.PathTypePrefix, "s", 80), holder: holder})
	}
	msg := conflictsMessage(lost)
	for i := range 5 {
		assert.Contains(t, msg, fmt.Sprintf("spec.routes[%d] (api.example.com Prefix /r%d) is served by APIGateway team-a/shop, created earlier", i, i))
	}
	assert.NotContains(t, msg, "spec.routes[5]")
	assert.Contains(t, msg, "; and 3 more.")

	assert.NotContains(t, conflictsMessage(lost[:5]), "more")
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
// share one of its route keys, old or new, and only when what decides a
// route's winner changed.
func TestCompetitorHandler(t *testing.T) {
	users := route("api.example.com", "/users", v1.PathTypePrefix, "users", 80)
	cart := route("api.example.com", "/cart", v1.PathTypePrefix, "cart", 80)
	orders := route("api.example.com", "/orders", v1.PathTypePrefix, "orders", 80)
	gw := competing("team-a", "shop", 5, users, cart)
	index := heldBy{
		gw,
		competing("team-b", "shop", 1, users),
		competing("team-c", "shop", 1, cart, users),
		competing("team-d", "shop", 1, orders),
		competing("team-e", "unrelated", 1, route("other.example.com", "/", v1.PathTypePrefix, "web", 80)),
	}
	h := competitorHandler{gateways: index}
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
			want: []string{"team-b/shop", "team-c/shop"},
		},
		"routes changed: old and new keys": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: withOrders}, q)
			},
			want: []string{"team-b/shop", "team-c/shop", "team-d/shop"},
		},
		"being deleted": {
			send: func(ctx context.Context, q requestQueue) {
				h.Update(ctx, event.UpdateEvent{ObjectOld: gw, ObjectNew: deleting}, q)
			},
			want: []string{"team-b/shop", "team-c/shop"},
		},
		"deleted": {
			send: func(ctx context.Context, q requestQueue) { h.Delete(ctx, event.DeleteEvent{Object: gw}, q) },
			want: []string{"team-b/shop", "team-c/shop"},
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
