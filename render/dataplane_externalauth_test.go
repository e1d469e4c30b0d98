package render

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// The external authentication through the real nginx: a real HTTP
// authentication server on loopback (this process's, as the other
// data-plane backends are) decides by the Authorization header the
// gateway forwards to it, and a backend counts what reaches it.

const (
	authSignIn = "https://login.example.com/oauth2/start"
	// authTimeout is the routes' timeoutSeconds: the slow case's answer
	// comes after it, bounded by dataPlaneWait.
	authTimeout int32 = 1
)

// authServer answers by the Authorization header: "Bearer ok" 200 with
// the user's headers, "Bearer silent" 200 without them, "Bearer
// forbidden" 403, "Bearer teapot" 418, "Bearer slow" never (until the
// gateway gives up), anything else 401. It records each request's
// headers and body length by X-Original-URI.
type authServer struct {
	port  int32
	calls atomic.Int64
	mu    sync.Mutex
	seen  map[string]authSeen
}

type authSeen struct {
	header http.Header
	path   string
	body   int
}

func startAuthServer(t testing.TB) *authServer {
	t.Helper()
	a := &authServer{seen: map[string]authSeen{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.seen[r.Header.Get("X-Original-URI")] = authSeen{header: r.Header.Clone(), path: r.URL.Path, body: len(body)}
		a.mu.Unlock()
		switch r.Header.Get("Authorization") {
		case "Bearer ok":
			w.Header().Set("X-Auth-Request-User", "alice")
			w.Header().Set("X-Auth-Request-Email", "alice@example.com")
		case "Bearer silent":
		case "Bearer forbidden":
			w.WriteHeader(http.StatusForbidden)
		case "Bearer teapot":
			w.WriteHeader(http.StatusTeapot)
		case "Bearer slow":
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)
	a.port = int32(srv.Listener.Addr().(*net.TCPAddr).Port)
	return a
}

func (a *authServer) request(uri string) authSeen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[uri]
}

// hitBackend answers 200 with the headers it received and counts
// its requests.
func hitBackend(t testing.TB, hits *atomic.Int64) int32 {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_ = json.NewEncoder(w).Encode(headerReply{Headers: r.Header, Host: r.Host})
	}))
	t.Cleanup(srv.Close)
	return int32(srv.Listener.Addr().(*net.TCPAddr).Port)
}

// closedPort is a loopback port nothing listens on.
func closedPort(t testing.TB) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := int32(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	return port
}

// authRoutes: /app/ with sign-in, /api without (its 401 reaches the
// client), /down asking a Service nothing listens on, /office with
// source ranges that refuse 127.0.0.3 first, /ruled with a rule and no
// backendService.
func authRoutes(authPort, backendPort, downPort int32) []v1.Route {
	auth := func(port int32, signIn string) *v1.ExternalAuth {
		return &v1.ExternalAuth{
			Service: "auth", Port: v1.PortNumber(port), Path: "/oauth2/auth",
			ForwardHeaders:  []v1.HTTPHeaderName{"Authorization", "Cookie"},
			ResponseHeaders: []v1.HTTPHeaderName{"X-Auth-Request-User", "X-Auth-Request-Email"},
			SignInURL:       signIn, TimeoutSeconds: ptr.To(authTimeout),
		}
	}
	app := route("api.example.com", "/app/", v1.PathTypePrefix, "backend", backendPort)
	app.ExternalAuth = auth(authPort, authSignIn)
	api := route("api.example.com", "/api", v1.PathTypeExact, "backend", backendPort)
	api.ExternalAuth = auth(authPort, "")
	down := route("api.example.com", "/down", v1.PathTypeExact, "backend", backendPort)
	down.ExternalAuth = auth(downPort, authSignIn)
	office := route("api.example.com", "/office", v1.PathTypeExact, "backend", backendPort)
	office.ExternalAuth = auth(authPort, authSignIn)
	office.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"127.0.0.3/32"}}
	ruled := v1.Route{Host: "api.example.com", Path: "/ruled", PathType: v1.PathTypeExact, Rules: []v1.RouteRule{{
		Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchPresent}}}},
		BackendService: v1.BackendService{Name: "backend", Port: v1.PortNumber(backendPort)},
	}}, ExternalAuth: auth(authPort, authSignIn)}
	wild := route("*.apps.example.com", "/w", v1.PathTypeExact, "backend", backendPort)
	wild.ExternalAuth = auth(authPort, authSignIn)
	return []v1.Route{app, api, down, office, ruled, wild}
}

