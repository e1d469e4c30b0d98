package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// TestRenderCORS checks the maps and lines each kind of CORS renders to:
// an exact origin answered as configured, a suffix as an anchored
// expression of DNS labels with its dots escaped, "*" without Vary or
// credentials; the preflight's lines before the external authentication
// and the redirect; credentials and exposed headers only when set.
func TestRenderCORS(t *testing.T) {
	tests := map[string]struct {
		cors      v1.CORS
		auth      bool
		want, not []string
	}{
		"an exact origin and a suffix with a port": {
			cors: v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com", "http://*.example.org:8080"}, AllowCredentials: true,
				AllowMethods: []v1.CORSMethod{"PUT"}, AllowHeaders: []v1.CORSHeaderName{"X-A", "X-B"}, ExposeHeaders: []v1.HTTPHeaderName{"X-C"}},
			want: []string{
				`"https://app.example.com" "https://app.example.com";`,
				`"~^http://(?:[a-z0-9-]+\.)+example\.org:8080$" "$http_origin";`,
				`"~^OPTIONS [^ ]+ ." 1;`,
				`add_header Access-Control-Allow-Methods "PUT" always;`,
				`add_header Access-Control-Allow-Headers "X-A, X-B" always;`,
				`add_header Access-Control-Max-Age 5 always;`,
				"add_header Vary Origin always;",
				`default "X-C";`,
				`default "true";`,
				"proxy_hide_header Access-Control-Allow-Origin;",
				"error_page 519 = @gateway_cors_",
				"return 519;",
				"return 204;",
			},
		},
		"any origin": {
			cors: v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, MaxAge: ptr.To[int32](86400)},
			want: []string{"    default \"*\";\n    \"\" \"\";\n", "add_header Access-Control-Max-Age 86400 always;"},
			not: []string{"Vary", "Access-Control-Allow-Credentials $", "Access-Control-Expose-Headers $", "Access-Control-Allow-Methods \"", "Access-Control-Allow-Headers \"",
				"$http_access_control_request_method;"},
		},
		"* methods and headers": {
			cors: v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}, AllowCredentials: true,
				AllowMethods: []v1.CORSMethod{"*"}, AllowHeaders: []v1.CORSHeaderName{"*"}},
			want: []string{
				"add_header Access-Control-Allow-Methods $gateway_cors_request_method always;",
				"add_header Access-Control-Allow-Headers $gateway_cors_request_headers always;",
				`"~^[-A-Za-z0-9_]{1,32}$" $http_access_control_request_method;`,
				`"~^(?=.{1,1024}$)[-A-Za-z0-9_]+(?: *, *[-A-Za-z0-9_]+)*$" $http_access_control_request_headers;`,
			},
			not: []string{`Access-Control-Allow-Methods "*"`, `Access-Control-Allow-Headers "*"`},
		},
		"preflight before externalAuth": {
			cors: v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}},
			auth: true,
			want: []string{"return 519;\n        }\n        auth_request"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
			c := tc.cors
			r.CORS = &c
			if tc.auth {
				r.ExternalAuth = &v1.ExternalAuth{Service: "auth", Port: 80, Path: "/auth"}
			}
			assertRendered(t, gateway("gw", r), Options{Resolvers: []string{"127.0.0.1"}}, tc.want, tc.not)
		})
	}
}

// TestRenderCORSSharesItsBlocks: routes with the same CORS share its
// maps (once per gateway) and its preflight's named location (once per
// server); a route with another CORS has its own.
func TestRenderCORSSharesItsBlocks(t *testing.T) {
	shared := &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}, AllowMethods: []v1.CORSMethod{"PUT"}}
	other := &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}, AllowMethods: []v1.CORSMethod{"DELETE"}}
	var routes []v1.Route
	for _, host := range []string{"a.example.com", "b.example.com"} {
		for _, path := range []string{"/one/", "/two/"} {
			r := route(host, path, v1.PathTypePrefix, "web", 80)
			r.CORS = shared
			routes = append(routes, r)
		}
	}
	r := route("a.example.com", "/three/", v1.PathTypePrefix, "web", 80)
	r.CORS = other
	routes = append(routes, r)
	config, err := Config(gateway("gw", routes...), Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	id, otherID := corsID(shared), corsID(other)
	require.NotEqual(t, id, otherID)
	assert.Equal(t, 1, strings.Count(config, "map $http_origin $gateway_cors_origin_"+id+" {"), "the maps, once per gateway")
	assert.Equal(t, 1, strings.Count(config, "map $http_origin $gateway_cors_origin_"+otherID+" {"))
	assert.Equal(t, 2, strings.Count(config, "location @gateway_cors_"+id+" {"), "the named location, once per server")
	assert.Equal(t, 1, strings.Count(config, "location @gateway_cors_"+otherID+" {"))
	// Each of the 5 Prefix routes' 2 locations hands its preflights over.
	assert.Equal(t, 10, strings.Count(config, "error_page 519 = @gateway_cors_"))
	checkBound(t, gateway("gw", routes...))
}

// assertRendered renders gw with opts and asserts that the configuration
// holds each of want and none of not, and that the size bound holds it.
func assertRendered(t *testing.T, gw *v1.APIGateway, opts Options, want, not []string) {
	t.Helper()
	config, err := Config(gw, opts)
	require.NoError(t, err)
	for _, w := range want {
		assert.Contains(t, config, w)
	}
	for _, n := range not {
		assert.NotContains(t, config, n)
	}
	checkBound(t, gw)
}

