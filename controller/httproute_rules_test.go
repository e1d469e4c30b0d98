package controller

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/dataplane"
)

// TestHTTPRouteRulesParity holds the HTTPRoute of a gateway with rules to
// the decisions its nginx makes on the same requests
// (dataplane.RuleRequests, which render.TestDataPlaneRules sends through
// real nginx): the Gateway passes to the gateway every request nginx
// serves from a backend, and answers 404 itself only to requests nginx
// answers 404. The Gateway passes on a request nginx answers 404 only
// where the table says why (a condition Gateway API cannot state), so
// the client gets the same answer either way; it refuses a request nginx
// serves only where the table says why (Narrower: a query parameter's
// name in another case, which the README states). The Gateway's matching is
// Gateway API's (gatewayAPIMatches).
func TestHTTPRouteRulesParity(t *testing.T) {
	ports := map[string]int32{}
	for i, s := range dataplane.RulesServices {
		ports[s] = int32(8080 + i)
	}
	gw := httpRouteGateway("rules", publicGateway, dataplane.RulesRoutes(ports)...)
	r := builtHTTPRoutes(t, gw)[dataplane.RulesHost]
	require.NotNil(t, r)
	for name, tc := range dataplane.RuleRequests() {
		t.Run(name, func(t *testing.T) {
			method := tc.Method
			if method == "" {
				method = http.MethodGet
			}
			passed := gatewayAPIMatches(t, r, method, tc.Target, tc.Header)
			switch {
			case tc.Narrower != "":
				assert.False(t, passed, "Gateway API refuses %s, which nginx takes", tc.Narrower)
			case tc.Service != "":
				assert.True(t, passed, "nginx serves it from %s: the Gateway must pass it on", tc.Service)
			case tc.Broader != "":
				assert.True(t, passed, "the HTTPRoute leaves out %s: the Gateway passes it, nginx answers 404", tc.Broader)
			default:
				assert.False(t, passed, "nginx answers 404, and so must the Gateway")
			}
		})
	}
}

// gatewayAPIMatches reports whether a match of r holds for the request,
// as Gateway API defines it: an Exact path equal to the request's, a
// PathPrefix one a prefix of it by whole segments; each header by name
// without case and value exactly; each query parameter by name exactly,
// its first value exactly; the method exactly.
func gatewayAPIMatches(t *testing.T, r *gatewayv1.HTTPRoute, method, target string, header http.Header) bool {
	t.Helper()
	u, err := url.ParseRequestURI(target)
	require.NoError(t, err)
	query := u.Query()
	for _, rule := range r.Spec.Rules {
	matches:
		for _, m := range rule.Matches {
			value := *m.Path.Value
			switch *m.Path.Type {
			case gatewayv1.PathMatchExact:
				if u.Path != value {
					continue
				}
			case gatewayv1.PathMatchPathPrefix:
				if u.Path != value && !strings.HasPrefix(u.Path, strings.TrimSuffix(value, "/")+"/") {
					continue
				}
			default:
				t.Fatalf("path type %s", *m.Path.Type)
			}
			for _, h := range m.Headers {
				require.Equal(t, gatewayv1.HeaderMatchExact, *h.Type)
				if header.Get(string(h.Name)) != h.Value {
					continue matches
				}
			}
			for _, q := range m.QueryParams {
				require.Equal(t, gatewayv1.QueryParamMatchExact, *q.Type)
				if vs := query[string(q.Name)]; len(vs) == 0 || vs[0] != q.Value {
					continue matches
				}
			}
			if m.Method != nil && string(*m.Method) != method {
				continue
			}
			return true
		}
	}
	return false
}

// TestHTTPRouteMatchesOfRulesStayWithinLimits: routes with rules only
// add a match per match of their rules while the HTTPRoute stays within
// Gateway API's 128 matches; past that, a path takes its path alone
// (nginx still decides), in order.
func TestHTTPRouteMatchesOfRulesStayWithinLimits(t *testing.T) {
	get := ptr.To[v1.HTTPMethod]("GET")
	var routes []v1.Route
	for i := range 100 {
		r := route("many.example.com", fmt.Sprintf("/p%03d", i), v1.PathTypeExact, "", 0)
		r.BackendService = v1.BackendService{}
		rule := v1.RouteRule{BackendService: v1.BackendService{Name: "canary", Port: 80}}
		for range 4 {
			rule.Matches = append(rule.Matches, v1.RequestMatch{Method: get})
		}
		r.Rules = []v1.RouteRule{rule}
		routes = append(routes, r)
	}
	gw := httpRouteGateway("many", publicGateway, routes...)
	r := builtHTTPRoutes(t, gw)["many.example.com"]
	require.NotNil(t, r)
	assert.LessOrEqual(t, len(r.Spec.Rules), 16, "rules")
	total, withMethod := 0, 0
	for _, rule := range r.Spec.Rules {
		assert.LessOrEqual(t, len(rule.Matches), 64, "matches of a rule")
		for _, m := range rule.Matches {
			total++
			if m.Method != nil {
				withMethod++
			}
		}
	}
	assert.LessOrEqual(t, total, 128, "matches")
	// 100 paths, 9 of them with 4 matches: 127.
	assert.Equal(t, 9*4, withMethod)
	assert.Equal(t, 127, total)
}
