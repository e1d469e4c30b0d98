package offline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
)

func rt(host, path string, pt v1.PathType, svc string, port int32) v1.Route {
	return v1.Route{Host: v1.Hostname(host), Path: v1.HTTPPath(path), PathType: pt,
		BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
}

func agw(ns, name string, routes ...v1.Route) v1.APIGateway {
	return v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}, Spec: v1.APIGatewaySpec{Routes: routes}}
}

// claimedAt is gw with every route and its scope claimed at t, as the
// operator records it.
func claimedAt(gw v1.APIGateway, t time.Time) v1.APIGateway {
	gw.Status.Claims = ownership.Stamp(&gw, nil, ownership.Scopes(&gw, ownership.Classes{}),
		func(ownership.Scope) bool { return true }, t, time.Time{})
	gw.Status.ObservedGeneration = gw.Generation
	return gw
}

func onParent(gw v1.APIGateway, ns, name string) v1.APIGateway {
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{
		ParentRefs: []v1.ParentGatewayReference{{Namespace: ptr.To(ns), Name: name}}}}
	return gw
}

// summary is a row as "host path type gateway: status".
func summary(rows []RouteRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Host + " " + r.Path + " " + string(r.PathType) + " " + r.Gateway + ": " + statusText(r)
	}
	return out
}

