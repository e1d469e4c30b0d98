package controller

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
)

// The patterns Gateway API's HTTPRoute schema holds a path match's value
// and a hostname to (standard channel CRD): a value outside them is
// refused by the API server, and the gateway would have no HTTPRoute.
var (
	gatewayAPIPath     = regexp.MustCompile(`^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$`)
	gatewayAPIHostname = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// httpRouteGateway is gateway(name, routes...) exposed through HTTPRoutes
// attached to parents.
func httpRouteGateway(name string, parents []v1.ParentGatewayReference, routes ...v1.Route) *v1.APIGateway {
	gw := gateway(name, routes...)
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: parents}}
	return gw
}

// publicGateway is the parent most tests attach to.
var publicGateway = []v1.ParentGatewayReference{{Namespace: ptr.To("infra"), Name: "public"}}

// builtHTTPRoutes are desiredHTTPRoutes(gw) as the objects the API server
// would store, keyed by host.
func builtHTTPRoutes(t *testing.T, gw *v1.APIGateway) map[string]*gatewayv1.HTTPRoute {
	t.Helper()
	out := map[string]*gatewayv1.HTTPRoute{}
	for _, ac := range desiredHTTPRoutes(gw) {
		r := &gatewayv1.HTTPRoute{}
		require.NoError(t, convertJSON(ac, r))
		require.Len(t, r.Spec.Hostnames, 1, "HTTPRoute %s", r.Name)
		out[string(r.Spec.Hostnames[0])] = r
	}
	return out
}

// routeMatches are r's path matches as "type value", in order, after
// checking that every rule sends its requests to Service N port 80 and
// that every value is one Gateway API accepts.
func routeMatches(t *testing.T, gw *v1.APIGateway, r *gatewayv1.HTTPRoute) []string {
	t.Helper()
	var out []string
	for _, rule := range r.Spec.Rules {
		require.Len(t, rule.BackendRefs, 1)
		ref := rule.BackendRefs[0].BackendObjectReference
		assert.Equal(t, gatewayv1.ObjectName(gw.Name), ref.Name, "every rule goes to Service N")
		assert.Equal(t, gatewayv1.PortNumber(servicePort), *ref.Port)
		// The schema's defaults, which the API server would otherwise add
		// to the rules the operator owns (see httpRouteRules).
		assert.Equal(t, gatewayv1.Group(""), *ref.Group)
		assert.Equal(t, gatewayv1.Kind("Service"), *ref.Kind)
		assert.Equal(t, int32(1), *rule.BackendRefs[0].Weight)
		for _, m := range rule.Matches {
			assert.Regexp(t, gatewayAPIPath, *m.Path.Value, "Gateway API refuses this path")
			out = append(out, string(*m.Path.Type)+" "+*m.Path.Value)
		}
	}
	return out
}

// TestDesiredHTTPRoutesOnePerHost: each host gets its own HTTPRoute with
// only its own paths, so no HTTPRoute claims a path on another host.
func TestDesiredHTTPRoutesOnePerHost(t *testing.T) {
	gw := httpRouteGateway("shop", publicGateway,
		route("b.example.com", "/y", v1.PathTypePrefix, "y", 8080),
		route("a.example.com", "/x", v1.PathTypePrefix, "x", 8080),
		route("b.example.com", "/z", v1.PathTypeExact, "z", 8080))

	acs := desiredHTTPRoutes(gw)
	require.Len(t, acs, 2)
	assert.Equal(t, HTTPRouteName(gw, "a.example.com"), *acs[0].Name, "in host order")
	assert.Equal(t, HTTPRouteName(gw, "b.example.com"), *acs[1].Name)

	routes := builtHTTPRoutes(t, gw)
	assert.Equal(t, []string{"PathPrefix /x"}, routeMatches(t, gw, routes["a.example.com"]))
	assert.Equal(t, []string{"PathPrefix /y", "Exact /z"}, routeMatches(t, gw, routes["b.example.com"]))
	for _, r := range routes {
		assert.Equal(t, "shop", r.Namespace)
		assert.Equal(t, childLabels(gw), r.Labels)
		ref := metav1.GetControllerOf(r)
		require.NotNil(t, ref, "HTTPRoute %s has no controller", r.Name)
		assert.Equal(t, gw.UID, ref.UID)
		assert.True(t, *ref.BlockOwnerDeletion)
	}

	d, err := Children(gw, ChildOptions{DefaultImage: testImage})
	require.NoError(t, err)
	assert.Nil(t, d.Ingress, "an HTTPRoute gateway has no Ingress")
	assert.Equal(t, acs, d.HTTPRoutes)
}

