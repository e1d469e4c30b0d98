package render

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// longHost is a host of 253 characters, the longest admission admits.
var longHost = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 49) + ".example.com"

// dataPlaneGateway is the gateway TestDataPlane serves; withNew adds the
// route that the reload brings in.
func dataPlaneGateway(ports map[string]int32, withNew bool) *v1.APIGateway {
	r := func(host, path string, pt v1.PathType, svc string) v1.Route {
		return route(host, path, pt, svc, ports[svc])
	}
	gw := gateway("data-plane",
		r("api.example.com", "/users", v1.PathTypePrefix, "users"),
		r("api.example.com", "/orders", v1.PathTypePrefix, "orders"),
		r("api.example.com", "/orders", v1.PathTypeExact, "orders-exact"),
		r("api.example.com", "/version", v1.PathTypeExact, "version"),
		r("api.example.com", "/public/", v1.PathTypePrefix, "public"),
		r("api.example.com", "/internal/", v1.PathTypePrefix, "internal"),
		r("*.example.com", "/", v1.PathTypePrefix, "tenant"),
		r("root.example.net", "/", v1.PathTypeExact, "root"),
		r(longHost, "/", v1.PathTypePrefix, "long"))
	if withNew {
		gw.Spec.Routes = append(gw.Spec.Routes, r("api.example.com", "/new", v1.PathTypePrefix, "fresh"))
	}
	return gw
}

