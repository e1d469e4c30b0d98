// Package rendertest holds the gateways the renderer's tests and the
// controller's golden files share: the route sets whose configuration
// controller/testdata pins and the real nginx loads, and the benchmarks'
// gateways. One definition each, so the golden file and the nginx test
// cannot check two different gateways under one name.
package rendertest

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
	"example.com/apigateway-operator/test/dataplane"
)

// Route is a compact Route literal.
func Route(host, path string, pt v1.PathType, svc string, port int32) v1.Route {
	return v1.Route{Host: v1.Hostname(host), Path: v1.HTTPPath(path), PathType: pt, BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
}

// Gateway is a gateway of namespace shop with routes.
func Gateway(name string, routes ...v1.Route) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: "0d1e7a55-5e0c-4f3e-9d6b-7a5b1e2c3d4f", Generation: 3},
		Spec:       v1.APIGatewaySpec{Routes: routes},
	}
}

// EverySetting gives r every traffic setting: the fixture the admission
// tests and benchmarks share.
var EverySetting = validationtest.EverySetting

// Seed is the README's example gateway.
func Seed() *v1.APIGateway {
	seed := Gateway("my-app-gateway",
		Route("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080),
		Route("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081))
	seed.Namespace = "default"
	seed.Spec.Image = "nginx/nginx-plus:latest"
	seed.Spec.Replicas = ptr.To[int32](2)
	return seed
}

// Traffic uses every traffic setting, in each of its forms: the golden
// file shows how each renders and nginx -t loads it.
func Traffic() *v1.APIGateway {
	api := EverySetting(Route("api.example.com", "/api/", v1.PathTypePrefix, "users", 8080))

	status := Route("api.example.com", "/v1/status", v1.PathTypeExact, "status", 9000)
	status.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](1)}
	status.MaxBodySize = "0"
	status.RateLimit = &v1.RateLimit{RequestsPerSecond: 5} // burst 0: nginx's default, not written

	// Blue/green: the additional backends take 100%, backendService none.
	site := Route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
	site.AdditionalBackends = []v1.WeightedBackend{{Name: "web-blue", Port: 80, Weight: 60}, {Name: "web-green", Port: 80, Weight: 40}}
	site.RewritePrefix = "/site"

	// ';', '{', '}' and '#' are text inside a quoted nginx string.
	legacy := Route("www.example.com", "/legacy/", v1.PathTypePrefix, "legacy", 8080)
	legacy.RewritePrefix = "/v2/"
	legacy.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-Odd", Value: `a;} server { #x 'y'`}}}

	// Set but empty: renders as a route without them.
	empty := Route("www.example.com", "/plain", v1.PathTypePrefix, "plain", 8080)
	empty.Timeouts = &v1.RouteTimeouts{}
	empty.RequestHeaders = &v1.HeaderModifier{}
	empty.ResponseHeaders = &v1.HeaderModifier{}
	empty.AdditionalBackends = []v1.WeightedBackend{{Name: "plain-drained", Port: 8080, Weight: 0}}
	return Gateway("traffic", api, status, site, legacy, empty)
}

// RouteSets are the route sets whose rendered configuration is checked
// against golden files (controller/testdata/NAME.conf.template) and by the
// real nginx.
func RouteSets() map[string]*v1.APIGateway {
	return map[string]*v1.APIGateway{
		"seed": Seed(),
		"mixed": Gateway("mixed",
			Route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080),
			// Same element-wise prefix as /users: the first in sorted order wins.
			Route("api.example.com", "/users/", v1.PathTypePrefix, "users-v2", 8080),
			// An Exact route beats the exact location a Prefix route adds.
			Route("api.example.com", "/users", v1.PathTypeExact, "users-exact", 8080),
			Route("api.example.com", "/users/", v1.PathTypeExact, "users-index", 8080),
			Route("api.example.com", "/", v1.PathTypePrefix, "catch-all", 80),
			Route("www.example.com", "/", v1.PathTypePrefix, "web", 80),
			Route("*.example.com", "/", v1.PathTypePrefix, "tenant", 8443),
			Route("*.eu.example.com", "/health", v1.PathTypeExact, "eu-health", 8081)),
		// Every character the API's whitelist allows, and percent-encoding.
		"odd-characters": Gateway("odd",
			Route("odd.example.com", "/a-b.c_d~e!f&g(h)i*j+k,l=m:n@o/", v1.PathTypePrefix, "odd", 1),
			Route("odd.example.com", "/caf%C3%A9", v1.PathTypeExact, "cafe", 65535),
			Route("odd.example.com", "/100%25", v1.PathTypePrefix, "percent", 8080)),
		// Exact "/" alone still needs the 404 for every other path.
		"exact-root": Gateway("exact-root",
			Route("root.example.com", "/", v1.PathTypeExact, "root", 8080)),
		// Every traffic setting, in each of its forms.
		"traffic": Traffic(),
		// The access log, with the route names of the API's odd
		// characters, a wildcard host and a rewrite.
		"access-log": AccessLog(),
		// Rules: each kind of condition, two matches in a rule, a route
		// with rules only.
		"rules": Rules(),
		// Redirects: each kind of path, scheme, host and port, with and
		// without a backend.
		"redirects": Redirects(),
	}
}