func TestHTTPRoutePaths(t *testing.T) {
	tests := map[string]struct {
		routes []v1.Route
		want   []string
	}{
		"Prefix and Exact": {
			routes: []v1.Route{
				route("h.example.com", "/users", v1.PathTypePrefix, "users", 8080),
				route("h.example.com", "/orders", v1.PathTypeExact, "orders", 8080),
				route("h.example.com", "/status", "", "status", 8080), // the schema's default, Prefix
			},
			want: []string{"Exact /orders", "PathPrefix /status", "PathPrefix /users"},
		},
		"a prefix loses its trailing slash, an exact path keeps it": {
			routes: []v1.Route{
				route("h.example.com", "/users/", v1.PathTypePrefix, "users", 8080),
				route("h.example.com", "/orders/", v1.PathTypeExact, "orders", 8080),
			},
			want: []string{"Exact /orders/", "PathPrefix /users"},
		},
		"root": {
			routes: []v1.Route{
				route("h.example.com", "/", v1.PathTypePrefix, "web", 80),
				route("h.example.com", "/", v1.PathTypeExact, "home", 80),
			},
			want: []string{"Exact /", "PathPrefix /"},
		},
		"percent-encoding decoded, then only what Gateway API forbids re-encoded, in upper case": {
			routes: []v1.Route{
				route("h.example.com", "/caf%C3%A9", v1.PathTypePrefix, "cafe", 8080),
				route("h.example.com", "/th%c3%a9/", v1.PathTypeExact, "tea", 8080),
				route("h.example.com", "/%75sers", v1.PathTypePrefix, "users", 8080),
				route("h.example.com", "/%7Ehome", v1.PathTypeExact, "home", 8080),
				route("h.example.com", "/50%25", v1.PathTypeExact, "percent", 8080),
			},
			want: []string{"Exact /50%25", "Exact /th%C3%A9/", "Exact /~home", "PathPrefix /caf%C3%A9", "PathPrefix /users"},
		},
		"routes nginx serves alike share one match": {
			routes: []v1.Route{
				route("h.example.com", "/users", v1.PathTypePrefix, "users", 8080),
				route("h.example.com", "/users/", v1.PathTypePrefix, "users-v2", 8080),
				route("h.example.com", "/%75sers", v1.PathTypePrefix, "users-v3", 8080),
			},
			want: []string{"PathPrefix /users"},
		},
		"a route the renderer refuses is left out": {
			routes: []v1.Route{
				route("h.example.com", "/ok", v1.PathTypePrefix, "ok", 8080),
				route("h.example.com", "/a%20b", v1.PathTypePrefix, "space", 8080),
				route("h.example.com", "/a%252Fb", v1.PathTypeExact, "slash", 8080),
				route("h.example.com", "/x", "Regex", "regex", 8080),
			},
			want: []string{"PathPrefix /ok"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := httpRouteGateway("gw", publicGateway, tc.routes...)
			routes := builtHTTPRoutes(t, gw)
			require.Len(t, routes, 1)
			// In any order: a Gateway orders matches by its own precedence
			// rules; the golden files pin the order the operator writes.
			assert.ElementsMatch(t, tc.want, routeMatches(t, gw, routes["h.example.com"]))
		})
	}
}

// TestHTTPRouteRulesStayWithinGatewayAPILimits: Gateway API allows an
// HTTPRoute 16 rules and 128 matches in all; a gateway has up to 100
// routes, which may all be on one host.
func TestHTTPRouteRulesStayWithinGatewayAPILimits(t *testing.T) {
	for _, n := range []int{1, 15, 16, 17, 33, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			gw := httpRouteGateway("many", publicGateway, manyPaths("many.example.com", n)...)
			r := builtHTTPRoutes(t, gw)["many.example.com"]
			require.NotNil(t, r)
			assert.LessOrEqual(t, len(r.Spec.Rules), 16, "rules")
			if n <= 16 {
				assert.Len(t, r.Spec.Rules, n, "one rule per path while they fit")
			}
			var want []string
			for i := range n {
				want = append(want, fmt.Sprintf("PathPrefix /p%03d", i))
			}
			got := routeMatches(t, gw, r)
			assert.LessOrEqual(t, len(got), 128, "matches")
			assert.Equal(t, want, got, "every path, once")
		})
	}
}

// manyPaths are n Prefix routes /p000, /p001, ... on host.
func manyPaths(host string, n int) []v1.Route {
	routes := make([]v1.Route, n)
	for i := range routes {
		routes[i] = route(host, fmt.Sprintf("/p%03d", i), v1.PathTypePrefix, "web", 80)
	}
	return routes
}