// TestDataPlane loads the rendered configuration into the real nginx, with
// Service names resolved by a DNS server on loopback and echo backends
// behind them, and checks with real HTTP what the README promises about
// routing, including what each backend receives.
func TestDataPlane(t *testing.T) {
	bin := nginxBinary(t)
	ports := startEchoBackends(t, "users", "orders", "orders-exact", "version", "public", "internal", "tenant", "root", "long", "fresh")
	resolver := startServiceDNS(t)
	render := func(withNew bool) func(Options) (string, error) {
		return func(opts Options) (string, error) { return Config(dataPlaneGateway(ports, withNew), opts) }
	}
	nginx := startNginx(t, bin, render(false), resolver)

	tests := map[string]struct {
		host, target string
		status       int
		service      string // the backend that must answer (status 200)
		uri          string // the request URI it must receive; empty: target
		matched      string // the decoded path nginx routed by; empty: uri before '?'
	}{
		"Prefix matches its path":                  {host: "api.example.com", target: "/users", status: 200, service: "users"},
		"Prefix matches below it":                  {host: "api.example.com", target: "/users/42?x=1", status: 200, service: "users"},
		"Prefix is element-wise":                   {host: "api.example.com", target: "/usersX", status: 404},
		"Exact matches its path":                   {host: "api.example.com", target: "/version", status: 200, service: "version"},
		"Exact matches nothing below":              {host: "api.example.com", target: "/version/x", status: 404},
		"Exact matches no trailing slash":          {host: "api.example.com", target: "/version/", status: 404},
		"Exact beats Prefix on the same path":      {host: "api.example.com", target: "/orders", status: 200, service: "orders-exact"},
		"the Prefix route keeps what is below":     {host: "api.example.com", target: "/orders/7", status: 200, service: "orders"},
		"wildcard matches one label":               {host: "a.example.com", target: "/anything", status: 200, service: "tenant"},
		"wildcard does not match the bare domain":  {host: "example.com", target: "/anything", status: 404},
		"wildcard does not match two labels":       {host: "a.b.example.com", target: "/anything", status: 404},
		"an exact host beats the wildcard":         {host: "api.example.com", target: "/anything", status: 404},
		"unknown host":                             {host: "unknown.test", target: "/users", status: 404},
		"host case is ignored":                     {host: "API.Example.COM", target: "/users", status: 200, service: "users"},
		"a port in the Host header is ignored":     {host: "api.example.com:8080", target: "/users", status: 200, service: "users"},
		"percent-encoded path":                     {host: "api.example.com", target: "/%75sers", status: 200, service: "users", matched: "/users"},
		"percent-encoded path below a prefix":      {host: "api.example.com", target: "/public/%78", status: 200, service: "public", matched: "/public/x"},
		"the query is not checked":                 {host: "api.example.com", target: "/public/x?next=%2F..%2Finternal", status: 200, service: "public"},
		"encoded slash after dot dot":              {host: "api.example.com", target: "/internal/..%2Fpublic/x", status: 400},
		"dot dot segment":                          {host: "api.example.com", target: "/internal/../public/x", status: 400},
		"dot segment":                              {host: "api.example.com", target: "/public/./x", status: 400},
		"encoded dot segment":                      {host: "api.example.com", target: "/public/%2e%2e/internal/x", status: 400},
		"encoded backslash":                        {host: "api.example.com", target: "/public/..%5Cinternal", status: 400},
		"backslash":                                {host: "api.example.com", target: `/public/..\internal`, status: 400},
		"empty segment":                            {host: "api.example.com", target: "/public//x", status: 400},
		"a fragment in the request line":           {host: "api.example.com", target: "/public/x#/../../internal", status: 400},
		"absolute form is routed by its host":      {host: "unknown.test", target: "http://api.example.com/users/1", status: 200, service: "users", uri: "/users/1"},
		"absolute form is checked like any other":  {host: "api.example.com", target: "http://api.example.com/internal/..%2Fpublic/x", status: 400},
		"absolute form with an empty segment":      {host: "api.example.com", target: "http://api.example.com//public/x", status: 400},
		"path parameter":                           {host: "api.example.com", target: "/public/..;/internal/x", status: 400},
		"encoded path parameter":                   {host: "api.example.com", target: "/public/..%3B/internal/x", status: 400},
		"a session id as a path parameter":         {host: "api.example.com", target: "/users/1;jsessionid=x", status: 400},
		"double encoding":                          {host: "api.example.com", target: "/public/%252e%252e/internal/x", status: 400},
		"overlong UTF-8":                           {host: "api.example.com", target: "/public/%C0%AE%C0%AE/internal/x", status: 400},
		"raw overlong UTF-8":                       {host: "api.example.com", target: "/public/\xC0\xAE\xC0\xAE/internal/x", status: 400},
		"absolute form with a path parameter":      {host: "api.example.com", target: "http://api.example.com/public/..;/internal/x", status: 400},
		"absolute form with a double encoding":     {host: "api.example.com", target: "http://api.example.com/public/%252e%252e/internal/x", status: 400},
		"absolute form with overlong UTF-8":        {host: "api.example.com", target: "http://api.example.com/public/%C0%AE%C0%AE/internal/x", status: 400},
		"encoded UTF-8 is routed":                  {host: "api.example.com", target: "/public/caf%C3%A9", status: 200, service: "public", matched: "/public/caf\u00e9"},
		"a semicolon in the query is no parameter": {host: "api.example.com", target: "/public/x?a=1;b=2", status: 200, service: "public"},
		"a path no route covers":                   {host: "api.example.com", target: "/", status: 404},
		"Exact / alone":                            {host: "root.example.net", target: "/", status: 200, service: "root"},
		"Exact / alone covers nothing else":        {host: "root.example.net", target: "/index.html", status: 404},
		"a 253-character host":                     {host: longHost, target: "/x", status: 200, service: "long"},
		"a route not yet added":                    {host: "api.example.com", target: "/new", status: 404},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status, body, err := rawRequest(nginx.httpAddr, "GET "+tc.target+" HTTP/1.1", tc.host)
			require.NoError(t, err, nginx.logs())
			require.Equal(t, tc.status, status, "body: %s", body)
			if tc.status != http.StatusOK {
				assert.NotContains(t, body, `"service"`, "a refused request reached a backend")
				assert.NotContains(t, body, "Welcome to nginx", "fell through to nginx's document root")
				return
			}
			var got echoReply
			require.NoError(t, json.Unmarshal([]byte(body), &got), "body: %s", body)
			assert.Equal(t, tc.service, got.Service)
			want := tc.uri
			if want == "" {
				want = tc.target
			}
			assert.Equal(t, want, got.RequestURI, "the backend must receive the request URI as sent")
			matched := tc.matched
			if matched == "" {
				matched, _, _ = strings.Cut(want, "?")
			}
			assert.Equal(t, matched, got.Path, "the backend must receive the path that was matched")
		})
	}

	t.Run("the health port serves no route", func(t *testing.T) {
		status, body, err := rawRequest(nginx.healthAddr, "GET "+HealthPath+" HTTP/1.1", "api.example.com")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "ok\n", body)
		for _, target := range []string{"/users", "/", "/version"} {
			status, body, err := rawRequest(nginx.healthAddr, "GET "+target+" HTTP/1.1", "api.example.com")
			require.NoError(t, err)
			assert.Equal(t, http.StatusNotFound, status, "%s on the health port: %s", target, body)
		}
	})

	t.Run("a route change is picked up after a reload", func(t *testing.T) {
		config, err := render(true)(nginx.opts)
		require.NoError(t, err)
		nginx.reload(t, config)
		// Workers with the old configuration finish gracefully, so the
		// new route answers only once the new workers run.
		var status int
		var body string
		for deadline := time.Now().Add(dataPlaneWait); ; time.Sleep(20 * time.Millisecond) {
			status, body, err = rawRequest(nginx.httpAddr, "GET /new/1 HTTP/1.1", "api.example.com")
			if err == nil && status == http.StatusOK {
				break
			}
			require.True(t, time.Now().Before(deadline), "the new route did not answer within %s: %d %q %v\n%s", dataPlaneWait, status, body, err, nginx.logs())
		}
		var got echoReply
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		assert.Equal(t, echoReply{Service: "fresh", RequestURI: "/new/1", Path: "/new/1", Host: "api.example.com",
			ForwardedFor: "127.0.0.1", RealIP: "127.0.0.1", ForwardedHost: "api.example.com", ForwardedProto: "http", Method: "GET"}, got)
		status, _, err = rawRequest(nginx.httpAddr, "GET /users HTTP/1.1", "api.example.com")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, status, "an old route was lost in the reload")
	})
}