// Redirects is a gateway whose routes answer with redirects
// (routes[].redirect): the data-plane test's routes
// (dataplane.RedirectRoutes), so that the golden file shows what that
// test sends requests through.
func Redirects() *v1.APIGateway {
	return Gateway("redirects", dataplane.RedirectRoutes(map[string]int32{"secure": 8080})...)
}

// Rules is a gateway whose routes have rules (routes[].rules): on
// /users/ a canary by header value, one by cookie and one by a query
// parameter and the method or a header present, before the route's
// backendService; on /beta, rules only (404 for what none takes).
func Rules() *v1.APIGateway {
	backend := func(name string) v1.BackendService { return v1.BackendService{Name: v1.ServiceName(name), Port: 8080} }
	users := Route("api.example.com", "/users/", v1.PathTypePrefix, "users", 8080)
	post := v1.HTTPMethod("POST")
	users.Rules = []v1.RouteRule{
		{Matches: []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always"}}}}, BackendService: backend("canary")},
		{Matches: []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}}}, BackendService: backend("beta")},
		{Matches: []v1.RequestMatch{
			{QueryParams: []v1.QueryParamMatch{{Name: "debug", Type: v1.MatchExact, Value: "1"}}, Method: &post},
			{Headers: []v1.HeaderMatch{{Name: "X-Debug", Type: v1.MatchPresent}}},
		}, BackendService: backend("debug")},
	}
	beta := v1.Route{Host: "api.example.com", Path: "/beta", PathType: v1.PathTypeExact, Rules: []v1.RouteRule{
		{Matches: []v1.RequestMatch{{QueryParams: []v1.QueryParamMatch{{Name: "beta", Type: v1.MatchPresent}}}}, BackendService: backend("beta")},
	}}
	return Gateway("rules", users, beta)
}

// AccessLog is a gateway that asks for the JSON access log, whose routes'
// names hold every character the path whitelist allows, percent-decoded
// UTF-8 and a '%', on an exact and a wildcard host.
func AccessLog() *v1.APIGateway {
	rewritten := Route("*.example.com", "/api", v1.PathTypePrefix, "api", 8080)
	rewritten.RewritePrefix = "/"
	gw := Gateway("logged",
		Route("odd.example.com", "/a-b.c_d~e!f&g(h)i*j+k,l=m:n@o/", v1.PathTypePrefix, "odd", 1),
		Route("odd.example.com", "/caf%C3%A9", v1.PathTypeExact, "cafe", 65535),
		Route("odd.example.com", "/100%25", v1.PathTypePrefix, "percent", 8080),
		rewritten)
	gw.Spec.AccessLog = &v1.AccessLog{Format: v1.AccessLogJSON}
	return gw
}

// Bench is a 10-route gateway on two hosts, half Exact routes.
func Bench() *v1.APIGateway {
	var routes []v1.Route
	for i := range 10 {
		pt := v1.PathTypePrefix
		if i%2 == 0 {
			pt = v1.PathTypeExact
		}
		routes = append(routes, Route(fmt.Sprintf("api%d.example.com", i%2), fmt.Sprintf("/svc%d/", i), pt, fmt.Sprintf("svc-%d", i), 8080))
	}
	gw := Gateway("bench", routes...)
	gw.Spec.Image, gw.Spec.Replicas = "nginx:1.27", ptr.To[int32](2)
	return gw
}

// BenchTraffic is a 100-route gateway on ten hosts, every route with every
// traffic setting (EverySetting: a weighted canary, timeouts, a rewrite,
// three request and three response header changes, a body limit and a
// rate limit).
func BenchTraffic() *v1.APIGateway {
	routes := make([]v1.Route, 100)
	for i := range routes {
		routes[i] = EverySetting(Route(fmt.Sprintf("api%d.example.com", i%10), fmt.Sprintf("/svc%d/", i), v1.PathTypePrefix, fmt.Sprintf("svc-%d", i), 8080))
	}
	return Gateway("bench-traffic", routes...)
}