func TestHTTPRouteParentRefs(t *testing.T) {
	gatewayKind := gatewayv1.Kind("Gateway")
	group := gatewayv1.Group(gatewayv1.GroupName)
	tests := map[string]struct {
		parent v1.ParentGatewayReference
		want   gatewayv1.ParentReference
	}{
		"name only: the gateway's namespace, every listener": {
			parent: v1.ParentGatewayReference{Name: "public"},
			want:   gatewayv1.ParentReference{Group: &group, Kind: &gatewayKind, Name: "public"},
		},
		"namespace": {
			parent: v1.ParentGatewayReference{Namespace: ptr.To("infra"), Name: "public"},
			want:   gatewayv1.ParentReference{Group: &group, Kind: &gatewayKind, Namespace: ptr.To(gatewayv1.Namespace("infra")), Name: "public"},
		},
		"listener": {
			parent: v1.ParentGatewayReference{Name: "public", SectionName: ptr.To("https")},
			want: gatewayv1.ParentReference{Group: &group, Kind: &gatewayKind, Name: "public",
				SectionName: ptr.To(gatewayv1.SectionName("https"))},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := httpRouteGateway("gw", []v1.ParentGatewayReference{tc.parent, {Name: "second"}},
				route("a.example.com", "/", v1.PathTypePrefix, "web", 80),
				route("b.example.com", "/", v1.PathTypePrefix, "web", 80))
			for host, r := range builtHTTPRoutes(t, gw) {
				require.Len(t, r.Spec.ParentRefs, 2, host)
				assert.Equal(t, tc.want, r.Spec.ParentRefs[0], "every HTTPRoute attaches to every parent, in order (%s)", host)
				assert.Equal(t, gatewayv1.ObjectName("second"), r.Spec.ParentRefs[1].Name)
			}
		})
	}
}

// TestHTTPRouteNames: a name is a valid object name, the same on every
// reconcile (or the operator would delete and recreate its HTTPRoutes),
// and different for each host and each gateway.
func TestHTTPRouteNames(t *testing.T) {
	hosts := []string{"a.example.com", "b.example.com", "*.example.com", "example.com", strings.Repeat("x", 63) + ".example.com"}
	gw := httpRouteGateway("shop", publicGateway)
	other := gw.DeepCopy()
	other.Name = "shop2"
	seen := map[string]string{}
	for _, h := range hosts {
		name := HTTPRouteName(gw, h)
		assert.Empty(t, validation.IsDNS1123Subdomain(name), "%q is not an object name", name)
		assert.True(t, strings.HasPrefix(name, "shop-"), "%q does not name its gateway", name)
		assert.Equal(t, name, HTTPRouteName(gw.DeepCopy(), h), "not stable")
		assert.NotEqual(t, name, HTTPRouteName(other, h), "two gateways share a name")
		if prev, dup := seen[name]; dup {
			t.Errorf("hosts %q and %q share the name %q", prev, h, name)
		}
		seen[name] = h
	}
	// The golden name, so a change of the naming rule, which would orphan
	// every existing HTTPRoute until the next reconcile deletes it, shows.
	assert.Equal(t, "shop-7653e4959f", HTTPRouteName(gw, "a.example.com"))
}

// TestHTTPRouteWildcardHost: a wildcard host is a hostname as Gateway
// API writes it, and gets a name like any other host.
func TestHTTPRouteWildcardHost(t *testing.T) {
	gw := httpRouteGateway("wild", publicGateway, route("*.apps.example.com", "/api", v1.PathTypePrefix, "api", 8080))
	r := builtHTTPRoutes(t, gw)["*.apps.example.com"]
	require.NotNil(t, r)
	assert.Equal(t, []gatewayv1.Hostname{"*.apps.example.com"}, r.Spec.Hostnames)
	assert.Regexp(t, gatewayAPIHostname, string(r.Spec.Hostnames[0]))
	assert.Equal(t, HTTPRouteName(gw, "*.apps.example.com"), r.Name)
	assert.Empty(t, validation.IsDNS1123Subdomain(r.Name))
}

// parentRef is a status entry's parentRef for Gateway ns/name, as a
// Gateway controller writes it (group and kind left to their defaults).
func parentRef(ns, name string) gatewayv1.ParentReference {
	ref := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
	if ns != "" {
		ref.Namespace = ptr.To(gatewayv1.Namespace(ns))
	}
	return ref
}

func cond(typ string, status metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: generation, Message: typ + " " + reason}
}

// accepted are the conditions of a parent that accepted a route of
// generation and resolved its backend.
func accepted(generation int64) []metav1.Condition {
	return []metav1.Condition{cond("Accepted", "True", "Accepted", generation), cond("ResolvedRefs", "True", "ResolvedRefs", generation)}
}

// statusRoute is an HTTPRoute of gw for host at generation 2, with the
// parents' status entries.
func statusRoute(gw *v1.APIGateway, host string, parents ...gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
	r := &gatewayv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: HTTPRouteName(gw, host), Namespace: gw.Namespace, Generation: 2},
		Spec:       gatewayv1.HTTPRouteSpec{Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)}},
	}
	r.Status.Parents = parents
	return r
}