// TestRenderCORSRefusesWhatItWouldEscape: the renderer's own check
// (checkCORS) refuses a CORS whose strings bypassed admission, at the
// field that holds them.
func TestRenderCORSRefusesWhatItWouldEscape(t *testing.T) {
	origin := func(o string) v1.CORS { return v1.CORS{AllowOrigins: []v1.CORSOrigin{v1.CORSOrigin(o)}} }
	for name, tc := range map[string]struct {
		cors  v1.CORS
		field string
	}{
		"no origin":                   {v1.CORS{}, "cors.allowOrigins"},
		"an origin with a quote":      {origin(`https://a".example.com`), "cors.allowOrigins[0]"},
		"an origin with a variable":   {origin("https://$host"), "cors.allowOrigins[0]"},
		"an origin with a semicolon":  {origin("https://a.example.com;return"), "cors.allowOrigins[0]"},
		"an origin with a brace":      {origin("https://a.example.com{"), "cors.allowOrigins[0]"},
		"an origin with a newline":    {origin("https://a.example.com\n"), "cors.allowOrigins[0]"},
		"an origin with a regex":      {origin("https://a.example.(com|org)"), "cors.allowOrigins[0]"},
		"an origin with a path":       {origin("https://a.example.com/x"), "cors.allowOrigins[0]"},
		"an origin's port past 65535": {origin("https://a.example.com:70000"), "cors.allowOrigins[0]"},
		"a method with a space":       {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, AllowMethods: []v1.CORSMethod{"GET POST"}}, "cors.allowMethods[0]"},
		"a method * with another":     {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, AllowMethods: []v1.CORSMethod{"GET", "*"}}, "cors.allowMethods[1]"},
		"a header * with another":     {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, AllowHeaders: []v1.CORSHeaderName{"*", "X-A"}}, "cors.allowHeaders[0]"},
		"an exposed header *":         {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, ExposeHeaders: []v1.HTTPHeaderName{"*"}}, "cors.exposeHeaders[0]"},
		"a header with a quote":       {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, AllowHeaders: []v1.CORSHeaderName{`X"`}}, "cors.allowHeaders[0]"},
		"an exposed header with ','":  {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, ExposeHeaders: []v1.HTTPHeaderName{"a,b"}}, "cors.exposeHeaders[0]"},
		"maxAge 0":                    {v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, MaxAge: ptr.To[int32](0)}, "cors.maxAge"},
	} {
		t.Run(name, func(t *testing.T) {
			c := tc.cors
			_, errs := checkCORS(&c, field.NewPath("cors"))
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.field, errs[0].Field)
			assert.Equal(t, validation.RuleCORS, errs[0].Origin)
		})
	}
}

// FuzzRenderCORSStrings: whatever a CORS's origin, method and header
// name hold, the configuration is refused or has the directives and
// blocks of the same CORS with harmless strings of the same kind.
func FuzzRenderCORSStrings(f *testing.F) {
	for _, s := range hostileStrings() {
		f.Add("https://a"+s+".example.com", "PUT"+s, "X"+s)
		f.Add("https://*.example.com"+s, s, s)
		f.Add(s, "PUT", "X-A")
	}
	f.Add("https://*.a-b.example.com:8443", "DELETE", "X-A")
	f.Add("*", "PATCH", "Authorization")
	f.Add("*", "*", "X-A")
	f.Add("https://a.example.com", "*", "*")
	f.Fuzz(func(t *testing.T, origin, method, header string) {
		opts := Options{Resolvers: []string{"127.0.0.1"}}
		config, err := Config(fuzzCORSGateway(origin, method, header), opts)
		if err != nil {
			require.Empty(t, config)
			return
		}
		o, ok := validation.ParseCORSOrigin(origin)
		require.True(t, ok, "an origin written that does not parse: %q", origin)
		harmless := "*"
		if !o.Any {
			harmless = o.Scheme + "://h.example.com"
			if o.Suffix {
				harmless = o.Scheme + "://*.h.example.com"
			}
			if o.Port != "" {
				harmless += ":1"
			}
		}
		harmlessMethod := "PUT"
		if method == validation.AnyCORSName {
			harmlessMethod = method
		}
		want, err := Config(fuzzCORSGateway(harmless, harmlessMethod, "X-H"), opts)
		require.NoError(t, err, "a harmless gateway")
		assert.Equal(t, directives(t, want), directives(t, config), "%s", config)
	})
}

// fuzzCORSGateway is a route whose CORS has origin, method and header.
func fuzzCORSGateway(origin, method, header string) *v1.APIGateway {
	r := route("fuzz.example.com", "/api", v1.PathTypePrefix, "web", 80)
	r.CORS = &v1.CORS{AllowOrigins: []v1.CORSOrigin{v1.CORSOrigin(origin)}, AllowMethods: []v1.CORSMethod{v1.CORSMethod(method)},
		AllowHeaders: []v1.CORSHeaderName{v1.CORSHeaderName(header)}, ExposeHeaders: []v1.HTTPHeaderName{v1.HTTPHeaderName(header)}}
	return gateway("fuzz", r)
}