func TestRoutesWhoServes(t *testing.T) {
	const h = "api.example.com"
	early, late := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	delegating := agw("team-a", "shop", rt(h, "/", v1.PathTypePrefix, "web", 80))
	delegating.Spec.Delegations = []v1.HostDelegation{{Host: h, Namespace: "team-b", PathPrefixes: []v1.HTTPPath{"/cart"}}}
	deleting := agw("team-a", "old", rt(h, "/users", v1.PathTypePrefix, "users", 80))
	deleting.DeletionTimestamp = &metav1.Time{Time: early}
	deleting.Finalizers = []string{"example.com/hold"}

	tests := map[string]struct {
		gws    []v1.APIGateway
		policy ownership.Policy
		want   []string
	}{
		"the seed: each route served": {
			gws: []v1.APIGateway{agw("default", "my-app-gateway",
				rt(h, "/users/", v1.PathTypePrefix, "user-service", 8080), rt(h, "/products/", v1.PathTypePrefix, "product-service", 8081))},
			want: []string{
				h + " /products/ Prefix default/my-app-gateway: served",
				h + " /users/ Prefix default/my-app-gateway: served",
			},
		},
		"no claims recorded: the first in the input wins": {
			gws: []v1.APIGateway{agw("team-a", "b", rt(h, "/users", v1.PathTypePrefix, "u", 80)), agw("team-a", "a", rt(h, "/users/", v1.PathTypePrefix, "u2", 80))},
			want: []string{
				h + " /users Prefix team-a/b: served, contested by team-a/a",
				h + " /users/ Prefix team-a/a: lost to team-a/b (RouteConflict)",
			},
		},
		"recorded claims win over the input's order": {
			gws: []v1.APIGateway{
				claimedAt(agw("team-a", "b", rt(h, "/users", v1.PathTypePrefix, "u", 80)), late),
				claimedAt(agw("team-a", "a", rt(h, "/users", v1.PathTypePrefix, "u2", 80)), early),
			},
			want: []string{
				h + " /users Prefix team-a/a: served, contested by team-a/b",
				h + " /users Prefix team-a/b: lost to team-a/a (RouteConflict)",
			},
		},
		"a gateway without claims comes after every recorded one": {
			gws: []v1.APIGateway{
				agw("team-a", "new", rt(h, "/users", v1.PathTypePrefix, "u", 80)),
				claimedAt(agw("team-a", "old", rt(h, "/users", v1.PathTypePrefix, "u2", 80)), late),
			},
			want: []string{
				h + " /users Prefix team-a/old: served, contested by team-a/new",
				h + " /users Prefix team-a/new: lost to team-a/old (RouteConflict)",
			},
		},
		"an Exact and a Prefix route on one path do not compete": {
			gws: []v1.APIGateway{agw("team-a", "a", rt(h, "/users", v1.PathTypePrefix, "u", 80)), agw("team-a", "b", rt(h, "/users", v1.PathTypeExact, "u", 80))},
			want: []string{
				h + " /users Exact team-a/b: served",
				h + " /users Prefix team-a/a: served",
			},
		},
		"another namespace may not route on an owned host": {
			gws: []v1.APIGateway{
				agw("team-a", "shop", rt(h, "/", v1.PathTypePrefix, "web", 80)),
				agw("team-b", "cart", rt(h, "/cart", v1.PathTypePrefix, "cart", 80), rt(h, "/", v1.PathTypePrefix, "web", 80)),
			},
			want: []string{
				h + " / Prefix team-a/shop: served, contested by team-b/cart",
				h + " / Prefix team-b/cart: lost to team-a/shop (HostOwned)",
				h + " /cart Prefix team-b/cart: lost to team-a/shop (HostOwned)",
			},
		},
		"unless the owner lends it the path": {
			gws: []v1.APIGateway{delegating, agw("team-b", "cart", rt(h, "/cart/items", v1.PathTypePrefix, "cart", 80), rt(h, "/login", v1.PathTypeExact, "login", 80))},
			want: []string{
				h + " / Prefix team-a/shop: served",
				h + " /cart/items Prefix team-b/cart: served",
				h + " /login Exact team-b/cart: lost to team-a/shop (HostOwned)",
			},
		},
		"or the admin lets namespaces share hosts": {
			gws:    []v1.APIGateway{agw("team-a", "shop", rt(h, "/", v1.PathTypePrefix, "web", 80)), agw("team-b", "cart", rt(h, "/cart", v1.PathTypePrefix, "cart", 80))},
			policy: ownership.InterNamespaceAllowed,
			want: []string{
				h + " / Prefix team-a/shop: served",
				h + " /cart Prefix team-b/cart: served",
			},
		},
		"a route lost holds nothing against a third gateway": {
			// cart (team-b) claimed /x before team-a's second gateway, but
			// loses it to team-a's host: the second gateway serves it.
			gws: []v1.APIGateway{
				claimedAt(agw("team-a", "shop", rt(h, "/", v1.PathTypePrefix, "web", 80)), early),
				claimedAt(agw("team-a", "second", rt(h, "/x", v1.PathTypePrefix, "x", 80)), late),
				claimedAt(agw("team-b", "cart", rt(h, "/x", v1.PathTypePrefix, "x", 80)), early.Add(time.Hour)),
			},
			want: []string{
				h + " / Prefix team-a/shop: served",
				h + " /x Prefix team-a/second: served",
				h + " /x Prefix team-b/cart: lost to team-a/shop (HostOwned)",
			},
		},
		"routes on different parent Gateways do not compete": {
			gws: []v1.APIGateway{
				onParent(agw("team-a", "public", rt(h, "/users", v1.PathTypePrefix, "u", 80)), "infra", "public"),
				onParent(agw("team-a", "internal", rt(h, "/users", v1.PathTypePrefix, "u", 80)), "infra", "internal"),
				onParent(agw("team-a", "public2", rt(h, "/users", v1.PathTypePrefix, "u", 80)), "infra", "public"),
			},
			want: []string{
				h + " /users Prefix team-a/internal: served",
				h + " /users Prefix team-a/public: served, contested by team-a/public2",
				h + " /users Prefix team-a/public2: lost to team-a/public (RouteConflict)",
			},
		},
		"a gateway being deleted serves nothing and holds nothing": {
			gws: []v1.APIGateway{deleting, agw("team-a", "new", rt(h, "/users", v1.PathTypePrefix, "users", 80))},
			want: []string{
				h + " /users Prefix team-a/new: served",
				h + " /users Prefix team-a/old: not served: the gateway is being deleted",
			},
		},
		"sorted by host and the path nginx matches": {
			gws: []v1.APIGateway{agw("ns", "gw",
				rt("b.example.com", "/", v1.PathTypePrefix, "b", 80),
				rt(h, "/%75sers/x", v1.PathTypePrefix, "u", 80),
				rt(h, "/v", v1.PathTypePrefix, "v", 80),
				rt(h, "/t", v1.PathTypeExact, "t", 80))},
			want: []string{
				h + " /t Exact ns/gw: served",
				h + " /%75sers/x Prefix ns/gw: served",
				h + " /v Prefix ns/gw: served",
				"b.example.com / Prefix ns/gw: served",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := make([]v1.APIGateway, len(tc.gws))
			for i := range tc.gws {
				before[i] = *tc.gws[i].DeepCopy()
			}
			rows := Routes(tc.gws, RouteOptions{Policy: tc.policy})
			assert.Equal(t, tc.want, summary(rows))
			assert.Equal(t, before, tc.gws, "Routes changed its input")
		})
	}
}

