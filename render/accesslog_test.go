package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// withAccessLog is gw asking for the JSON access log.
func withAccessLog(gw *v1.APIGateway) *v1.APIGateway {
	gw.Spec.AccessLog = &v1.AccessLog{Format: v1.AccessLogJSON}
	return gw
}

// TestRenderAccessLog checks the access log's lines: off at http level
// for every gateway (the images' own log included); with spec.accessLog,
// the format, a log in every server but the health one, and the route's
// name set in each of its locations (an Exact route's own, where it beats
// a Prefix route's exact location), none in the 404 fallback.
func TestRenderAccessLog(t *testing.T) {
	routes := []v1.Route{
		route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080),
		route("api.example.com", "/users", v1.PathTypeExact, "users-exact", 8080),
		route("*.example.com", "/caf%C3%A9", v1.PathTypePrefix, "cafe", 80),
	}
	tests := map[string]struct {
		gw      *v1.APIGateway
		want    []string       // lines, each as written
		wantN   map[string]int // lines, as written, and how many times
		notWant []string
	}{
		"unset": {
			gw:    gateway("gw", routes...),
			wantN: map[string]int{"access_log off;": 1, "    access_log off;": 1}, // http level, the health server
			// The metrics log's format and route names are there (TestMetricsLog).
			notWant: []string{"gateway_json", "gateway_request_path", "/dev/stdout"},
		},
		"JSON": {
			gw: withAccessLog(gateway("gw", routes...)),
			want: []string{
				`map $request_uri $gateway_request_path {`,
				`    "~^([^?]*)" $1;`,
				`log_format gateway_json escape=json`,
				`    '{"time":"$time_iso8601",'`,
				`    '"route":"$gateway_route",'`,
				`    '"path":"$gateway_request_path",'`,
				`    '"client":"$remote_addr",'`,
				`    '"request_id":"$http_x_request_id"}';`,
			},
			wantN: map[string]int{
				"access_log off;":     1,
				"    access_log off;": 1,
				// The default server and the two hosts' servers.
				"    access_log /dev/stdout gateway_json;": 3,
				// The Prefix route's path and below; the Exact route's
				// path; the wildcard route's two.
				`        set $gateway_route "Prefix api.example.com/users";`:             1,
				`        set $gateway_route "Exact api.example.com/users";`:              1,
				`        set $gateway_route "Prefix *.example.com/caf` + "\u00e9" + `";`: 2,
			},
			notWant: []string{"request_uri\"", "http_authorization", "http_cookie", "request_body", "http_referer", "$request\""},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			config, err := Config(tc.gw, Options{})
			require.NoError(t, err)
			lines := strings.Split(config, "\n")
			for _, w := range tc.want {
				assert.Contains(t, lines, w, config)
			}
			for w, n := range tc.wantN {
				assert.Equal(t, n, countLines(config, w), "lines %q in:\n%s", w, config)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, config, w)
			}
		})
	}
	t.Run("the route's name is set first in its location", func(t *testing.T) {
		r := route("api.example.com", "/api", v1.PathTypePrefix, "api", 80)
		r.RewritePrefix = "/"
		config, err := Config(withAccessLog(gateway("gw", everySetting(r))), Options{})
		require.NoError(t, err)
		for _, loc := range strings.Split(config, "\n    location ")[1:] {
			if !strings.Contains(loc, "proxy_pass") {
				assert.NotContains(t, loc, "gateway_route", "a location that serves no route (404, health)")
				continue
			}
			if strings.Contains(loc, "internal;") {
				// An external authentication's subrequest, which nginx
				// does not log.
				continue
			}
			first, _, _ := strings.Cut(strings.SplitN(loc, "\n", 2)[1], "\n")
			assert.Equal(t, `        set $gateway_route "Prefix api.example.com/api";`, first)
		}
	})
	t.Run("a gateway without the field renders as one with another format would not", func(t *testing.T) {
		// Only JSON turns the log on; the schema and admission refuse
		// any other value, and the renderer writes none.
		plain, err := Config(gateway("gw", routes...), Options{})
		require.NoError(t, err)
		other := gateway("gw", routes...)
		other.Spec.AccessLog = &v1.AccessLog{Format: "Text"}
		got, err := Config(other, Options{})
		require.NoError(t, err)
		assert.Equal(t, plain, got)
	})
}