// startAuthGateway starts an authentication server, a backend counting
// its requests, and nginx serving authRoutes.
func startAuthGateway(t *testing.T) (*authServer, *atomic.Int64, *nginxProcess) {
	t.Helper()
	auth := startAuthServer(t)
	hits := &atomic.Int64{}
	gw := gateway("auth", authRoutes(auth.port, hitBackend(t, hits), closedPort(t))...)
	return auth, hits, startNginx(t, nginxBinary(t), func(opts Options) (string, error) { return Config(gw, opts) }, startServiceDNS(t))
}

// TestDataPlaneExternalAuth: each answer of the authentication Service
// through the real nginx, and that the backend is reached only after a
// 2xx, with the Service's identity headers and never the client's.
func TestDataPlaneExternalAuth(t *testing.T) {
	auth, hits, nginx := startAuthGateway(t)
	forged := http.Header{"X-Auth-Request-User": {"mallory"}, "X-Auth-Request-Email": {"mallory@example.com"}}
	tests := map[string]struct {
		from, target, authorization string
		forge, canary               bool
		status                      int
		// user is the X-Auth-Request-User the backend receives when
		// reached; "" for none.
		user string
		// rd is the sign-in redirect's rd, decoded.
		rd string
		// asked is false when the authentication Service is never asked.
		asked bool
	}{
		"allowed":                           {target: "/app/x", authorization: "Bearer ok", status: 200, user: "alice", asked: true},
		"allowed, forged identity replaced": {target: "/app/forge", authorization: "Bearer ok", forge: true, status: 200, user: "alice", asked: true},
		"allowed, forged identity dropped when the Service sends none": {target: "/app/silent", authorization: "Bearer silent", forge: true, status: 200, asked: true},
		"401 redirects to sign-in with rd":                             {target: "/app/y?a=1&b=2", status: 302, rd: "http://api.example.com/app/y?a=1&b=2", asked: true},
		"401 redirects with rd escaped":                                {target: "/app/a%20b?q=x+y%26z;w", status: 302, rd: "http://api.example.com/app/a%20b?q=x+y%26z;w", asked: true},
		"401 redirects with rd empty past 16 characters to encode":     {target: "/app/m?" + strings.Repeat("a&", 17), status: 302, asked: true},
		"401 redirects with rd empty for a character not encoded":      {target: "/app/q?x=[1]", status: 302, asked: true},
		"a rule's named location asks too":                             {target: "/ruled", canary: true, authorization: "Bearer ok", status: 200, user: "alice", asked: true},
		"a rule's named location redirects to sign-in":                 {target: "/ruled?r=1", canary: true, status: 302, rd: "http://api.example.com/ruled?r=1", asked: true},
		"a route's 404 for what no rule takes asks nothing":            {target: "/ruled?none", status: 404},
		"401 without signInURL reaches the client":                     {target: "/api", status: 401, asked: true},
		"403":                                {target: "/app/z", authorization: "Bearer forbidden", status: 403, asked: true},
		"an answer but 2xx, 401, 403 is 500": {target: "/app/t", authorization: "Bearer teapot", status: 500, asked: true},
		"the Service down is 500":            {target: "/down", authorization: "Bearer ok", status: 500},
		"source ranges refuse first":         {from: "127.0.0.3", target: "/office?first", authorization: "Bearer ok", status: 403},
		"source ranges then auth":            {target: "/office?then", authorization: "Bearer ok", status: 200, user: "alice", asked: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			from := tc.from
			if from == "" {
				from = "127.0.0.1"
			}
			header := http.Header{}
			if tc.forge {
				header = forged.Clone()
			}
			if tc.authorization != "" {
				header.Set("Authorization", tc.authorization)
			}
			header.Set("X-Secret", "not for the auth service")
			if tc.canary {
				header.Set("X-Canary", "1")
			}
			before := hits.Load()
			c := gatewayClient(from)
			c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, body := send(t, c, nginx.httpAddr, http.MethodPost, tc.target, header, strings.NewReader("secret body"))
			require.Equal(t, tc.status, resp.StatusCode, "body: %s\n%s", body, nginx.logs())
			seen := auth.request(tc.target)
			if tc.asked {
				require.NotNil(t, seen.header, "the authentication Service was not asked")
				assert.Equal(t, "/oauth2/auth", seen.path)
				assert.Equal(t, http.MethodPost, seen.header.Get("X-Original-Method"))
				assert.Equal(t, 0, seen.body, "the body reached the authentication Service")
				assert.Empty(t, seen.header.Get("X-Secret"), "an unlisted header reached the authentication Service")
				assert.Equal(t, tc.authorization, seen.header.Get("Authorization"))
			} else {
				assert.Nil(t, seen.header, "the authentication Service was asked")
			}
			if tc.status != http.StatusOK {
				assert.Equal(t, before, hits.Load(), "the backend was reached")
			} else {
				var got headerReply
				require.NoError(t, json.Unmarshal([]byte(body), &got))
				assert.Equal(t, tc.user, got.Headers.Get("X-Auth-Request-User"))
				assert.Len(t, got.Headers.Values("X-Auth-Request-User"), min(1, len(tc.user)))
				if tc.user == "" {
					assert.Empty(t, got.Headers.Values("X-Auth-Request-Email"))
				}
			}
			if tc.status == http.StatusFound {
				loc, err := url.Parse(resp.Header.Get("Location"))
				require.NoError(t, err)
				assert.Equal(t, "login.example.com", loc.Host)
				assert.Equal(t, tc.rd, loc.Query().Get("rd"), "Location: %s", resp.Header.Get("Location"))
			}
		})
	}
}