// TestRoutesGroupsDoNotMix: gateways of unrelated hosts are decided
// apart, and a wildcard links its family's hosts.
func TestRoutesGroupsDoNotMix(t *testing.T) {
	gws := []*v1.APIGateway{
		ptr.To(agw("a", "1", rt("x.one.example", "/", v1.PathTypePrefix, "s", 80))),
		ptr.To(agw("b", "2", rt("x.two.example", "/", v1.PathTypePrefix, "s", 80))),
		ptr.To(agw("c", "3", rt("*.one.example", "/", v1.PathTypePrefix, "s", 80), rt("y.three.example", "/", v1.PathTypePrefix, "s", 80))),
		ptr.To(agw("d", "4", rt("z.three.example", "/", v1.PathTypePrefix, "s", 80))),
	}
	assert.Equal(t, [][]int{{0, 2, 3}, {1}}, competingGroups(gws))
}

func TestRouteTableText(t *testing.T) {
	canary := rt("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080)
	canary.AdditionalBackends = []v1.WeightedBackend{{Name: "canary", Port: 8080, Weight: 20}, {Name: "drained", Port: 9090, Weight: 0}}
	canary.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](5), ReadSeconds: ptr.To[int32](300)}
	api := rt("api.example.com", "/api", v1.PathTypePrefix, "api", 80)
	api.RewritePrefix = "/"
	api.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](30)}
	all := rt("api.example.com", "/all", v1.PathTypeExact, "all", 80)
	all.AdditionalBackends = []v1.WeightedBackend{{Name: "next", Port: 80, Weight: 100}}
	rows := Routes([]v1.APIGateway{
		agw("shop", "gw", canary, api, all),
		agw("shop", "later", rt("api.example.com", "/users", v1.PathTypePrefix, "old", 80)),
	}, RouteOptions{})

	var b bytes.Buffer
	require.NoError(t, WriteRouteTable(&b, rows))
	want := `HOST             PATH     TYPE    GATEWAY     BACKENDS                                                 TIMEOUTS               REWRITE  STATUS
api.example.com  /all     Exact   shop/gw     all:80 0%, next:80 100%                                  -                      -        served
api.example.com  /api     Prefix  shop/gw     api:80                                                   read 30s               /        served
api.example.com  /users/  Prefix  shop/gw     user-service:8080 80%, canary:8080 20%, drained:9090 0%  connect 5s, read 300s  -        served, contested by shop/later
api.example.com  /users   Prefix  shop/later  old:80                                                   -                      -        lost to shop/gw (RouteConflict)
`
	assert.Equal(t, want, b.String())

	raw, err := json.Marshal(rows[2])
	require.NoError(t, err)
	assert.JSONEq(t, `{"host":"api.example.com","path":"/users/","pathType":"Prefix","gateway":"shop/gw","index":0,"scopes":["default"],
		"backends":[{"name":"user-service","port":8080,"weight":80},{"name":"canary","port":8080,"weight":20},{"name":"drained","port":9090,"weight":0}],
		"timeouts":{"connectSeconds":5,"readSeconds":300},"served":true,"contestedBy":["shop/later"]}`, string(raw))
	raw, err = json.Marshal(rows[3])
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(raw), `"served":false,"heldBy":"shop/gw","reason":"RouteConflict"`), "%s", raw)
}