func parentStatus(ref gatewayv1.ParentReference, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
	return gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: "example.net/gateway-controller", Conditions: conds}
}

func TestFindParentStatus(t *testing.T) {
	withSection := func(ref gatewayv1.ParentReference, s string) gatewayv1.ParentReference {
		ref.SectionName = ptr.To(gatewayv1.SectionName(s))
		return ref
	}
	withKind := func(ref gatewayv1.ParentReference, group, kind string) gatewayv1.ParentReference {
		ref.Group, ref.Kind = ptr.To(gatewayv1.Group(group)), ptr.To(gatewayv1.Kind(kind))
		return ref
	}
	tests := map[string]struct {
		parent  v1.ParentGatewayReference
		entries []gatewayv1.ParentReference
		want    int // index of the entry found, -1 for none
	}{
		"no namespace on either side: the route's": {
			parent: v1.ParentGatewayReference{Name: "public"}, entries: []gatewayv1.ParentReference{parentRef("", "public")}, want: 0,
		},
		"the route's namespace written out": {
			parent: v1.ParentGatewayReference{Name: "public"}, entries: []gatewayv1.ParentReference{parentRef("shop", "public")}, want: 0,
		},
		"the gateway's namespace written out, the entry's left to default": {
			parent: v1.ParentGatewayReference{Namespace: ptr.To("shop"), Name: "public"}, entries: []gatewayv1.ParentReference{parentRef("", "public")}, want: 0,
		},
		"a Gateway of that name in another namespace": {
			parent: v1.ParentGatewayReference{Name: "public"}, entries: []gatewayv1.ParentReference{parentRef("infra", "public")}, want: -1,
		},
		"another namespace's Gateway": {
			parent:  v1.ParentGatewayReference{Namespace: ptr.To("infra"), Name: "public"},
			entries: []gatewayv1.ParentReference{parentRef("", "public"), parentRef("infra", "public")}, want: 1,
		},
		"the listener named": {
			parent: v1.ParentGatewayReference{Name: "public", SectionName: ptr.To("https")},
			entries: []gatewayv1.ParentReference{
				parentRef("", "public"), withSection(parentRef("", "public"), "http"), withSection(parentRef("", "public"), "https"),
			},
			want: 2,
		},
		"an entry for one listener is not the whole Gateway's": {
			parent: v1.ParentGatewayReference{Name: "public"}, entries: []gatewayv1.ParentReference{withSection(parentRef("", "public"), "https")}, want: -1,
		},
		"group and kind written out": {
			parent:  v1.ParentGatewayReference{Name: "public"},
			entries: []gatewayv1.ParentReference{withKind(parentRef("", "public"), gatewayv1.GroupName, "Gateway")}, want: 0,
		},
		"a parent of another kind, of the same name": {
			parent: v1.ParentGatewayReference{Name: "public"},
			entries: []gatewayv1.ParentReference{
				withKind(parentRef("", "public"), "", "Service"), withKind(parentRef("", "public"), "example.com", "Gateway"),
			},
			want: -1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := httpRouteGateway("gw", []v1.ParentGatewayReference{tc.parent})
			var parents []gatewayv1.RouteParentStatus
			for _, ref := range tc.entries {
				parents = append(parents, parentStatus(ref, accepted(2)...))
			}
			r := statusRoute(gw, "h.example.com", parents...)
			got := findParentStatus(r, &tc.parent)
			if tc.want < 0 {
				assert.Nil(t, got)
				return
			}
			assert.Same(t, &r.Status.Parents[tc.want], got)
		})
	}
}

