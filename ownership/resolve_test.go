package ownership

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func route(host, path string, pt v1.PathType) v1.Route {
	return v1.Route{Host: v1.Hostname(host), Path: v1.HTTPPath(path), PathType: pt, BackendService: v1.BackendService{Name: "s", Port: 80}}
}

func prefix(host, path string) v1.Route { return route(host, path, v1.PathTypePrefix) }
func exact(host, path string) v1.Route  { return route(host, path, v1.PathTypeExact) }

// gw is a gateway ns/name with routes and no claims (never reconciled).
func gw(ns, name string, routes ...v1.Route) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       v1.APIGatewaySpec{Routes: routes},
	}
}

// claimed is g after a reconcile at t0+at seconds that found every scope
// routing: each route and scope claimed then, nothing lost.
func claimed(g *v1.APIGateway, at int) *v1.APIGateway {
	g = g.DeepCopy()
	now := t0.Add(time.Duration(at) * time.Second)
	g.Status.Claims = Stamp(g, nil, Scopes(g, Classes{}), func(Scope) bool { return true }, now, time.Time{})
	g.Status.ObservedGeneration = g.Generation
	return g
}

// lostAll marks every route of g lost.
func lostAll(g *v1.APIGateway) *v1.APIGateway {
	for i := range g.Status.Claims.Routes {
		g.Status.Claims.Routes[i].Lost = true
	}
	return g
}

// withClass sets g's ingress class.
func withClass(g *v1.APIGateway, class string) *v1.APIGateway {
	g.Spec.IngressClassName = ptr.To(class)
	return g
}

// delegating adds a delegation of host's prefixes to ns.
func delegating(g *v1.APIGateway, host, ns string, prefixes ...string) *v1.APIGateway {
	g.Spec.Delegations = append(g.Spec.Delegations, v1.HostDelegation{Host: v1.Hostname(host), Namespace: ns, PathPrefixes: paths(prefixes...)})
	return g
}

