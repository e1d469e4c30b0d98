package render

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
	"example.com/apigateway-operator/test/dataplane"
)

// corsBackend answers every request with its method and its own
// Access-Control-* headers (an application that sets CORS itself, and
// wrongly), counting the requests it sees.
func corsBackend(t *testing.T, seen *atomic.Int64) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "https://evil.example")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Allow-Methods", "TRACE")
		w.Header().Set("X-Request-Id", "r1")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"method": r.Method})
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// corsRoutes: /app/ allows an exact origin and a suffix with a port, with
// credentials; /any/ every origin; /ranged/ refuses 127.0.0.4; /private/
// asks for a password; /moved/ redirects every request; /ruled hands a
// request with X-Canary to its rule's named location and answers 404 to
// the others; /plain/ has no cors.
func corsRoutes(port int32) []v1.Route {
	named := &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com", "https://*.example.org:8443"},
		AllowMethods: []v1.CORSMethod{"PUT", "DELETE"}, AllowHeaders: []v1.CORSHeaderName{"X-Team"},
		ExposeHeaders: []v1.HTTPHeaderName{"X-Request-Id"}, MaxAge: new(int32(600)), AllowCredentials: true}
	at := func(path string, c *v1.CORS) v1.Route {
		r := route("api.example.com", path, v1.PathTypePrefix, "cors-backend", port)
		r.CORS = c
		return r
	}
	app := at("/app/", named)
	anyOrigin := at("/any/", &v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}})
	ranged := at("/ranged/", named)
	ranged.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"127.0.0.4/32"}}
	private := at("/private/", named)
	private.BasicAuth = &v1.BasicAuth{SecretName: "users"}
	moved := v1.Route{Host: "api.example.com", Path: "/moved/", PathType: v1.PathTypePrefix, CORS: named,
		Redirect: &v1.HTTPRedirect{Hostname: "new.example.com"}}
	ruled := v1.Route{Host: "api.example.com", Path: "/ruled", PathType: v1.PathTypeExact, CORS: named, Rules: []v1.RouteRule{{
		Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchPresent}}}},
		BackendService: v1.BackendService{Name: "cors-backend", Port: v1.PortNumber(port)},
	}}}
	star := *named
	star.AllowMethods, star.AllowHeaders = []v1.CORSMethod{"*"}, []v1.CORSHeaderName{"*"}
	return []v1.Route{app, anyOrigin, ranged, private, moved, ruled, at("/star/", &star), at("/plain/", nil)}
}

