package gatewayapi

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/testenv"
)

// traefikRedirects are the answers, through Traefik, to the requests of
// dataplane.RedirectRequests that nginx alone answers otherwise, beyond
// the one difference every redirect Traefik answers has: its Location
// is absolute (the listener's scheme and the request's host), where
// nginx's keeps a relative path relative. The README lists these.
var traefikRedirects = map[string]dataplane.RedirectRequest{
	// Traefik's ReplacePrefixMatch leaves the replacement's trailing
	// slash out when nothing of the path follows the prefix.
	"prefix alone":             {Target: "/old", Status: 301, Location: "http://" + redirectHost + "/new"},
	"prefix alone, query kept": {Target: "/old?q", Status: 301, Location: "http://" + redirectHost + "/new?q"},
	// Traefik redirects what nginx refuses, its encoded slashes kept, to
	// an absolute Location on the same host: no open redirect either.
	"an encoded slash refused": {Target: "/old/%2F%2Fevil.example", Status: 301, Location: "http://" + redirectHost + "/new/%2F%2Fevil.example"},
}

// redirectHost is this test's dataplane.RedirectHost, which the rules'
// test holds in another namespace: the routes and Locations of
// dataplane.RedirectRoutes and RedirectRequests, moved to it.
const redirectHost = "redirects.example.com"

var toRedirectHost = strings.NewReplacer(dataplane.RedirectHost, redirectHost)

// redirectsThroughTraefik: the routes of dataplane.RedirectRoutes behind
// Traefik, with the requests render.TestDataPlaneRedirects sends through
// nginx alone. The redirects the operator emits as Gateway API's
// RequestRedirect Traefik answers itself, with the status and Location
// nginx gives, but for traefikRedirects; the others (to https on the same
// host, to an encoded path) reach the gateway, whose nginx answers, the
// request's scheme being Traefik's listener's. Left out: the wildcard
// host's route (a tenant of this shared Gateway may not claim
// *.example.com beside the others' hosts) and the requests from a
// trusted proxy (Traefik is the gateway's only peer here, and sets
// X-Forwarded-Proto from its own listener).
func redirectsThroughTraefik(t *testing.T) {
	ports := startEchoBackends(t, 9040, dataplane.RedirectServices...)
	ns := testenv.NewNamespace(t, env.Client, "redirects")
	var routes []v1.Route
	for _, r := range dataplane.RedirectRoutes(ports) {
		if !strings.HasPrefix(string(r.Host), "*.") {
			r.Host = v1.Hostname(toRedirectHost.Replace(string(r.Host)))
			routes = append(routes, r)
		}
	}
	apply(t, apiGateway(ns, "redirects", listenerHTTP, flowRoutes(t, routes)...))
	gw := servedPod(t, ns, "redirects")
	assertAcceptedByTraefik(t, gw)
	// Served once Traefik programmed the HTTPRoute (a redirect nginx answers).
	gatewayClient{}.check(t, request{scheme: "http", host: redirectHost, target: "/secure/x", status: 302, by: byNginx})

	addr := net.JoinHostPort(traefikAddr.String(), strconv.Itoa(httpPort))
	for name, tc := range dataplane.RedirectRequests() {
		wildcard := tc.Host != "" && tc.Host != dataplane.RedirectAppHost
		if tc.Trusted || wildcard {
			continue
		}
		host := tc.Host
		if host == "" {
			host = redirectHost
		}
		want, differs := traefikRedirects[name]
		if !differs {
			want = tc
			want.Location = toRedirectHost.Replace(tc.Location)
			if strings.HasPrefix(tc.Location, "/") {
				want.Location = "http://" + host + tc.Location
			}
		}
		t.Run(name, func(t *testing.T) {
			resp, body, err := dataplane.RawResponse("", addr, "GET "+tc.Target+" HTTP/1.1", host, dataplane.HeaderLines(tc.Header)...)
			require.NoError(t, err)
			if want.Service != "" {
				require.Equal(t, 200, resp.StatusCode, "body: %s", body)
				by, reply := answeredBy(body)
				require.Equal(t, byBackend, by)
				assert.Equal(t, want.Service, reply.Service)
				return
			}
			assert.Equal(t, want.Status, resp.StatusCode, "body: %s", body)
			assert.Equal(t, want.Location, resp.Header.Get("Location"))
		})
	}
}
