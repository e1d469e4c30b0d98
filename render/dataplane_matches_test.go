package render

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestDataPlaneMatches: routes with matches through the real nginx, with
// real HTTP on loopback. On /users/ four routes share the path: a canary
// by header value, one by cookie, one by a query parameter and the method
// together (ANDed), and the route without matches; /beta has routes with
// matches only, so a request none accepts is answered 404 there. Each
// condition is sent on both sides of its decision.
func TestDataPlaneMatches(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		main := route("api.example.com", "/users/", v1.PathTypePrefix, "main", ports["main"])
		byHeader := route("api.example.com", "/users/", v1.PathTypePrefix, "header", ports["header"])
		byHeader.Matches = []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always; {x}"}}}}
		byCookie := route("api.example.com", "/users/", v1.PathTypePrefix, "cookie", ports["cookie"])
		byCookie.Matches = []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}}}
		// Two conditions in one set, and a second set: either.
		both := route("api.example.com", "/users/", v1.PathTypePrefix, "both", ports["both"])
		both.Matches = []v1.RequestMatch{
			{QueryParams: []v1.QueryParamMatch{{Name: "debug", Type: v1.MatchExact, Value: "1"}}, Method: ptr.To[v1.HTTPMethod]("POST")},
			{Headers: []v1.HeaderMatch{{Name: "X-Debug", Type: v1.MatchPresent}}},
		}
		beta := route("api.example.com", "/beta", v1.PathTypeExact, "header", ports["header"])
		beta.Matches = []v1.RequestMatch{{QueryParams: []v1.QueryParamMatch{{Name: "beta", Type: v1.MatchPresent}}}}
		return []v1.Route{main, byHeader, byCookie, both, beta}
	}, nil, "main", "header", "cookie", "both")
	c := gatewayClient("127.0.0.1")
	tests := map[string]struct {
		method, target string
		header         http.Header
		service        string // "" for a 404
	}{
		"no condition":                         {target: "/users/1", service: "main"},
		"the header's value":                   {target: "/users/1", header: http.Header{"X-Canary": {"always; {x}"}}, service: "header"},
		"the header's name in another case":    {target: "/users/1", header: http.Header{"x-canary": {"always; {x}"}}, service: "header"},
		"another value of the header":          {target: "/users/1", header: http.Header{"X-Canary": {"always"}}, service: "main"},
		"the value in another case":            {target: "/users/1", header: http.Header{"X-Canary": {"ALWAYS; {x}"}}, service: "main"},
		"the value as a prefix":                {target: "/users/1", header: http.Header{"X-Canary": {"always; {x}y"}}, service: "main"},
		"the cookie":                           {target: "/users/1", header: http.Header{"Cookie": {"a=b; session=beta; c=d"}}, service: "cookie"},
		"the cookie, another value":            {target: "/users/1", header: http.Header{"Cookie": {"session=beta2"}}, service: "main"},
		"another cookie with the value":        {target: "/users/1", header: http.Header{"Cookie": {"xsession=beta"}}, service: "main"},
		"query and method":                     {method: http.MethodPost, target: "/users/1?a=2&debug=1", service: "both"},
		"the query without the method":         {target: "/users/1?debug=1", service: "main"},
		"the method without the query":         {method: http.MethodPost, target: "/users/1?debug=2", service: "main"},
		"the query's name in another param":    {method: http.MethodPost, target: "/users/1?xdebug=1", service: "main"},
		"the second set: a header present":     {target: "/users/1", header: http.Header{"X-Debug": {"yes"}}, service: "both"},
		"the second set: the header empty":     {target: "/users/1", header: http.Header{"X-Debug": {""}}, service: "main"},
		"two routes accept: more conditions":   {method: http.MethodPost, target: "/users/1?debug=1", header: http.Header{"X-Canary": {"always; {x}"}}, service: "both"},
		"two routes accept: spec order":        {target: "/users/1", header: http.Header{"X-Canary": {"always; {x}"}, "Cookie": {"session=beta"}}, service: "header"},
		"the exact location of the prefix":     {target: "/users", header: http.Header{"Cookie": {"session=beta"}}, service: "cookie"},
		"a path with matches only: accepted":   {target: "/beta?beta=1", service: "header"},
		"a path with matches only: none holds": {target: "/beta?alpha=1"},
		"a path with matches only: empty":      {target: "/beta?beta="},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			var body *strings.Reader
			if method == http.MethodPost {
				body = strings.NewReader("payload")
			} else {
				body = strings.NewReader("")
			}
			resp, data := send(t, c, nginx.httpAddr, method, tc.target, tc.header, body)
			if tc.service == "" {
				assert.Equal(t, http.StatusNotFound, resp.StatusCode, "body: %s", data)
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s\n%s", data, nginx.logs())
			got := echoed(t, data)
			assert.Equal(t, tc.service, got.Service)
			// The request reaches the backend as the client sent it: the
			// hand-over to a named location keeps method, URI and body.
			assert.Equal(t, method, got.Method)
			assert.Equal(t, tc.target, got.RequestURI)
			if method == http.MethodPost {
				assert.Equal(t, "payload", got.Body)
			}
		})
	}
}

// TestDataPlaneMatchesKeepBackendErrors: a backend's own 5xx, and nginx's
// 502 for a backend that is down, reach the client from the route that
// took the request: no error is handed to a route with matches.
func TestDataPlaneMatchesKeepBackendErrors(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		down := route("api.example.com", "/down/", v1.PathTypePrefix, "gone", 1)
		canary := route("api.example.com", "/down/", v1.PathTypePrefix, "canary", ports["canary"])
		canary.Matches = []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchPresent}}}}
		return []v1.Route{down, canary}
	}, nil, "canary")
	c := gatewayClient("127.0.0.1")
	resp, data := send(t, c, nginx.httpAddr, http.MethodGet, "/down/1", nil, strings.NewReader(""))
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode, "body: %s", data)
	resp, data = send(t, c, nginx.httpAddr, http.MethodGet, "/down/1", http.Header{"X-Canary": {"1"}}, strings.NewReader(""))
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", data)
	assert.Equal(t, "canary", echoed(t, data).Service)
}
