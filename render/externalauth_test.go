package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// authRoute is a Prefix route of host with an external authentication
// to Service auth.
func authRoute(host, path string) v1.Route {
	r := route(host, path, v1.PathTypePrefix, "web", 8080)
	r.ExternalAuth = &v1.ExternalAuth{Service: "auth", Port: 4180, Path: "/oauth2/auth",
		ForwardHeaders:  []v1.HTTPHeaderName{"Cookie"},
		ResponseHeaders: []v1.HTTPHeaderName{"X-Auth-Request-User"},
		SignInURL:       "https://login.example.com/start"}
	return r
}

// TestRenderExternalAuth: what the locations and the internal location
// hold, table by table.
func TestRenderExternalAuth(t *testing.T) {
	tests := map[string]struct {
		routes  func() []v1.Route
		want    map[string]int // line -> times
		notWant []string
	}{
		"a route with sign-in": {
			routes: func() []v1.Route { return []v1.Route{authRoute("api.example.com", "/app")} },
			want: map[string]int{
				"        internal;":                                                     1,
				"        proxy_pass_request_body off;":                                  1,
				"        proxy_pass_request_headers off;":                               1,
				`        proxy_set_header Content-Length "";`:                           1,
				"        proxy_set_header Cookie $http_cookie;":                         1,
				"        proxy_set_header X-Original-URI $request_uri;":                 1,
				"        proxy_connect_timeout 5s;":                                     1,
				"        proxy_read_timeout 5s;":                                        1,
				`        set $gateway_auth_backend "auth.shop.svc.cluster.local:4180";`: 1,
				"        proxy_pass http://$gateway_auth_backend/oauth2/auth;":          1,
				// Both locations of the Prefix route.
				`        error_page 401 "https://login.example.com/start?rd=$gateway_auth_rd";`: 2,
				"        recursive_error_pages on;":                                             2,
				"        proxy_set_header X-Real-IP $remote_addr;":                              3, // the server's, and both locations' repeated
				"map $gateway_auth_rd_rest16 $gateway_auth_rd {":                                1,
			},
		},
		"a sign-in URL with a query": {
			routes: func() []v1.Route {
				r := authRoute("api.example.com", "/app")
				r.ExternalAuth.SignInURL = "https://login.example.com/start?app=shop"
				return []v1.Route{r}
			},
			want: map[string]int{`        error_page 401 "https://login.example.com/start?app=shop&rd=$gateway_auth_rd";`: 2},
		},
		"no sign-in: no error_page, no maps": {
			routes: func() []v1.Route {
				r := authRoute("api.example.com", "/app")
				r.ExternalAuth.SignInURL = ""
				return []v1.Route{r}
			},
			notWant: []string{"error_page 401", "gateway_auth_rd", "recursive_error_pages"},
		},
		"no response headers: the server's request headers are not repeated": {
			routes: func() []v1.Route {
				r := authRoute("api.example.com", "/app")
				r.ExternalAuth.ResponseHeaders = nil
				return []v1.Route{r}
			},
			want:    map[string]int{"    proxy_set_header X-Real-IP $remote_addr;": 1, "        proxy_set_header X-Real-IP $remote_addr;": 1},
			notWant: []string{"auth_request_set"},
		},
		"requestHeaders repeat the server's headers once": {
			routes: func() []v1.Route {
				r := authRoute("api.example.com", "/app")
				r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-Team", Value: "a"}}}
				return []v1.Route{r}
			},
			want: map[string]int{"        proxy_set_header X-Real-IP $remote_addr;": 3, "        proxy_headers_hash_bucket_size 256;": 2},
		},
		"two routes of a host with one authentication share its location": {
			routes: func() []v1.Route {
				return []v1.Route{authRoute("api.example.com", "/a"), authRoute("api.example.com", "/b")}
			},
			want: map[string]int{"        internal;": 1, "map $gateway_auth_rd_rest16 $gateway_auth_rd {": 1},
		},
		"two hosts: a location each": {
			routes: func() []v1.Route {
				return []v1.Route{authRoute("api.example.com", "/a"), authRoute("www.example.com", "/a")}
			},
			want: map[string]int{"        internal;": 2, "map $gateway_auth_rd_rest16 $gateway_auth_rd {": 1},
		},
		"another timeout: another location": {
			routes: func() []v1.Route {
				b := authRoute("api.example.com", "/b")
				b.ExternalAuth.TimeoutSeconds = new(int32)
				*b.ExternalAuth.TimeoutSeconds = 2
				return []v1.Route{authRoute("api.example.com", "/a"), b}
			},
			want: map[string]int{"        internal;": 2, "        proxy_read_timeout 2s;": 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			config, err := Config(gateway("gw", tc.routes()...), Options{})
			require.NoError(t, err)
			for line, n := range tc.want {
				assert.Equal(t, n, countLines(config, line), "%q in:\n%s", line, config)
			}
			for _, s := range tc.notWant {
				assert.NotContains(t, config, s)
			}
		})
	}
}