// TestRouteTableRules: a route with rules shows them in order, each with
// its backend, and BACKENDS what no rule takes ("-" for a route without
// backendService); the rules are not part of what a route competes on:
// another gateway's route on the same path, with other rules or none,
// loses to the first.
func TestRouteTableRules(t *testing.T) {
	main := rt("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080)
	main.Rules = []v1.RouteRule{
		{
			Matches: []v1.RequestMatch{
				{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always"}}},
				{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}, Method: ptr.To(v1.HTTPMethod("GET"))},
			},
			BackendService: v1.BackendService{Name: "canary", Port: 8080},
		},
		{Matches: []v1.RequestMatch{{QueryParams: []v1.QueryParamMatch{{Name: "debug", Type: v1.MatchPresent}}}}, BackendService: v1.BackendService{Name: "debug", Port: 80}},
	}
	onlyRules := rt("api.example.com", "/orders/", v1.PathTypePrefix, "", 0)
	onlyRules.BackendService = v1.BackendService{}
	onlyRules.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: ptr.To(v1.HTTPMethod("POST"))}}, BackendService: v1.BackendService{Name: "orders", Port: 80}}}
	rows := Routes([]v1.APIGateway{
		agw("shop", "gw", main, onlyRules),
		agw("shop", "later", rt("api.example.com", "/users/", v1.PathTypePrefix, "other", 80)),
	}, RouteOptions{})

	var b bytes.Buffer
	require.NoError(t, WriteRouteTable(&b, rows))
	want := `HOST             PATH      TYPE    RULES                                                                                                         GATEWAY     BACKENDS           TIMEOUTS  REWRITE  STATUS
api.example.com  /orders/  Prefix  method POST -> orders:80                                                                                      shop/gw     -                  -         -        served
api.example.com  /users/   Prefix  header x-canary=always or cookie session=beta and method GET -> canary:8080; query debug present -> debug:80  shop/gw     user-service:8080  -         -        served, contested by shop/later
api.example.com  /users/   Prefix  -                                                                                                             shop/later  other:80           -         -        lost to shop/gw (RouteConflict)
`
	assert.Equal(t, want, b.String())
	raw, err := json.Marshal(rows[1])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"rules":[{"matches":[{"headers":[{"name":"X-Canary","type":"Exact","value":"always"}]},{"method":"GET","cookies":[{"name":"session","value":"beta"}]}],"backendService":{"name":"canary","port":8080}},`)
}

// TestRouteTableSourceRanges: a route with source ranges shows them in a
// SOURCES column, allow then deny, and "-" for a route that serves every
// address; the JSON has them as the spec writes them.
func TestRouteTableSourceRanges(t *testing.T) {
	office := rt("api.example.com", "/office/", v1.PathTypePrefix, "office", 80)
	office.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8", "2001:db8::/32"}, Deny: []v1.CIDR{"10.1.0.0/16"}}
	open := rt("api.example.com", "/open/", v1.PathTypePrefix, "open", 80)
	open.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"192.0.2.0/24"}}
	rows := Routes([]v1.APIGateway{agw("shop", "gw", office, open, rt("api.example.com", "/", v1.PathTypePrefix, "web", 80))}, RouteOptions{})

	var b bytes.Buffer
	require.NoError(t, WriteRouteTable(&b, rows))
	want := `HOST             PATH      TYPE    GATEWAY  BACKENDS   TIMEOUTS  REWRITE  SOURCES                                            STATUS
api.example.com  /         Prefix  shop/gw  web:80     -         -        -                                                  served
api.example.com  /office/  Prefix  shop/gw  office:80  -         -        allow 10.0.0.0/8, 2001:db8::/32; deny 10.1.0.0/16  served
api.example.com  /open/    Prefix  shop/gw  open:80    -         -        deny 192.0.2.0/24                                  served
`
	assert.Equal(t, want, b.String())
	raw, err := json.Marshal(rows[1])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"sourceRanges":{"allow":["10.0.0.0/8","2001:db8::/32"],"deny":["10.1.0.0/16"]}`)
}