func TestVerdictsCondition(t *testing.T) {
	public := v1.ParentGatewayReference{Namespace: ptr.To("infra"), Name: "public", SectionName: ptr.To("https")}
	internal := v1.ParentGatewayReference{Name: "internal"}
	publicRef := parentRef("infra", "public")
	publicRef.SectionName = ptr.To(gatewayv1.SectionName("https"))
	internalRef := parentRef("", "internal")
	refused := cond("Accepted", "False", "NotAllowedByListeners", 2)
	refused.Message = "no listener allows routes from namespace shop"

	tests := map[string]struct {
		parents []gatewayv1.RouteParentStatus // of the route for a.example.com; internal always accepts
		status  metav1.ConditionStatus
		reason  string
		message []string // parts the message must contain
	}{
		"no status yet": {
			status: "Unknown", reason: v1.ReasonPending,
			message: []string{"waiting for the parent Gateways' controller", "(a.example.com) at Gateway infra/public listener https: no status yet"},
		},
		"accepted and backend resolved": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(publicRef, accepted(2)...)},
			status:  "True", reason: v1.ReasonExposed, message: []string{"every parent Gateway accepted the 2 HTTPRoutes"},
		},
		"accepted, backends not yet reported": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(publicRef, cond("Accepted", "True", "Accepted", 2))},
			status:  "Unknown", reason: v1.ReasonPending, message: []string{"no status yet"},
		},
		"the verdict on an older generation": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(publicRef, accepted(1)...)},
			status:  "Unknown", reason: v1.ReasonPending, message: []string{"no status yet"},
		},
		"a verdict not reached": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(publicRef, cond("Accepted", "Unknown", "Pending", 2))},
			status:  "Unknown", reason: v1.ReasonPending, message: []string{"Accepted=Unknown Pending"},
		},
		"an entry for another listener only": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(parentRef("infra", "public"), accepted(2)...)},
			status:  "Unknown", reason: v1.ReasonPending, message: []string{"no status yet"},
		},
		"refused: the Gateway's reason and message": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(publicRef, refused)},
			status:  "False", reason: "NotAllowedByListeners",
			message: []string{"(a.example.com) at Gateway infra/public listener https: Accepted=False NotAllowedByListeners: no listener allows routes from namespace shop"},
		},
		"accepted, backend not found": {
			parents: []gatewayv1.RouteParentStatus{parentStatus(publicRef,
				cond("Accepted", "True", "Accepted", 2), cond("ResolvedRefs", "False", "BackendNotFound", 2))},
			status: "False", reason: "BackendNotFound", message: []string{"ResolvedRefs=False BackendNotFound"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := httpRouteGateway("gw", []v1.ParentGatewayReference{public, internal})
			routes := []*gatewayv1.HTTPRoute{
				statusRoute(gw, "a.example.com", append(tc.parents, parentStatus(internalRef, accepted(2)...))...),
				statusRoute(gw, "b.example.com", parentStatus(publicRef, accepted(2)...), parentStatus(internalRef, accepted(2)...)),
			}
			c := verdictsCondition(gw, routes)
			assert.Equal(t, v1.ConditionExposed, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			for _, part := range tc.message {
				assert.Contains(t, c.Message, part)
			}
			assert.NotContains(t, c.Message, "b.example.com", "only the routes that are not exposed are named")
		})
	}

	t.Run("a refusal outweighs a parent yet to answer", func(t *testing.T) {
		gw := httpRouteGateway("gw", []v1.ParentGatewayReference{public, internal})
		c := verdictsCondition(gw, []*gatewayv1.HTTPRoute{statusRoute(gw, "a.example.com", parentStatus(internalRef, refused))})
		assert.Equal(t, metav1.ConditionFalse, c.Status)
		assert.Equal(t, "NotAllowedByListeners", c.Reason)
		assert.Contains(t, c.Message, "at Gateway shop/internal")
		assert.NotContains(t, c.Message, "no status yet", "the message is about the refusal")
	})
}

func TestExposedCondition(t *testing.T) {
	gw := httpRouteGateway("gw", publicGateway,
		route("a.example.com", "/", v1.PathTypePrefix, "web", 80), route("b.example.com", "/", v1.PathTypePrefix, "web", 80))
	ok := func(host string) *gatewayv1.HTTPRoute {
		return statusRoute(gw, host, parentStatus(parentRef("infra", "public"), accepted(2)...))
	}
	both := []*gatewayv1.HTTPRoute{ok("a.example.com"), ok("b.example.com")}
	missing := []failure{{kind: "HTTPRoute", name: "gw-*", reason: v1.ReasonGatewayAPIMissing, err: errGatewayAPIMissing}}

	tests := map[string]struct {
		gw       *v1.APIGateway
		routes   []*gatewayv1.HTTPRoute
		wanted   int
		failures []failure
		status   metav1.ConditionStatus
		reason   string
		message  string
	}{
		"every parent accepted every route": {
			gw: gw, routes: both, wanted: 2, status: "True", reason: v1.ReasonExposed,
		},
		"no Gateway API on the cluster": {
			gw: gw, wanted: 2, failures: missing, status: "False", reason: v1.ReasonGatewayAPIMissing, message: "install Gateway API's CRDs",
		},
		"other gateways serve every route": {
			gw: gw, wanted: 0, status: "False", reason: v1.ReasonRouteConflict, message: "see the Accepted condition",
		},
		"an HTTPRoute failed to apply": {
			gw: gw, routes: both[:1], wanted: 2, failures: []failure{{kind: "HTTPRoute", reason: ReasonApplyFailed}},
			status: "Unknown", reason: v1.ReasonPending, message: "1 of 2 HTTPRoutes applied; see the Degraded condition",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := exposedCondition(tc.gw, tc.routes, tc.wanted, tc.failures)
			require.NotNil(t, c)
			assert.Equal(t, v1.ConditionExposed, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.message)
		})
	}

	t.Run("an Ingress gateway has no Exposed condition", func(t *testing.T) {
		ing := gateway("ing", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
		assert.Nil(t, exposedCondition(ing, nil, 0, nil))
		assert.Nil(t, exposedCondition(ing, nil, 0, missing), "not even without Gateway API")
	})
}