// TestRenderExternalAuthRefusesHostileStrings: the renderer's own look at
// what an external authentication writes refuses hostile strings that
// bypassed validation, and writes nothing for them.
func TestRenderExternalAuthRefusesHostileStrings(t *testing.T) {
	sets := map[string]func(a *v1.ExternalAuth, s string){
		"path":           func(a *v1.ExternalAuth, s string) { a.Path = v1.HTTPPath("/" + s) },
		"forwardHeaders": func(a *v1.ExternalAuth, s string) { a.ForwardHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName("X" + s)} },
		"responseHeaders": func(a *v1.ExternalAuth, s string) {
			a.ResponseHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName("X" + s)}
		},
		"signInURL": func(a *v1.ExternalAuth, s string) { a.SignInURL = "https://login.example.com/" + s },
	}
	hostile := hostileStrings()
	hostile["envsubst"] = "${NGINX_LOCAL_RESOLVERS}"
	for field, set := range sets {
		for name, s := range hostile {
			t.Run(field+" with a "+name, func(t *testing.T) {
				r := authRoute("api.example.com", "/app")
				set(r.ExternalAuth, s)
				require.NotEmpty(t, checkExternalAuth(r.ExternalAuth, fieldPath()), "the renderer's check")
				w := &trafficWriter{t: &routeTraffic{}, id: routeID("x"), backend: func(n v1.ServiceName, _ int32) string { return string(n) }}
				errs := writeExternalAuth(w, &r, fieldPath())
				require.NotEmpty(t, errs)
				assert.Equal(t, validation.RuleExternalAuth, errs[0].Origin)
				assert.Nil(t, w.t.auth, "wrote what it refused")
				_, err := Config(gateway("gw", r), Options{})
				assert.Error(t, err)
			})
		}
	}
	for _, n := range []string{"Host", "connection", "Upgrade", "X-Forwarded-For", "X-Original-URI", "Content-Length", "Transfer-Encoding", "TE", "Keep-Alive"} {
		t.Run("the gateway's header "+n, func(t *testing.T) {
			r := authRoute("api.example.com", "/app")
			r.ExternalAuth.ResponseHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName(n)}
			assert.NotEmpty(t, checkExternalAuth(r.ExternalAuth, fieldPath()))
			r.ExternalAuth.ResponseHeaders, r.ExternalAuth.ForwardHeaders = nil, []v1.HTTPHeaderName{v1.HTTPHeaderName(n)}
			assert.NotEmpty(t, checkExternalAuth(r.ExternalAuth, fieldPath()))
		})
	}
}

func fieldPath() *field.Path { return field.NewPath("externalAuth") }

// countLines is how many lines of config are line.
func countLines(config, line string) int {
	n := 0
	for l := range strings.SplitSeq(config, "\n") {
		if l == line {
			n++
		}
	}
	return n
}