// TestRouteTableRedirects: a route with a redirect shows its status and
// Location ("*" for the request's path), BACKENDS "-" when it answers
// every request, and a redirect to https of the same host says which
// requests it answers, beside the backend that serves the others.
func TestRouteTableRedirects(t *testing.T) {
	old := rt("api.example.com", "/old/", v1.PathTypePrefix, "", 0)
	old.BackendService = v1.BackendService{}
	old.Redirect = &v1.HTTPRedirect{Path: &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: "/new/"}, StatusCode: ptr.To[int32](301)}
	docs := rt("api.example.com", "/docs", v1.PathTypeExact, "", 0)
	docs.BackendService = v1.BackendService{}
	docs.Redirect = &v1.HTTPRedirect{Scheme: "https", Hostname: "docs.example.com", Port: ptr.To[v1.PortNumber](8443), Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/"}}
	secure := rt("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080)
	secure.Redirect = &v1.HTTPRedirect{Scheme: "https"}
	rows := Routes([]v1.APIGateway{agw("shop", "gw", old, docs, secure, rt("api.example.com", "/plain", v1.PathTypeExact, "plain", 80))}, RouteOptions{})

	var b bytes.Buffer
	require.NoError(t, WriteRouteTable(&b, rows))
	want := `HOST             PATH     TYPE    REDIRECT                                              GATEWAY  BACKENDS           TIMEOUTS  REWRITE  STATUS
api.example.com  /docs    Exact   302 https://docs.example.com:8443/                    shop/gw  -                  -         -        served
api.example.com  /old/    Prefix  301 /new/*                                            shop/gw  -                  -         -        served
api.example.com  /plain   Exact   -                                                     shop/gw  plain:80           -         -        served
api.example.com  /users/  Prefix  302 https://api.example.com* (requests not on https)  shop/gw  user-service:8080  -         -        served
`
	assert.Equal(t, want, b.String())
	raw, err := json.Marshal(rows[1])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"redirect":{"path":{"type":"ReplacePrefixMatch","value":"/new/"},"statusCode":301}`)
}

// TestRouteTableAuthAndCORS: a route that authenticates shows who asks in
// an AUTH column (the Secret's name, never its content; the Service and
// port), one with CORS its origins in a CORS column, "-" for the others;
// the JSON has them as the spec writes them.
func TestRouteTableAuthAndCORS(t *testing.T) {
	admin := rt("api.example.com", "/admin/", v1.PathTypePrefix, "admin", 80)
	admin.BasicAuth = &v1.BasicAuth{SecretName: "users", Realm: "Staff"}
	app := rt("api.example.com", "/app/", v1.PathTypePrefix, "app", 8080)
	app.ExternalAuth = &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}
	app.CORS = &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com", "https://*.example.org", "https://c.example.com"}, AllowCredentials: true}
	public := rt("api.example.com", "/public/", v1.PathTypePrefix, "web", 80)
	public.CORS = &v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}}
	rows := Routes([]v1.APIGateway{agw("shop", "gw", admin, app, public, rt("api.example.com", "/", v1.PathTypePrefix, "web", 80))}, RouteOptions{})

	var b bytes.Buffer
	require.NoError(t, WriteRouteTable(&b, rows))
	want := `HOST             PATH      TYPE    GATEWAY  BACKENDS  TIMEOUTS  REWRITE  AUTH                        CORS                                                                 STATUS
api.example.com  /         Prefix  shop/gw  web:80    -         -        -                           -                                                                    served
api.example.com  /admin/   Prefix  shop/gw  admin:80  -         -        basic:users                 -                                                                    served
api.example.com  /app/     Prefix  shop/gw  app:8080  -         -        external:oauth2-proxy:4180  https://app.example.com, https://*.example.org +1 more; credentials  served
api.example.com  /public/  Prefix  shop/gw  web:80    -         -        -                           any origin                                                           served
`
	assert.Equal(t, want, b.String())
	raw, err := json.Marshal(rows[2])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"externalAuth":{"service":"oauth2-proxy","port":4180,"path":"/oauth2/auth"}`)
	assert.Contains(t, string(raw), `"cors":{"allowOrigins":["https://app.example.com","https://*.example.org","https://c.example.com"],"allowCredentials":true}`)
	raw, err = json.Marshal(rows[1])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"basicAuth":{"secretName":"users","realm":"Staff"}`)

	b.Reset()
	require.NoError(t, WriteRouteTable(&b, Routes([]v1.APIGateway{agw("shop", "gw", rt("api.example.com", "/", v1.PathTypePrefix, "web", 80))}, RouteOptions{})))
	assert.NotContains(t, b.String(), "AUTH", "no route authenticates: no column")
	assert.NotContains(t, b.String(), "CORS")
}