// TestExposedMessageIsBounded: neither a Gateway's long message nor many
// refused routes make the condition's message grow without bound (the API
// server refuses a condition message over 32768 bytes; kubectl describe
// should stay readable long before that).
func TestExposedMessageIsBounded(t *testing.T) {
	const bound = 2048
	tests := map[string]struct {
		routes     int
		gwMessage  string
		wantInside string
	}{
		"a Gateway's message of 10,000 bytes":         {routes: 1, gwMessage: strings.Repeat("x", 10000), wantInside: strings.Repeat("x", 200)},
		"a long message of multi-byte characters":     {routes: 1, gwMessage: strings.Repeat("é", 5000), wantInside: strings.Repeat("é", 100)},
		"100 HTTPRoutes refused, each at length":      {routes: 100, gwMessage: strings.Repeat("y", 1000), wantInside: "; and 97 more"},
		"100 HTTPRoutes refused, with short messages": {routes: 100, gwMessage: "not allowed", wantInside: "; and 97 more"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := httpRouteGateway("gw", publicGateway)
			refused := cond("Accepted", "False", "NotAllowedByListeners", 2)
			refused.Message = tc.gwMessage
			var routes []*gatewayv1.HTTPRoute
			for i := range tc.routes {
				routes = append(routes, statusRoute(gw, fmt.Sprintf("h%03d.example.com", i), parentStatus(parentRef("infra", "public"), refused)))
			}
			c := exposedCondition(gw, routes, len(routes), nil)
			require.NotNil(t, c)
			assert.Equal(t, "NotAllowedByListeners", c.Reason)
			assert.LessOrEqual(t, len(c.Message), bound)
			assert.True(t, utf8.ValidString(c.Message), "cut inside a character")
			assert.Contains(t, c.Message, tc.wantInside)
			assert.Contains(t, c.Message, "h000.example.com", "the first refused route is named")
		})
	}
}

// gatewayAPIDuration is the pattern of Gateway API's Duration (GEP-2257),
// which the HTTPRoute schema holds a rule's timeouts to.
var gatewayAPIDuration = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// withTimeouts is r with timeouts connect and read seconds (0: unset).
func withTimeouts(r v1.Route, connect, read int32) v1.Route {
	r.Timeouts = &v1.RouteTimeouts{}
	if connect > 0 {
		r.Timeouts.ConnectSeconds = ptr.To(connect)
	}
	if read > 0 {
		r.Timeouts.ReadSeconds = ptr.To(read)
	}
	return r
}

// matchTimeouts are the request timeout of the rule of each of r's
// matches ("type value"), "" for a rule without one, after checking each
// is a Gateway API Duration.
func matchTimeouts(t *testing.T, r *gatewayv1.HTTPRoute) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rule := range r.Spec.Rules {
		timeout := ""
		if rule.Timeouts != nil {
			require.NotNil(t, rule.Timeouts.Request, "a rule with timeouts has a request timeout")
			assert.Nil(t, rule.Timeouts.BackendRequest, "only the request timeout is set")
			timeout = string(*rule.Timeouts.Request)
			assert.Regexp(t, gatewayAPIDuration, timeout)
		}
		for _, m := range rule.Matches {
			out[string(*m.Path.Type)+" "+*m.Path.Value] = timeout
		}
	}
	return out
}

