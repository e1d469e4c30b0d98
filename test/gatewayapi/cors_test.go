package gatewayapi

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/testenv"
)

const (
	corsHost   = "cors.example.com"
	corsOrigin = "https://app.example.com"
)

// corsThroughTraefik: routes with cors exposed through an HTTPRoute. The
// operator emits no CORS filter, so Traefik passes a preflight on to the
// gateway's nginx, which answers it 204 with the route's headers (the
// backend never sees it, and a "*" of allowHeaders names what the
// preflight asks for); an actual request from an allowed origin gets one
// Access-Control-Allow-Origin, nginx's; a preflight from another origin
// reaches the backend and gets none. A route whose redirect answers
// every request, with cors, is passed to nginx too: its preflight is
// answered, not redirected, and its redirect carries the origin.
func corsThroughTraefik(t *testing.T) {
	ports := startEchoBackends(t, 9060, "cors-api")
	ns := testenv.NewNamespace(t, env.Client, "cors")
	c := &v1.CORS{AllowOrigins: []v1.CORSOrigin{corsOrigin}, AllowMethods: []v1.CORSMethod{"PUT"},
		AllowHeaders: []v1.CORSHeaderName{"*"}, AllowCredentials: true}
	api := v1.Route{Host: corsHost, Path: "/api/", PathType: v1.PathTypePrefix, CORS: c,
		BackendService: v1.BackendService{Name: "cors-api", Port: v1.PortNumber(ports["cors-api"])}}
	moved := v1.Route{Host: corsHost, Path: "/moved/", PathType: v1.PathTypePrefix, CORS: c,
		Redirect: &v1.HTTPRedirect{Hostname: "new.example.com"}}
	apply(t, apiGateway(ns, "cors", listenerHTTP, flowRoutes(t, []v1.Route{api, moved})...))
	gw := servedPod(t, ns, "cors")
	assertAcceptedByTraefik(t, gw)
	gatewayClient{}.check(t, served("http", corsHost, "/api/x", "cors-api"))

	addr := net.JoinHostPort(traefikAddr.String(), strconv.Itoa(httpPort))
	preflight := []string{"Access-Control-Request-Method: PUT", "Access-Control-Request-Headers: x-team"}
	cases := map[string]struct {
		method, target, origin string
		headers                []string
		status                 int
		by                     string
		// allowOrigin is the Access-Control-Allow-Origin expected, ""
		// for none.
		allowOrigin string
	}{
		"preflight, allowed origin": {"OPTIONS", "/api/x", corsOrigin, preflight, 204, byNginx, corsOrigin},
		"preflight, another origin": {"OPTIONS", "/api/x", "https://evil.example", preflight, 200, byBackend, ""},
		"GET, allowed origin":       {"GET", "/api/x", corsOrigin, nil, 200, byBackend, corsOrigin},
		"preflight of the redirect": {"OPTIONS", "/moved/x", corsOrigin, preflight, 204, byNginx, corsOrigin},
		"the redirect, with origin": {"GET", "/moved/x", corsOrigin, nil, 302, byNginx, corsOrigin},
		"GET, without origin":       {"GET", "/api/x", "", nil, 200, byBackend, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			headers := tc.headers
			if tc.origin != "" {
				headers = append([]string{"Origin: " + tc.origin}, headers...)
			}
			resp, body, err := dataplane.RawResponse("", addr, tc.method+" "+tc.target+" HTTP/1.1", corsHost, headers...)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, "body: %s", body)
			by, _ := answeredBy(body)
			if tc.by == byBackend {
				assert.Equal(t, byBackend, by, "body: %s", body)
			} else {
				assert.NotEqual(t, byBackend, by, "the backend answered: %s", body)
			}
			h := resp.Header
			if tc.allowOrigin == "" {
				assert.Empty(t, h.Values("Access-Control-Allow-Origin"))
				return
			}
			assert.Equal(t, []string{tc.allowOrigin}, h.Values("Access-Control-Allow-Origin"), "one value, nginx's")
			assert.Equal(t, []string{"true"}, h.Values("Access-Control-Allow-Credentials"))
			if tc.status == 204 {
				assert.Equal(t, "PUT", h.Get("Access-Control-Allow-Methods"))
				assert.Equal(t, "x-team", h.Get("Access-Control-Allow-Headers"))
			}
			if tc.status == 302 {
				assert.Equal(t, "http://new.example.com/moved/x", h.Get("Location"))
			}
		})
	}
}