// TestDataPlaneForwardedFor checks, through real nginx, that a client
// cannot choose the address its backend sees: without trusted proxies the
// gateway replaces X-Forwarded-For with the connecting address; with the
// connecting address trusted (a front proxy such as the ingress
// controller), the client address that proxy appended is passed on, and
// nothing the client wrote before it.
func TestDataPlaneForwardedFor(t *testing.T) {
	bin := nginxBinary(t)
	ports := startEchoBackends(t, "users")
	resolver := startServiceDNS(t)
	gw := gateway("xff", route("api.example.com", "/", v1.PathTypePrefix, "users", ports["users"]))
	tests := map[string]struct {
		trusted []string
		sent    []string // X-Forwarded-For headers the client sends
		want    string   // X-Forwarded-For and X-Real-IP at the backend
	}{
		"no header":                             {want: "127.0.0.1"},
		"a forged header is replaced":           {sent: []string{"6.6.6.6"}, want: "127.0.0.1"},
		"a forged chain is replaced":            {sent: []string{"6.6.6.6, 10.0.0.1"}, want: "127.0.0.1"},
		"the trusted proxy's client is kept":    {trusted: []string{"127.0.0.1"}, sent: []string{"203.0.113.7"}, want: "203.0.113.7"},
		"what came before the proxy is not":     {trusted: []string{"127.0.0.0/8"}, sent: []string{"6.6.6.6, 203.0.113.7"}, want: "203.0.113.7"},
		"a trusted proxy without the header":    {trusted: []string{"127.0.0.1"}, want: "127.0.0.1"},
		"an untrusted peer's header is dropped": {trusted: []string{"10.0.0.0/8"}, sent: []string{"203.0.113.7"}, want: "127.0.0.1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nginx := startNginx(t, bin, func(opts Options) (string, error) {
				opts.TrustedProxies = tc.trusted
				return Config(gw, opts)
			}, resolver)
			var headers []string
			for _, h := range tc.sent {
				headers = append(headers, "X-Forwarded-For: "+h)
			}
			status, body, err := rawRequest(nginx.httpAddr, "GET /x HTTP/1.1", "api.example.com", headers...)
			require.NoError(t, err, nginx.logs())
			require.Equal(t, http.StatusOK, status, body)
			var got echoReply
			require.NoError(t, json.Unmarshal([]byte(body), &got), body)
			assert.Equal(t, tc.want, got.ForwardedFor, "X-Forwarded-For at the backend")
			assert.Equal(t, tc.want, got.RealIP, "X-Real-IP at the backend")
		})
	}
}