// TestDataPlaneCORS: through real nginx, on both sides of each decision:
// a preflight from an allowed origin (exact, a suffix's label, "*") is
// answered 204 by the gateway with the preflight's headers and the
// backend never sees it; one from an origin not allowed (another host, a
// suffix without a label or with another port, an origin that only
// starts or ends like an allowed one) and an OPTIONS without
// Access-Control-Request-Method reach the backend; an actual request from
// an allowed origin gets the origin, credentials, exposed headers and
// Vary, one from another origin or none gets no Access-Control-* header;
// the backend's own Access-Control-* headers are hidden on cors routes
// only. Source ranges refuse first (403); a preflight passes before
// basicAuth and a redirect, whose answers carry the origin.
func TestDataPlaneCORS(t *testing.T) {
	dir := t.TempDir()
	writeAtomically(t, dir, basicauth.File("users"), aliceBcrypt)
	var seen atomic.Int64
	gw := gateway("cors", corsRoutes(corsBackend(t, &seen))...)
	nginx := startNginxOn(t, nginxBinary(t), "127.0.0.1", func(opts Options) (string, error) {
		config, err := Config(gw, opts)
		return strings.ReplaceAll(config, basicauth.Dir+"/", dir+"/"), err
	}, startServiceDNS(t))

	type request struct {
		from, method, path, origin, requestMethod string
		canary                                    bool
		status                                    int
		backend                                   bool
		// allowOrigin is the Access-Control-Allow-Origin expected, ""
		// for none and no other Access-Control-* header either.
		allowOrigin string
		preflight   bool
	}
	const app, suffix = "https://app.example.com", "https://a.b.example.org:8443"
	cases := map[string]request{
		"preflight, exact origin":             {path: "/app/x", origin: app, requestMethod: "PUT", status: 204, allowOrigin: app, preflight: true},
		"preflight, a suffix's labels":        {path: "/app/x", origin: suffix, requestMethod: "DELETE", status: 204, allowOrigin: suffix, preflight: true},
		"preflight, the suffix alone":         {path: "/app/x", origin: "https://example.org:8443", requestMethod: "PUT", status: 200, backend: true},
		"preflight, the suffix's other port":  {path: "/app/x", origin: "https://a.example.org", requestMethod: "PUT", status: 200, backend: true},
		"preflight, another origin":           {path: "/app/x", origin: "https://evil.example", requestMethod: "PUT", status: 200, backend: true},
		"preflight, exact origin as a prefix": {path: "/app/x", origin: "https://app.example.com.evil.example", requestMethod: "PUT", status: 200, backend: true},
		"preflight, suffix after a path":      {path: "/app/x", origin: "https://evil.example/a.example.org:8443", requestMethod: "PUT", status: 200, backend: true},
		"preflight, http for https":           {path: "/app/x", origin: "http://app.example.com", requestMethod: "PUT", status: 200, backend: true},
		"OPTIONS without request method":      {method: "OPTIONS", path: "/app/x", origin: app, status: 200, backend: true, allowOrigin: app},
		"GET, allowed origin":                 {path: "/app/x", origin: app, status: 200, backend: true, allowOrigin: app},
		"GET, a suffix's labels":              {path: "/app/x", origin: suffix, status: 200, backend: true, allowOrigin: suffix},
		"GET, another origin":                 {path: "/app/x", origin: "https://evil.example", status: 200, backend: true},
		"GET, no origin":                      {path: "/app/x", status: 200, backend: true},
		"any origin, preflight":               {path: "/any/x", origin: "https://evil.example", requestMethod: "PATCH", status: 204, allowOrigin: "*", preflight: true},
		"any origin, GET":                     {path: "/any/x", origin: "https://evil.example", status: 200, backend: true, allowOrigin: "*"},
		"any origin, GET without origin":      {path: "/any/x", status: 200, backend: true},
		"source range refuses first":          {from: "127.0.0.4", path: "/ranged/x", origin: app, requestMethod: "PUT", status: 403, allowOrigin: app},
		"inside the source range":             {from: "127.0.0.2", path: "/ranged/x", origin: app, requestMethod: "PUT", status: 204, allowOrigin: app, preflight: true},
		"preflight before basicAuth":          {path: "/private/x", origin: app, requestMethod: "PUT", status: 204, allowOrigin: app, preflight: true},
		"basicAuth's 401 carries the origin":  {path: "/private/x", origin: app, status: 401, allowOrigin: app},
		"preflight before the redirect":       {path: "/moved/x", origin: app, requestMethod: "PUT", status: 204, allowOrigin: app, preflight: true},
		"the redirect carries the origin":     {path: "/moved/x", origin: app, status: 302, allowOrigin: app},
		"preflight before the rules":          {path: "/ruled", origin: app, requestMethod: "PUT", status: 204, allowOrigin: app, preflight: true},
		"a rule's named location adds them":   {path: "/ruled", canary: true, origin: app, status: 200, backend: true, allowOrigin: app},
		"no rule takes it: 404 with them":     {path: "/ruled", origin: app, status: 404, allowOrigin: app},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			method, from := tc.method, tc.from
			if method == "" {
				method = "GET"
				if tc.requestMethod != "" {
					method = "OPTIONS"
				}
			}
			if from == "" {
				from = "127.0.0.1"
			}
			var headers []string
			if tc.origin != "" {
				headers = append(headers, "Origin: "+tc.origin)
			}
			if tc.canary {
				headers = append(headers, "X-Canary: 1")
			}
			if tc.requestMethod != "" {
				headers = append(headers, "Access-Control-Request-Method: "+tc.requestMethod, "Access-Control-Request-Headers: x-team")
			}
			before := seen.Load()
			resp, body, err := dataplane.RawResponse(from, nginx.httpAddr, method+" "+tc.path+" HTTP/1.1", "api.example.com", headers...)
			require.NoError(t, err, nginx.logs())
			require.Equal(t, tc.status, resp.StatusCode, "body: %s\n%s", body, nginx.logs())
			assert.Equal(t, tc.backend, seen.Load() > before, "whether the backend saw the request")
			h := resp.Header
			if tc.allowOrigin == "" {
				for name := range h {
					assert.False(t, strings.HasPrefix(name, "Access-Control-"), "%s: %v", name, h[name])
				}
				return
			}
			assert.Equal(t, []string{tc.allowOrigin}, h.Values("Access-Control-Allow-Origin"))
			named := tc.allowOrigin != "*"
			if named {
				assert.Equal(t, []string{"true"}, h.Values("Access-Control-Allow-Credentials"))
				assert.Contains(t, h.Values("Vary"), "Origin")
			} else {
				assert.Empty(t, h.Values("Access-Control-Allow-Credentials"))
			}
			if tc.preflight {
				if named {
					assert.Equal(t, "PUT, DELETE", h.Get("Access-Control-Allow-Methods"))
					assert.Equal(t, "X-Team", h.Get("Access-Control-Allow-Headers"))
					assert.Equal(t, "600", h.Get("Access-Control-Max-Age"))
				} else {
					assert.Equal(t, "5", h.Get("Access-Control-Max-Age"))
				}
				return
			}
			assert.Empty(t, h.Values("Access-Control-Allow-Methods"), "the backend's own")
			if named {
				assert.Equal(t, "X-Request-Id", h.Get("Access-Control-Expose-Headers"))
			}
		})
	}

	// Without cors the backend's own headers pass, as before.
	resp, _, err := dataplane.RawResponse("127.0.0.1", nginx.httpAddr, "GET /plain/x HTTP/1.1", "api.example.com", "Origin: "+app)
	require.NoError(t, err)
	assert.Equal(t, "https://evil.example", resp.Header.Get("Access-Control-Allow-Origin"))
}