// TestHTTPRouteTimeouts: a route's rule has a request timeout of its
// connect and read timeouts together (nginx's 60 s for the one unset), so
// the parent Gateway does not cut a request nginx still waits for; a route
// without timeouts gets none, as before they existed.
func TestHTTPRouteTimeouts(t *testing.T) {
	h := "h.example.com"
	tests := map[string]struct {
		routes []v1.Route
		want   map[string]string
	}{
		"no timeouts": {
			routes: []v1.Route{route(h, "/a", v1.PathTypePrefix, "a", 80), route(h, "/b", v1.PathTypeExact, "b", 80)},
			want:   map[string]string{"PathPrefix /a": "", "Exact /b": ""},
		},
		"both set": {
			routes: []v1.Route{withTimeouts(route(h, "/a", v1.PathTypePrefix, "a", 80), 5, 10)},
			want:   map[string]string{"PathPrefix /a": "15s"},
		},
		"read only: connect is nginx's 60 s": {
			routes: []v1.Route{withTimeouts(route(h, "/a", v1.PathTypePrefix, "a", 80), 0, 300)},
			want:   map[string]string{"PathPrefix /a": "6m"},
		},
		"connect only: read is nginx's 60 s": {
			routes: []v1.Route{withTimeouts(route(h, "/a", v1.PathTypePrefix, "a", 80), 15, 0)},
			want:   map[string]string{"PathPrefix /a": "1m15s"},
		},
		"the longest the API allows": {
			routes: []v1.Route{withTimeouts(route(h, "/a", v1.PathTypePrefix, "a", 80), 75, 3600)},
			want:   map[string]string{"PathPrefix /a": "1h1m15s"},
		},
		"timeouts without a value set none": {
			routes: []v1.Route{withTimeouts(route(h, "/a", v1.PathTypePrefix, "a", 80), 0, 0)},
			want:   map[string]string{"PathPrefix /a": ""},
		},
		"each route its own, beside routes without": {
			routes: []v1.Route{
				route(h, "/plain", v1.PathTypePrefix, "plain", 80),
				withTimeouts(route(h, "/slow", v1.PathTypePrefix, "slow", 80), 5, 600),
				withTimeouts(route(h, "/fast", v1.PathTypeExact, "fast", 80), 1, 2),
				withTimeouts(route(h, "/also-fast", v1.PathTypePrefix, "fast", 80), 2, 1),
				route(h, "/", v1.PathTypePrefix, "web", 80),
			},
			want: map[string]string{"PathPrefix /plain": "", "PathPrefix /": "", "PathPrefix /slow": "10m5s",
				"Exact /fast": "3s", "PathPrefix /also-fast": "3s"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := httpRouteGateway("gw", publicGateway, tc.routes...)
			r := builtHTTPRoutes(t, gw)[h]
			require.NotNil(t, r)
			assert.Equal(t, tc.want, matchTimeouts(t, r))
			assert.Len(t, r.Spec.Rules, len(tc.routes), "one rule per path while they fit")
		})
	}
}

// TestHTTPRouteTimeoutsFollowTheServedRoute: of two routes nginx serves
// alike, the rule takes the timeouts of the one whose backend nginx
// sends the requests to.
func TestHTTPRouteTimeoutsFollowTheServedRoute(t *testing.T) {
	h := "h.example.com"
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		routes := []v1.Route{
			withTimeouts(route(h, "/users", v1.PathTypePrefix, "users", 8080), 1, 9),
			withTimeouts(route(h, "/%75sers/", v1.PathTypePrefix, "users-v2", 8080), 1, 99),
		}
		gw := httpRouteGateway("gw", publicGateway, routes[order[0]], routes[order[1]])
		config, err := render.Config(gw, render.Options{})
		require.NoError(t, err)
		usersServed := strings.Contains(config, `"users.shop.svc.`)
		v2Served := strings.Contains(config, `"users-v2.shop.svc.`)
		require.NotEqual(t, usersServed, v2Served, "nginx serves /users from one route:\n%s", config)
		served, want := "users", "10s"
		if v2Served {
			served, want = "users-v2", "1m40s"
		}
		assert.Equal(t, map[string]string{"PathPrefix /users": want}, matchTimeouts(t, builtHTTPRoutes(t, gw)[h]),
			"the timeouts of %s, whose backend nginx uses", served)
	}
}