// TestRouteNameRefusesWhatItWouldEscape: the route's name is written in a
// quoted "set"; a name holding what would end the quotes, start a
// variable or an escape, or a control character is refused, never
// escaped, even for a route that bypassed validation; the names of the
// paths admission admits (every mark of the whitelist, decoded UTF-8, a
// '%') are written as they are.
func TestRouteNameRefusesWhatItWouldEscape(t *testing.T) {
	for name, s := range hostileStrings() {
		bad := strings.ContainsAny(s, "\"\\$") || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(s) > maxNginxArgument
		t.Run(name, func(t *testing.T) {
			r := route("a.example.com", "/", v1.PathTypePrefix, "web", 80)
			r.Host = v1.Hostname(s) // the host is not decoded: it reaches the name as it is
			got, err := routeName(&r)
			if bad {
				require.Error(t, err, "wrote %s", got)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, `"Prefix `+s+`/"`, got)
		})
	}
	for path, want := range map[string]string{
		"/a-b.c_d~e!f&g(h)i*j+k,l=m:n@o/": "Prefix a.example.com/a-b.c_d~e!f&g(h)i*j+k,l=m:n@o",
		"/caf%C3%A9/%E2%80%8B":            "Prefix a.example.com/caf\u00e9/\u200b",
		"/100%25":                         "Prefix a.example.com/100%",
	} {
		r := route("a.example.com", path, v1.PathTypePrefix, "web", 80)
		got, err := routeName(&r)
		require.NoError(t, err, path)
		assert.Equal(t, `"`+want+`"`, got, path)
	}
	t.Run("a path with no normal form", func(t *testing.T) {
		r := route("a.example.com", "/a%22", v1.PathTypePrefix, "web", 80)
		_, err := routeName(&r)
		require.Error(t, err)
	})
	t.Run("hostile routes are refused with the log on as off", func(t *testing.T) {
		for name, s := range hostileStrings() {
			for _, r := range []v1.Route{
				route("a.example.com", "/"+s, v1.PathTypePrefix, "web", 80),
				route(s+".example.com", "/", v1.PathTypePrefix, "web", 80),
			} {
				if name == "non-ASCII" && r.Path != "/" {
					continue // a valid path once encoded, not as written: refused below
				}
				config, err := Config(withAccessLog(gateway("gw", r)), Options{})
				require.Error(t, err, "%s: rendered:\n%s", name, config)
			}
		}
	})
}

// TestAccessLogLoadsHostileNames: nginx -t accepts the access log of the
// largest gateway admission admits (100 routes of 253-character hosts,
// some wildcards) and of route names with every character admission lets
// through (the route sets' "access-log" is loaded by
// TestRenderedConfigPassesNginx), and the bound on the size stays above
// the size.
func TestAccessLogLoadsHostileNames(t *testing.T) {
	nginx := nginxBinary(t)
	gw := withAccessLog(gateway("maximal"))
	paths := []string{"/a-b.c_d~e!f&g(h)i*j+k,l=m:n@o/", "/caf%C3%A9/%E2%80%8B", "/100%25", "/%EE%80%80", "/"}
	for i := range 100 {
		pt := v1.PathTypePrefix
		if i%3 == 0 {
			pt = v1.PathTypeExact
		}
		gw.Spec.Routes = append(gw.Spec.Routes, route(maximalHost(i, i%10 == 0), paths[i%len(paths)], pt, "web", 8080))
	}
	config, err := Config(gw, Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	assert.Equal(t, 101, strings.Count(config, "access_log /dev/stdout gateway_json;"), "one log per host's server, and the default server's")
	out, err := nginxTest(t, nginx, config)
	require.NoError(t, err, "nginx -t refused the access log:\n%s", out)
	assert.Contains(t, out, "test is successful")
	checkBound(t, gw)
}