// TestDataPlaneExternalAuthWildcardHost: on a wildcard's server the
// client writes the first label of rd's host; one that is not a DNS label
// gets an empty rd, never another host.
func TestDataPlaneExternalAuthWildcardHost(t *testing.T) {
	_, hits, nginx := startAuthGateway(t)
	c := gatewayClient("127.0.0.1")
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for host, rd := range map[string]string{
		"shop.apps.example.com":     "http://shop.apps.example.com/w?q=1",
		"evil@x.apps.example.com":   "",
		"evil:1@x.apps.example.com": "",
		"evil?.apps.example.com":    "",
		"a_b.apps.example.com":      "",
		"a%2f.apps.example.com":     "",
	} {
		t.Run(host, func(t *testing.T) {
			resp, body, err := do(c, nginx.httpAddr, http.MethodGet, host, "/w?q=1", nil, nil)
			require.NoError(t, err)
			if resp.StatusCode == http.StatusBadRequest {
				t.Skipf("nginx refuses the host %q itself", host)
			}
			require.Equal(t, http.StatusFound, resp.StatusCode, "body: %s", body)
			loc, err := url.Parse(resp.Header.Get("Location"))
			require.NoError(t, err)
			assert.Equal(t, rd, loc.Query().Get("rd"), "Location: %s", resp.Header.Get("Location"))
		})
	}
	assert.Equal(t, int64(0), hits.Load())
}

// TestDataPlaneExternalAuthSlow: an authentication Service that does not
// answer within timeoutSeconds gets the client a 500, and the backend is
// never reached. The wait is nginx's own timeout; the client's is
// dataPlaneWait, well above it.
func TestDataPlaneExternalAuthSlow(t *testing.T) {
	auth, hits, nginx := startAuthGateway(t)
	start := time.Now()
	resp, body := send(t, gatewayClient("127.0.0.1"), nginx.httpAddr, http.MethodGet, "/app/slow", http.Header{"Authorization": {"Bearer slow"}}, nil)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "body: %s", body)
	assert.Equal(t, int64(0), hits.Load(), "the backend was reached")
	assert.Equal(t, int64(1), auth.calls.Load())
	t.Logf("answered after %s with timeoutSeconds %d", time.Since(start).Round(time.Millisecond), authTimeout)
}