func TestResolve(t *testing.T) {
	const host = "api.example.com"
	users, usersSlash := prefix(host, "/users"), prefix(host, "/users/")
	tests := map[string]struct {
		gw        *v1.APIGateway
		others    []*v1.APIGateway
		classes   Classes
		policy    Policy
		admission bool
		want      []string // "index reason holder"
	}{
		"alone": {gw: claimed(gw("b", "shop", users), 5)},
		"another namespace's host, another path": {
			gw:     claimed(gw("b", "shop", prefix(host, "/cart")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", users), 1)},
			want:   []string{"0 HostOwned a/shop"},
		},
		"a longer prefix under another namespace's": {
			gw:     claimed(gw("b", "admin", prefix(host, "/users/admin")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", usersSlash), 1)},
			want:   []string{"0 HostOwned a/shop"},
		},
		"an Exact path on another namespace's Prefix": {
			gw:     claimed(gw("b", "x", exact(host, "/users")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", users), 1)},
			want:   []string{"0 HostOwned a/shop"},
		},
		"an exact host under another namespace's wildcard": {
			gw:     claimed(gw("b", "x", prefix("shop.example.com", "/")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "all", prefix("*.example.com", "/")), 1)},
			want:   []string{"0 HostOwned a/all"},
		},
		"a wildcard over another namespace's host": {
			gw:     claimed(gw("b", "x", prefix("*.example.com", "/")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", prefix("shop.example.com", "/")), 1)},
			want:   []string{"0 HostOwned a/shop"},
		},
		"a wildcard's owner owns the names two labels below it too": {
			gw:     claimed(gw("b", "x", prefix("a.shop.example.com", "/")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "all", prefix("*.example.com", "/")), 1)},
			want:   []string{"0 HostOwned a/all"},
		},
		"a host's owner owns the names below it": {
			gw:     claimed(gw("b", "x", prefix("login.shop.example.com", "/"), prefix("*.shop.example.com", "/")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", prefix("shop.example.com", "/")), 1)},
			want:   []string{"0 HostOwned a/shop", "1 HostOwned a/shop"},
		},
		"another host of the same domain": {
			gw:     claimed(gw("b", "x", prefix("www.example.com", "/")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", users), 1)},
		},
		"the host is ours: claimed before theirs": {
			gw:     claimed(gw("a", "shop", users), 1),
			others: []*v1.APIGateway{claimed(gw("b", "x", prefix(host, "/cart")), 5)},
		},
		"whatever the gateways' ages: the claim counts": {
			gw: func() *v1.APIGateway {
				g := claimed(gw("b", "sleeper", prefix("other.example.com", "/")), 1)
				// An old gateway adds the route later: claimed at 9.
				g.Spec.Routes = append(g.Spec.Routes, users)
				g.Status.Claims = Stamp(g, g.Status.Claims, Scopes(g, Classes{}), func(Scope) bool { return true }, t0.Add(9*time.Second), time.Time{})
				g.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
				return g
			}(),
			others: []*v1.APIGateway{claimed(gw("a", "victim", users), 5)},
			want:   []string{"1 HostOwned a/victim"},
		},
		"gateways of one namespace share a host": {
			gw:     claimed(gw("a", "two", prefix(host, "/users/admin"), prefix(host, "/cart")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "one", usersSlash), 1)},
		},
		"one namespace, the same route: the first claim": {
			gw:     claimed(gw("a", "two", usersSlash), 5),
			others: []*v1.APIGateway{claimed(gw("a", "one", users), 1)},
			want:   []string{"0 RouteConflict a/one"},
		},
		"one namespace, the same route, a tie: the first name": {
			gw:     claimed(gw("a", "zz", users), 1),
			others: []*v1.APIGateway{claimed(gw("a", "aa", users), 1)},
			want:   []string{"0 RouteConflict a/aa"},
		},
		"a delegated prefix": {
			gw:     claimed(gw("b", "cart", prefix(host, "/cart/items"), exact(host, "/cart")), 5),
			others: []*v1.APIGateway{delegating(claimed(gw("a", "shop", users), 1), host, "b", "/cart/")},
		},
		"outside the delegated prefix": {
			gw:     claimed(gw("b", "cart", prefix(host, "/carts"), prefix(host, "/cart/x")), 5),
			others: []*v1.APIGateway{delegating(claimed(gw("a", "shop", users), 1), host, "b", "/cart")},
			want:   []string{"0 HostOwned a/shop"},
		},
		"delegated to another namespace": {
			gw:     claimed(gw("b", "cart", prefix(host, "/cart")), 5),
			others: []*v1.APIGateway{delegating(claimed(gw("a", "shop", users), 1), host, "c", "/")},
			want:   []string{"0 HostOwned a/shop"},
		},
		"a delegation by a namespace that does not own the host": {
			gw: claimed(gw("c", "x", prefix(host, "/cart")), 9),
			others: []*v1.APIGateway{
				claimed(gw("a", "shop", users), 1),
				delegating(lostAll(claimed(gw("b", "late", users), 5)), host, "c", "/"),
			},
			want: []string{"0 HostOwned a/shop"},
		},
		"the owner keeps a delegated route it claimed first": {
			gw:     claimed(gw("b", "cart", prefix(host, "/cart")), 5),
			others: []*v1.APIGateway{delegating(claimed(gw("a", "shop", prefix(host, "/cart")), 1), host, "b", "/cart")},
			want:   []string{"0 RouteConflict a/shop"},
		},
		"the owner's wildcard delegates one of its names": {
			gw:     claimed(gw("b", "x", prefix("shop.example.com", "/")), 5),
			others: []*v1.APIGateway{delegating(claimed(gw("a", "all", prefix("*.example.com", "/")), 1), "shop.example.com", "b", "/")},
		},
		"a wildcard that lost holds nothing": {
			gw: claimed(gw("c", "x", prefix("new.example.com", "/")), 9),
			others: []*v1.APIGateway{
				lostAll(claimed(gw("b", "squat", prefix("*.example.com", "/")), 5)),
				claimed(gw("a", "shop", prefix("shop.example.com", "/")), 1),
			},
		},
		"a gateway being deleted holds nothing": {
			gw: claimed(gw("b", "x", users), 5),
			others: []*v1.APIGateway{func() *v1.APIGateway {
				g := claimed(gw("a", "old", users), 1)
				g.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
				return g
			}()},
		},
		"its own stored copy is no competitor": {
			gw:     claimed(gw("b", "x", users), 5),
			others: []*v1.APIGateway{claimed(gw("b", "x", users), 1)},
		},
		"a class that does not exist routes nothing, so holds nothing": {
			gw:      claimed(gw("b", "x", users), 5),
			others:  []*v1.APIGateway{routingNowhere(withClass(gw("a", "squat", users), "bogus"))},
			classes: Classes{Exists: func(n string) bool { return n == "nginx" }},
		},
		"a parent Gateway that refused the gateway holds it nothing": {
			gw: claimed(gw("b", "x", users), 5),
			others: []*v1.APIGateway{routingNowhere(func() *v1.APIGateway {
				g := gw("a", "refused", users)
				g.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: []v1.ParentGatewayReference{{Name: "public", Namespace: ptr.To("infra")}}}}
				return g
			}())},
		},
		"no class is the default class": {
			gw:      claimed(withClass(gw("a", "two", users), "nginx"), 5),
			others:  []*v1.APIGateway{claimed(gw("a", "one", users), 1)},
			classes: Classes{Default: "nginx"},
			want:    []string{"0 RouteConflict a/one"},
		},
		"another class, the same namespace: no conflict": {
			gw:      claimed(withClass(gw("a", "two", users), "internal"), 5),
			others:  []*v1.APIGateway{claimed(gw("a", "one", users), 1)},
			classes: Classes{Default: "nginx"},
		},
		"another class, another namespace: the host is owned across classes": {
			gw:      claimed(withClass(gw("b", "x", users), "internal"), 5),
			others:  []*v1.APIGateway{claimed(gw("a", "shop", users), 1)},
			classes: Classes{Default: "nginx"},
			want:    []string{"0 HostOwned a/shop"},
		},
		"InterNamespaceAllowed: overlapping paths of two namespaces": {
			gw:     claimed(gw("b", "x", prefix(host, "/users/admin")), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", users), 1)},
			policy: InterNamespaceAllowed,
		},
		"InterNamespaceAllowed: the same route, claimed first": {
			gw:     claimed(gw("b", "x", users), 5),
			others: []*v1.APIGateway{claimed(gw("a", "shop", users), 1)},
			policy: InterNamespaceAllowed,
			want:   []string{"0 RouteConflict a/shop"},
		},
		"InterNamespaceAllowed: an older gateway that adds the route later loses it": {
			gw: func() *v1.APIGateway {
				g := claimed(gw("a", "sleeper", prefix(host, "/cart")), 1)
				g.Spec.Routes = append(g.Spec.Routes, users)
				g.Status.Claims = Stamp(g, g.Status.Claims, Scopes(g, Classes{}), func(Scope) bool { return true }, t0.Add(9*time.Second), time.Time{})
				return g
			}(),
			others: []*v1.APIGateway{claimed(gw("b", "victim", users), 5)},
			policy: InterNamespaceAllowed,
			want:   []string{"1 RouteConflict b/victim"},
		},
		"InterNamespaceAllowed: a class switch is a new claim": {
			gw: func() *v1.APIGateway {
				g := claimed(withClass(gw("a", "mover", users), "internal"), 1)
				g.Spec.IngressClassName = ptr.To("public")
				g.Status.Claims = Stamp(g, g.Status.Claims, Scopes(g, Classes{}), func(Scope) bool { return true }, t0.Add(9*time.Second), time.Time{})
				return g
			}(),
			others: []*v1.APIGateway{claimed(withClass(gw("b", "victim", users), "public"), 5)},
			policy: InterNamespaceAllowed,
			want:   []string{"0 RouteConflict b/victim"},
		},
		"admission: a new route comes after every stored one": {
			gw:        gw("b", "new", users),
			others:    []*v1.APIGateway{gw("a", "unreconciled", users)},
			admission: true,
			want:      []string{"0 HostOwned a/unreconciled"},
		},
		"admission: a stored route keeps its claim": {
			gw:        claimed(gw("a", "shop", users), 1),
			others:    []*v1.APIGateway{gw("b", "late", users)},
			admission: true,
		},
		"admission: one namespace, a stored route not yet claimed": {
			gw:        gw("a", "new", users),
			others:    []*v1.APIGateway{gw("a", "stored", users)},
			admission: true,
			want:      []string{"0 RouteConflict a/stored"},
		},
		// Seed 4 of TestAdmissionAgreesWithTheReconciler, reduced: a/y
		// stored the route during an outage and lost it to a/x; a/x is
		// re-created. Admission read a/y's route as holding nothing and
		// let a/x in; a/y's next pass must not take the route back with
		// its old time.
		"a route the gateway lost competes as a new one": {
			gw:     lostAll(claimed(gw("a", "y", users), 2)),
			others: []*v1.APIGateway{claimed(gw("a", "x", users), 3)},
			want:   []string{"0 RouteConflict a/x"},
		},
		"a route the gateway lost is regained when no one holds it": {
			gw:     lostAll(claimed(gw("a", "y", users), 2)),
			others: []*v1.APIGateway{lostAll(claimed(gw("a", "x", users), 1))},
		},
		"reconciler: a lost route waits for an unclaimed one's pass": {
			gw:     lostAll(claimed(gw("a", "y", users), 2)),
			others: []*v1.APIGateway{gw("a", "unreconciled", users)},
			want:   []string{"0 RouteConflict a/unreconciled"},
		},
		"reconciler: an unclaimed route of another gateway waits for its pass": {
			gw:     claimed(gw("b", "x", users), 5),
			others: []*v1.APIGateway{gw("a", "unreconciled", users)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			policy := tc.policy
			if policy == "" {
				policy = Strict
			}
			losses := Resolve(Input{Gateway: tc.gw, Claims: tc.gw.Status.Claims, Others: tc.others,
				Classes: tc.classes, Policy: policy, Admission: tc.admission})
			var got []string
			for _, l := range losses {
				got = append(got, fmt.Sprintf("%d %s %s/%s", l.Index, l.Reason, l.Holder.Namespace, l.Holder.Name))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// routingNowhere is g after a reconcile at t0+1s that found no scope
// routing.
func routingNowhere(g *v1.APIGateway) *v1.APIGateway {
	g = g.DeepCopy()
	g.Status.Claims = Stamp(g, nil, Scopes(g, Classes{}), func(Scope) bool { return false }, t0.Add(time.Second), time.Time{})
	g.Status.ObservedGeneration = g.Generation
	return g
}

// TestResolveAgreement: whichever of two competing gateways is decided,
// exactly one of them keeps the route, reconciled or at admission of the
// second.
func TestResolveAgreement(t *testing.T) {
	const host = "api.example.com"
	for name, pair := range map[string][2]*v1.APIGateway{
		"two namespaces":             {claimed(gw("b", "x", prefix(host, "/users")), 3), claimed(gw("a", "x", prefix(host, "/users/admin")), 1)},
		"two namespaces, a tie":      {claimed(gw("b", "x", prefix(host, "/users")), 1), claimed(gw("a", "y", prefix(host, "/cart")), 1)},
		"one namespace, same route":  {claimed(gw("a", "x", prefix(host, "/users")), 1), claimed(gw("a", "y", prefix(host, "/users/")), 1)},
		"wildcard and name under it": {claimed(gw("b", "x", prefix("*.example.com", "/")), 2), claimed(gw("a", "y", prefix(host, "/")), 2)},
	} {
		t.Run(name, func(t *testing.T) {
			serving := 0
			for i, g := range pair {
				other := pair[1-i]
				if len(Resolve(Input{Gateway: g, Claims: g.Status.Claims, Others: []*v1.APIGateway{other}, Policy: Strict})) == 0 {
					serving++
				}
			}
			assert.Equal(t, 1, serving)
		})
	}
}

func TestStamp(t *testing.T) {
	users, cart := prefix("api.example.com", "/users"), prefix("api.example.com", "/cart")
	g := withClass(gw("a", "shop", users), "nginx")
	all := func(Scope) bool { return true }
	first := Stamp(g, nil, Scopes(g, Classes{}), all, t0, time.Time{})
	assert.Equal(t, t0, first.RoutingSince.Time)
	assert.Equal(t, []v1.RouteClaim{{Route: "Prefix api.example.com/users", Since: metav1.NewMicroTime(t0)}}, first.Routes)
	assert.Equal(t, []v1.ScopeClaim{{Scope: `"nginx"`, Since: metav1.NewMicroTime(t0)}}, first.Scopes)

	g.Spec.Routes = append(g.Spec.Routes, cart, prefix("api.example.com", "/users/")) // the last: same match as users
	later := t0.Add(time.Minute)
	second := Stamp(g, first, Scopes(g, Classes{}), all, later, time.Time{})
	assert.Equal(t, t0, second.RoutingSince.Time, "routing goes on: its claim stays")
	assert.Equal(t, []v1.RouteClaim{
		{Route: "Prefix api.example.com/users", Since: metav1.NewMicroTime(t0)},
		{Route: "Prefix api.example.com/cart", Since: metav1.NewMicroTime(later)},
	}, second.Routes, "a new route is claimed now, an old one keeps its claim, a repeated match is one")

	floor := later.Add(time.Hour)
	g.Spec.Routes = append(g.Spec.Routes, prefix("api.example.com", "/orders"))
	third := Stamp(g, second, Scopes(g, Classes{}), all, later, floor)
	assert.Equal(t, floor.Add(time.Microsecond), third.Routes[2].Since.Time, "never before a claim it competes with")

	nowhere := Stamp(g, third, Scopes(g, Classes{}), func(Scope) bool { return false }, later, time.Time{})
	assert.Nil(t, nowhere.RoutingSince, "routing nowhere: no host claim")
	assert.Empty(t, nowhere.Scopes)
	again := Stamp(g, nowhere, Scopes(g, Classes{}), all, later.Add(time.Hour), time.Time{})
	assert.Equal(t, later.Add(time.Hour), again.RoutingSince.Time, "routing again is a new claim on the hosts")
	assert.Equal(t, t0, again.Routes[0].Since.Time, "the routes keep theirs")

	moved := withClass(g.DeepCopy(), "internal")
	switched := Stamp(moved, third, Scopes(moved, Classes{}), all, later.Add(2*time.Hour), time.Time{})
	assert.Equal(t, []v1.ScopeClaim{{Scope: `"internal"`, Since: metav1.NewMicroTime(later.Add(2 * time.Hour))}}, switched.Scopes,
		"a new class is a new scope claim")
	assert.Equal(t, t0, switched.RoutingSince.Time, "still routing somewhere: the hosts stay claimed")

	switched.Routes[1].Lost = true
	kept := Stamp(moved, switched, Scopes(moved, Classes{}), all, later.Add(3*time.Hour), time.Time{})
	assert.Equal(t, switched.Routes, kept.Routes, "a lost route stays lost, with its time, until MarkLost")
	assert.True(t, MarkLost(kept, nil))
	assert.False(t, kept.Routes[1].Lost, "regained")
	assert.False(t, MarkLost(kept, nil), "nothing changed")
}

func TestScopes(t *testing.T) {
	none := gw("a", "x", prefix("h.example.com", "/"))
	nginx := withClass(gw("a", "y", prefix("h.example.com", "/")), "nginx")
	classes := Classes{Default: "nginx", Exists: func(n string) bool { return n == "nginx" }}
	assert.Equal(t, []string{"default", `"nginx"`}, keysOf(Scopes(none, classes)), "no class: both spellings of the default")
	assert.Equal(t, "default", Scopes(none, classes)[0].Name, "named default whatever the default class")
	assert.Equal(t, []string{`"nginx"`, "default"}, keysOf(Scopes(nginx, classes)))
	assert.Equal(t, []string{"default"}, keysOf(Scopes(none, Classes{})), "no default class")
	assert.True(t, Scopes(nginx, classes)[0].IngressRoutes(classes))
	assert.False(t, Scopes(withClass(none.DeepCopy(), "bogus"), classes)[0].IngressRoutes(classes), "a class that does not exist routes nothing")
	assert.True(t, Scopes(none, Classes{Exists: func(string) bool { return false }})[0].IngressRoutes(classes), "no class and no default: may still route")
}

func keysOf(scopes []Scope) []string {
	var out []string
	for _, s := range scopes {
		out = append(out, s.Keys...)
	}
	return out
}

func TestClassesOf(t *testing.T) {
	class := func(name string, age int, def bool) metav1.PartialObjectMetadata {
		c := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-time.Duration(age) * time.Hour))}}
		if def {
			c.Annotations = map[string]string{DefaultClassAnnotation: "true"}
		}
		return c
	}
	c := ClassesOf([]metav1.PartialObjectMetadata{class("old", 9, true), class("new", 1, true), class("plain", 1, false)})
	assert.Equal(t, "new", c.Default, "the newest default, as the API server picks it")
	assert.True(t, c.Exists("plain"))
	assert.False(t, c.Exists("bogus"))
	assert.Empty(t, ClassesOf(nil).Default)
}

// TestResolveMatchesRouteKeys: two routes compete (RouteConflict) exactly
// when validation gives them one RouteKey in a shared scope.
func TestResolveMatchesRouteKeys(t *testing.T) {
	a := prefix("api.example.com", "/users/")
	b := prefix("api.example.com", "/%75sers")
	ka, _ := validation.RouteKey("default", &a)
	kb, _ := validation.RouteKey("default", &b)
	assert.Equal(t, ka, kb)
	losses := Resolve(Input{Gateway: claimed(gw("a", "y", b), 5), Others: []*v1.APIGateway{claimed(gw("a", "x", a), 1)}, Policy: Strict,
		Claims: claimed(gw("a", "y", b), 5).Status.Claims})
	assert.Len(t, losses, 1)
}

func paths(ps ...string) []v1.HTTPPath {
	out := make([]v1.HTTPPath, len(ps))
	for i, p := range ps {
		out[i] = v1.HTTPPath(p)
	}
	return out
}