// TestDataPlaneForwardedHeaders checks, through real nginx, that a client
// cannot choose the host, scheme or port its backend believes it used:
// X-Forwarded-Host is the request's host, X-Forwarded-Proto and
// X-Forwarded-Port a trusted proxy's (proto http or https, port digits),
// else the gateway's own scheme and no port, and Forwarded,
// X-Forwarded-Prefix, -Ssl and -Scheme never arrive from the client (a
// route may set X-Forwarded-Prefix). A route that changes request headers
// repeats the gateway's, so both kinds of location are asked.
func TestDataPlaneForwardedHeaders(t *testing.T) {
	bin := nginxBinary(t)
	ports := startEchoBackends(t, "users")
	resolver := startServiceDNS(t)
	headers := route("api.example.com", "/h/", v1.PathTypePrefix, "users", ports["users"])
	headers.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-Team", Value: "payments"}, {Name: "X-Forwarded-Prefix", Value: "/h"}}}
	gw := gateway("forwarded", route("api.example.com", "/", v1.PathTypePrefix, "users", ports["users"]), headers)
	forged := []string{"Forwarded: for=6.6.6.6;host=evil.example;proto=https", "X-Forwarded-Host: evil.example",
		"X-Forwarded-Prefix: /evil", "X-Forwarded-Ssl: on", "X-Forwarded-Scheme: https"}
	type seen struct{ host, proto, port string }
	tests := map[string]struct {
		trusted []string
		sent    []string // headers the client (or the proxy) sends
		want    seen
	}{
		"nothing sent":                {want: seen{"api.example.com", "http", ""}},
		"a forged set is replaced":    {sent: append(forged, "X-Forwarded-Proto: https", "X-Forwarded-Port: 443"), want: seen{"api.example.com", "http", ""}},
		"an untrusted peer's proto":   {trusted: []string{"10.0.0.0/8"}, sent: []string{"X-Forwarded-Proto: https", "X-Forwarded-Port: 443"}, want: seen{"api.example.com", "http", ""}},
		"the trusted proxy's is kept": {trusted: []string{"127.0.0.1"}, sent: append(forged, "X-Forwarded-Proto: HTTPS", "X-Forwarded-Port: 443"), want: seen{"api.example.com", "https", "443"}},
		"a trusted CIDR":              {trusted: []string{"127.0.0.0/8"}, sent: []string{"X-Forwarded-Proto: http", "X-Forwarded-Port: 8443"}, want: seen{"api.example.com", "http", "8443"}},
		"a trusted proxy without":     {trusted: []string{"127.0.0.1"}, want: seen{"api.example.com", "http", ""}},
		"a trusted proxy's nonsense":  {trusted: []string{"127.0.0.1"}, sent: []string{"X-Forwarded-Proto: javascript", "X-Forwarded-Port: 443, 80"}, want: seen{"api.example.com", "http", ""}},
		"a chain is not a scheme":     {trusted: []string{"127.0.0.1"}, sent: []string{"X-Forwarded-Proto: https, http"}, want: seen{"api.example.com", "http", ""}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nginx := startNginx(t, bin, func(opts Options) (string, error) {
				opts.TrustedProxies = tc.trusted
				return Config(gw, opts)
			}, resolver)
			for _, target := range []string{"/x", "/h/x"} {
				status, body, err := rawRequest(nginx.httpAddr, "GET "+target+" HTTP/1.1", "api.example.com", tc.sent...)
				require.NoError(t, err, nginx.logs())
				require.Equal(t, http.StatusOK, status, body)
				var got echoReply
				require.NoError(t, json.Unmarshal([]byte(body), &got), body)
				assert.Equal(t, tc.want, seen{got.ForwardedHost, got.ForwardedProto, got.ForwardedPort}, "X-Forwarded-Host, -Proto, -Port at the backend of %s", target)
				assert.Empty(t, got.Forwarded, "Forwarded at the backend of %s", target)
				var others []string
				if target == "/h/x" {
					others = []string{"X-Forwarded-Prefix: /h"}
				}
				assert.Equal(t, others, got.OtherForwarded, "X-Forwarded-Prefix, -Ssl and -Scheme at the backend of %s", target)
			}
		})
	}
}