// TestDataPlaneCORSAnyMethodAndHeader: through real nginx, a route whose
// allowMethods and allowHeaders are "*" (with credentials) answers a
// preflight with the method and headers it asks for, any of them, and a
// route that names its methods and headers answers with those only, so
// the browser refuses another. What the preflight asks for is the
// client's: the gateway echoes only a bounded token or list of tokens,
// and answers no Access-Control-Allow-Methods or -Headers for anything
// else (the browser then refuses the preflight); nginx itself refuses a
// CR in a header.
func TestDataPlaneCORSAnyMethodAndHeader(t *testing.T) {
	var seen atomic.Int64
	gw := gateway("cors", corsRoutes(corsBackend(t, &seen))...)
	nginx := startNginxOn(t, nginxBinary(t), "127.0.0.1", func(opts Options) (string, error) { return Config(gw, opts) }, startServiceDNS(t))
	const app = "https://app.example.com"
	longList := strings.TrimSuffix(strings.Repeat("x-abcdefghi,", 85), ",") // 1019 bytes
	cases := map[string]struct {
		path, method, headers string
		status                int
		// allowMethods and allowHeaders are the answer's, "" for none.
		allowMethods, allowHeaders string
	}{
		"*: any method and headers":        {"/star/x", "PURGE", "x-anything,x-other", 204, "PURGE", "x-anything,x-other"},
		"*: a lower-case method":           {"/star/x", "patch", "x-a, x-b", 204, "patch", "x-a, x-b"},
		"*: Authorization too":             {"/star/x", "PUT", "authorization", 204, "PUT", "authorization"},
		"*: 1019 bytes of headers":         {"/star/x", "PUT", longList, 204, "PUT", longList},
		"*: past 1024 bytes of headers":    {"/star/x", "PUT", longList + ",x-abcdef", 204, "PUT", ""},
		"*: a method of 32 characters":     {"/star/x", strings.Repeat("M", 32), "x-a", 204, strings.Repeat("M", 32), "x-a"},
		"*: a method of 33 characters":     {"/star/x", strings.Repeat("M", 33), "x-a", 204, "", "x-a"},
		"*: a method with a quote":         {"/star/x", `PU"T`, "x-a", 204, "", "x-a"},
		"*: a method with a space":         {"/star/x", "PUT x", "x-a", 204, "", "x-a"},
		"*: headers with a semicolon":      {"/star/x", "PUT", "x-a;x-b", 204, "PUT", ""},
		"*: headers with a colon":          {"/star/x", "PUT", "x-a, Set-Cookie: a=b", 204, "PUT", ""},
		"*: headers past ASCII":            {"/star/x", "PUT", "x-\xc3\xa9", 204, "PUT", ""},
		"*: headers with a CR":             {"/star/x", "PUT", "x-a\rSet-Cookie: a=b", 400, "", ""},
		"*: an empty list of headers":      {"/star/x", "PUT", ",", 204, "PUT", ""},
		"named: another method and header": {"/app/x", "PURGE", "x-anything", 204, "PUT, DELETE", "X-Team"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := seen.Load()
			resp, body, err := dataplane.RawResponse("127.0.0.1", nginx.httpAddr, "OPTIONS "+tc.path+" HTTP/1.1", "api.example.com",
				"Origin: "+app, "Access-Control-Request-Method: "+tc.method, "Access-Control-Request-Headers: "+tc.headers)
			require.NoError(t, err, nginx.logs())
			require.Equal(t, tc.status, resp.StatusCode, "body: %s\n%s", body, nginx.logs())
			assert.Equal(t, int64(0), seen.Load()-before, "the backend saw the preflight")
			assert.Empty(t, resp.Header.Values("Set-Cookie"))
			for header, want := range map[string]string{"Access-Control-Allow-Methods": tc.allowMethods, "Access-Control-Allow-Headers": tc.allowHeaders} {
				if want == "" {
					assert.Empty(t, resp.Header.Values(header), header)
					continue
				}
				assert.Equal(t, []string{want}, resp.Header.Values(header), header)
			}
			if tc.status == 204 {
				assert.Equal(t, []string{app}, resp.Header.Values("Access-Control-Allow-Origin"))
				assert.Equal(t, []string{"true"}, resp.Header.Values("Access-Control-Allow-Credentials"))
			}
		})
	}

	// An actual request on a "*" route gets neither: they are a
	// preflight's, and the backend's own are hidden.
	resp, _, err := dataplane.RawResponse("127.0.0.1", nginx.httpAddr, "PURGE /star/x HTTP/1.1", "api.example.com", "Origin: "+app,
		"Access-Control-Request-Method: PURGE")
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, app, resp.Header.Get("Access-Control-Allow-Origin"))
	assert.Empty(t, resp.Header.Values("Access-Control-Allow-Methods"))
}