// TestHTTPRouteTimeoutsWithinGatewayAPILimits: however many timeouts a
// host's routes set, its HTTPRoute has at most 16 rules of at most 64
// matches, every path once, no path in a rule with a shorter request
// timeout than its own route's (a longer one is safe: nginx ends the
// request first), and no path without timeouts in a rule with one.
func TestHTTPRouteTimeoutsWithinGatewayAPILimits(t *testing.T) {
	const h = "many.example.com"
	tests := map[string]struct {
		n       int
		timeout func(i int) (connect, read int32) // 0, 0: none
		exact   bool                              // every path keeps exactly its own timeout
	}{
		"15 timeouts and paths without": {n: 100, exact: true, timeout: func(i int) (int32, int32) {
			if i%10 == 0 && i < 150 {
				return 1, int32(i + 1)
			}
			return 0, 0
		}},
		"16 timeouts, none without": {n: 16, exact: true, timeout: func(i int) (int32, int32) { return 1, int32(i + 1) }},
		"100 timeouts":              {n: 100, timeout: func(i int) (int32, int32) { return 1, int32(i*7 + 1) }},
		"100 timeouts, a path without": {n: 100, timeout: func(i int) (int32, int32) {
			if i == 50 {
				return 0, 0
			}
			return int32(i%75 + 1), int32(i * 30)
		}},
		"85 without, 15 timeouts": {n: 100, timeout: func(i int) (int32, int32) {
			if i < 85 {
				return 0, 0
			}
			return 1, int32(i)
		}},
		"85 with one timeout, 15 others": {n: 100, timeout: func(i int) (int32, int32) {
			if i < 85 {
				return 5, 5
			}
			return 1, int32(i)
		}},
		"17 timeouts, one path each": {n: 17, timeout: func(i int) (int32, int32) { return 1, int32(i + 1) }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			routes := manyPaths(h, tc.n)
			own := map[string]int32{} // seconds, by match
			for i := range routes {
				if c, r := tc.timeout(i); c > 0 || r > 0 {
					routes[i] = withTimeouts(routes[i], c, r)
				}
				own[fmt.Sprintf("PathPrefix /p%03d", i)] = requestSeconds(render.Resolve(gateway("one", routes[i]), render.Options{}).Routes[0])
			}
			r := builtHTTPRoutes(t, httpRouteGateway("many", publicGateway, routes...))[h]
			require.NotNil(t, r)
			assert.LessOrEqual(t, len(r.Spec.Rules), 16, "rules")
			total := 0
			for _, rule := range r.Spec.Rules {
				assert.LessOrEqual(t, len(rule.Matches), 64, "matches of a rule")
				total += len(rule.Matches)
			}
			assert.Equal(t, tc.n, total, "every path once")
			got := matchTimeouts(t, r)
			require.Len(t, got, tc.n)
			for match, seconds := range own {
				timeout, ok := got[match]
				require.True(t, ok, "%s is missing", match)
				if seconds == 0 {
					assert.Empty(t, timeout, "%s sets no timeouts", match)
					continue
				}
				require.NotEmpty(t, timeout, "%s lost its timeout", match)
				d, err := time.ParseDuration(timeout)
				require.NoError(t, err)
				assert.GreaterOrEqual(t, d, time.Duration(seconds)*time.Second, "%s: shorter than nginx waits", match)
				if tc.exact {
					assert.Equal(t, time.Duration(seconds)*time.Second, d, "%s: room for its own", match)
				}
			}
		})
	}
}

func TestGatewayDuration(t *testing.T) {
	for seconds, want := range map[int32]string{
		0: "0s", 1: "1s", 59: "59s", 60: "1m", 75: "1m15s", 120: "2m", 3600: "1h", 3601: "1h1s", 3660: "1h1m", 3675: "1h1m15s",
	} {
		got := string(gatewayDuration(seconds))
		assert.Equal(t, want, got, "%d s", seconds)
		assert.Regexp(t, gatewayAPIDuration, got)
		d, err := time.ParseDuration(got)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(seconds)*time.Second, d, "%s", got)
	}
}

// TestParentAnswers: a parent Gateway's verdict on a gateway's HTTPRoutes
// is True once it accepted one, False when it refused every one it
// answered for, and absent (so read, and counted as routing if it exists)
// when it answered none.
func TestParentAnswers(t *testing.T) {
	answered := func(ns string, entries ...gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
		r.Status.Parents = entries
		return r
	}
	entry := func(ref gatewayv1.ParentReference, accepted metav1.ConditionStatus) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{ParentRef: ref, Conditions: []metav1.Condition{cond("Accepted", accepted, "Reason", 1)}}
	}
	service := parentRef("infra", "public")
	service.Kind = ptr.To(gatewayv1.Kind("Service"))
	for _, tc := range []struct {
		name   string
		routes []*gatewayv1.HTTPRoute
		want   map[string]metav1.ConditionStatus
	}{
		{"no HTTPRoutes", nil, map[string]metav1.ConditionStatus{}},
		{"refused", []*gatewayv1.HTTPRoute{answered("shop", entry(parentRef("infra", "public"), "False"))},
			map[string]metav1.ConditionStatus{"gateway infra/public": "False"}},
		{"refused one, accepted another", []*gatewayv1.HTTPRoute{
			answered("shop", entry(parentRef("infra", "public"), "True")),
			answered("shop", entry(parentRef("infra", "public"), "False")),
		}, map[string]metav1.ConditionStatus{"gateway infra/public": "True"}},
		{"the namespace is the HTTPRoute's when the entry names none", []*gatewayv1.HTTPRoute{answered("shop", entry(parentRef("", "public"), "False"))},
			map[string]metav1.ConditionStatus{"gateway shop/public": "False"}},
		{"Unknown is no answer", []*gatewayv1.HTTPRoute{answered("shop", entry(parentRef("infra", "public"), "Unknown"))},
			map[string]metav1.ConditionStatus{}},
		{"a parent of another kind is not a Gateway", []*gatewayv1.HTTPRoute{answered("shop", entry(service, "False"))},
			map[string]metav1.ConditionStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parentAnswers(tc.routes))
		})
	}
}
