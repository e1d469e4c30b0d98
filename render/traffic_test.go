package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// TestTrafficSettingsRenderOnlyWhenSet: a route whose traffic settings are
// unset, or set to nothing (empty lists, a drained backend only), renders
// byte for byte as the same route without them, so an upgrade rolls no
// gateway; each setting changes the configuration.
func TestTrafficSettingsRenderOnlyWhenSet(t *testing.T) {
	plain := route("api.example.com", "/api", v1.PathTypePrefix, "users", 8080)
	want, err := Config(gateway("gw", plain), Options{})
	require.NoError(t, err)
	empty := plain
	empty.Timeouts = &v1.RouteTimeouts{}
	empty.RequestHeaders, empty.ResponseHeaders = &v1.HeaderModifier{}, &v1.HeaderModifier{}
	empty.AdditionalBackends = []v1.WeightedBackend{{Name: "drained", Port: 8080}}
	got, err := Config(gateway("gw", empty), Options{})
	require.NoError(t, err)
	assert.Equal(t, want, got)

	full := everySetting(plain)
	settings := map[string]func(r *v1.Route){
		"additionalBackends": func(r *v1.Route) { r.AdditionalBackends = full.AdditionalBackends },
		"connectSeconds":     func(r *v1.Route) { r.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](1)} },
		"readSeconds":        func(r *v1.Route) { r.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](1)} },
		"rewritePrefix":      func(r *v1.Route) { r.RewritePrefix = "/" },
		"request set":        func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Set: full.RequestHeaders.Set} },
		"request add":        func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Add: full.RequestHeaders.Add} },
		"request remove":     func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Remove: full.RequestHeaders.Remove} },
		"response set":       func(r *v1.Route) { r.ResponseHeaders = &v1.HeaderModifier{Set: full.ResponseHeaders.Set} },
		"response add":       func(r *v1.Route) { r.ResponseHeaders = &v1.HeaderModifier{Add: full.ResponseHeaders.Add} },
		"response remove":    func(r *v1.Route) { r.ResponseHeaders = &v1.HeaderModifier{Remove: full.ResponseHeaders.Remove} },
		"maxBodySize":        func(r *v1.Route) { r.MaxBodySize = "1k" },
		"rateLimit":          func(r *v1.Route) { r.RateLimit = &v1.RateLimit{RequestsPerSecond: 1} },
	}
	for name, set := range settings {
		t.Run(name, func(t *testing.T) {
			r := plain
			set(&r)
			got, err := Config(gateway("gw", r), Options{})
			require.NoError(t, err)
			assert.NotEqual(t, want, got)
		})
	}
}

// TestRenderTraffic checks the directives each setting renders to, in the
// route's locations and at http level.
func TestRenderTraffic(t *testing.T) {
	config, err := Config(trafficGateway(), Options{})
	require.NoError(t, err)
	api, ok := validation.RouteMatch(&trafficGateway().Spec.Routes[0])
	require.True(t, ok)
	id := routeID(api)
	apiLocation := section(t, config, `location "/api/" {`)
	for _, want := range []string{
		"proxy_connect_timeout 5s;", "proxy_read_timeout 30s;",
		`client_max_body_size "10m";`,
		"limit_req zone=route_" + id + " burst=50 nodelay;", "limit_req_status 429;",
		// The server's lines, repeated before the route's own.
		"proxy_set_header Host $host;\n        proxy_set_header X-Real-IP $remote_addr;\n        proxy_set_header X-Forwarded-For $remote_addr;\n",
		`proxy_set_header X-Team "payments";`,
		"proxy_set_header X-Trace $request_header_" + id + "_0;",
		`proxy_set_header X-Debug "";`,
		"proxy_hide_header X-Frame-Options;\n        add_header X-Frame-Options \"DENY\" always;",
		`add_header Cache-Control "no-store" always;`,
		"proxy_hide_header X-Powered-By;",
		`rewrite "(?s)^\Q/api\E(/.*)" "$1" break;`,
		"proxy_pass http://$backend_" + id + ";",
	} {
		assert.Contains(t, apiLocation, want)
	}
	assert.NotContains(t, apiLocation, "set $backend", "a split route's backend is split_clients'")
	assert.Contains(t, section(t, config, `location = "/api" {`), `rewrite "^\Q/api\E$" "/" break;`)

	assert.Contains(t, config, "split_clients \"$request_id\" $backend_"+id+" {\n"+
		"    20% \"users-canary.shop.svc.cluster.local:8080\";\n"+
		"    * \"users.shop.svc.cluster.local:8080\";\n}\n", "80/20, the drained backend left out")
	assert.NotContains(t, config, "users-drained")
	assert.Contains(t, config, "limit_req_zone $binary_remote_addr zone=route_"+id+":1m rate=100r/s;")
	assert.Contains(t, config, "map $http_x_trace $request_header_"+id+"_0 {\n    \"\" \"gateway\";\n    default \"$http_x_trace, gateway\";\n}\n")

	status := section(t, config, `location = "/v1/status" {`)
	assert.Contains(t, status, "proxy_read_timeout 1s;")
	assert.NotContains(t, status, "proxy_connect_timeout")
	assert.Contains(t, status, `client_max_body_size "0";`)
	assert.Contains(t, status, "proxy_request_buffering off;", "an unlimited body is streamed, never buffered to the pod's disk")
	assert.Regexp(t, `limit_req zone=route_[0-9a-f]{16} nodelay;`, status, "burst 0 is not written: nginx refuses it")
	assert.NotContains(t, status, "proxy_set_header", "no request header changes: the server's lines are inherited")
	assert.Contains(t, status, `set $backend "status.shop.svc.cluster.local:9000";`)

	site := section(t, config, `location "/" {`)
	assert.Contains(t, site, "rewrite \"^/$\" \"/site\" break;\n        rewrite \"(?s)^(/.*)\" \"/site$1\" break;\n")
	assert.Regexp(t, `split_clients "\$request_id" \$backend_[0-9a-f]{16} \{\n    60% "web-blue.shop.svc.cluster.local:80";\n    \* "web-green.shop.svc.cluster.local:80";\n\}`, config,
		"backendService gets nothing when the others take 100%")
	assert.NotContains(t, config, `"web.shop.svc`)

	legacy := section(t, config, `location "/legacy/" {`)
	assert.Contains(t, legacy, `proxy_set_header X-Odd "a;} server { #x 'y'";`)
	assert.Contains(t, legacy, `rewrite "(?s)^\Q/legacy\E(/.*)" "/v2$1" break;`)
	assert.Contains(t, section(t, config, `location = "/legacy" {`), `rewrite "^\Q/legacy\E$" "/v2/" break;`)
	assert.Contains(t, section(t, config, `location "/plain/" {`),
		"location \"/plain/\" {\n        set $gateway_route \"Prefix www.example.com/plain\";\n        set $backend \"plain.shop.svc.cluster.local:8080\";\n        proxy_pass http://$backend;\n    }")
}

// section is the location block of s that starts with start, to its
// closing brace.
func section(t *testing.T, s, start string) string {
	t.Helper()
	// The location's own closing brace: a line of it alone, not an if's.
	const end = "\n    }"
	i := strings.Index(s, start)
	require.GreaterOrEqual(t, i, 0, "%q not found", start)
	j := strings.Index(s[i:], end)
	require.GreaterOrEqual(t, j, 0)
	return s[i : i+j+len(end)]
}

// TestRenderTrafficOfCollidingRoutes: of two routes with one match, the
// first in sorted order serves; the other's http-level blocks are left out,
// so no name is defined twice, and nginx loads the result.
func TestRenderTrafficOfCollidingRoutes(t *testing.T) {
	a := route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080)
	a.RateLimit = &v1.RateLimit{RequestsPerSecond: 1}
	a.AdditionalBackends = []v1.WeightedBackend{{Name: "canary", Port: 8080, Weight: 10}}
	b := a
	b.Path = "/users/"
	b.BackendService.Name = "users-v2"
	b.RateLimit = &v1.RateLimit{RequestsPerSecond: 2}
	// An Exact route takes the Prefix route's exact location, not its zone.
	c := route("api.example.com", "/users", v1.PathTypeExact, "exact", 8080)
	c.RateLimit = &v1.RateLimit{RequestsPerSecond: 3}
	config, err := Config(gateway("gw", a, b, c), Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(config, "split_clients"))
	assert.Equal(t, 2, strings.Count(config, "limit_req_zone"))
	assert.Contains(t, config, "rate=1r/s")
	assert.Contains(t, config, "rate=3r/s")
	assert.NotContains(t, config, "rate=2r/s")
	out, err := nginxTest(t, nginxBinary(t), config)
	require.NoError(t, err, "nginx -t:\n%s\n%s", out, config)
}

// TestGatewayHeadersAreReserved: the headers the gateway sets itself, which
// a route that changes headers repeats, are refused in every header list,
// so no route can set them twice or drop them.
func TestGatewayHeadersAreReserved(t *testing.T) {
	for _, h := range gatewayHeaders {
		for _, lower := range []bool{false, true} {
			name := h.name
			if lower {
				name = strings.ToLower(name)
			}
			r := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
			r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: v1.HTTPHeaderName(name), Value: "x"}}}
			_, err := Config(gateway("gw", r), Options{})
			require.ErrorContains(t, err, "spec.routes[0].requestHeaders.set[0].name", name)
		}
	}
}

// TestNginxArgumentRefusesWhatItWouldEscape calls the renderer's own
// checks directly, as if validation had been bypassed: every string that
// could end a quoted argument, start a variable, escape, or not fit nginx's
// buffer is refused, and nothing is ever escaped.
func TestNginxArgumentRefusesWhatItWouldEscape(t *testing.T) {
	hostile := map[string]string{
		"double quote":           `a"; return 200 "x`,
		"backslash":              `a\"`,
		"variable":               "$host",
		"envsubst variable":      "${NGINX_LOCAL_RESOLVERS}",
		"newline":                "a\nadd_header X y;",
		"carriage return":        "a\rb",
		"tab":                    "a\tb",
		"NUL":                    "a\x00b",
		"DEL":                    "a\x7fb",
		"non-ASCII":              "caf\u00e9",
		"raw high byte":          "a\xc0\xae",
		"too long for nginx":     strings.Repeat("a", maxNginxArgument+1),
		"8 KiB":                  strings.Repeat("a", 8<<10),
		"8 KiB of braces":        strings.Repeat("}", 8<<10),
		"quote after 4000 bytes": strings.Repeat("a", 3990) + `"`,
	}
	for name, s := range hostile {
		t.Run(name, func(t *testing.T) {
			got, err := nginxArgument(s)
			require.Error(t, err)
			assert.Empty(t, got)
		})
	}
	// Text inside double quotes: nginx reads these as the characters they
	// are (TestDataPlaneTrafficHeaders sends them through nginx).
	for _, s := range []string{"", "a;b", "}", "{", "#x", "a b", "'", "!#%&()*+,-./:;<=>?@[]^_`{|}~", strings.Repeat("a", maxNginxArgument)} {
		got, err := nginxArgument(s)
		require.NoError(t, err, "%q", s)
		assert.Equal(t, `"`+s+`"`, got)
	}
	for _, n := range []string{"", "X Team", "X;Team", "X{", "X$", "X\"", "X\\", "X\n", "X_Team", "X.Team", "X:", "caf\u00e9", strings.Repeat("a", maxNginxArgument+1)} {
		got, err := headerName(n, field.NewPath("name"))
		require.NotNil(t, err, "%q", n)
		assert.Empty(t, got)
	}
	for _, p := range []string{"", "v2", "/v2?x=1", "/$1", "/a b", `/a"`, `/a\`, "/a;", "/a{", "/%2F", "/a\n", "/caf\u00e9", "/a#"} {
		assert.False(t, isPath(p), "%q", p)
	}
	assert.True(t, isPath("/v2/a-b._~!&()*+,=:@"))
}

// TestRenderConfigRefusesHostileTrafficSettings: every traffic field a
// tenant writes, set to a hostile string, is refused by the renderer (the
// rule is package validation's, which the renderer calls before it writes
// anything), with the field named, and nothing is rendered.
func TestRenderConfigRefusesHostileTrafficSettings(t *testing.T) {
	header := func(value string) []v1.HTTPHeader {
		return []v1.HTTPHeader{{Name: "X-Team", Value: v1.HTTPHeaderValue(value)}}
	}
	hostileValues := map[string]string{
		"quote": `a"; return 200 "x`, "variable": "$host",
		"envsubst": "${NGINX_LOCAL_RESOLVERS}", "newline": "a\nadd_header X y", "backslash": `a\`, "non-ASCII": "caf\u00e9",
		"8 KiB": strings.Repeat("a", 8<<10),
	}
	type tc struct {
		set     func(r *v1.Route)
		wantErr string
	}
	tests := map[string]tc{}
	for name, v := range hostileValues {
		tests["request set, "+name] = tc{func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Set: header(v)} }, "spec.routes[0].requestHeaders.set[0].value"}
		tests["request add, "+name] = tc{func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Add: header(v)} }, "spec.routes[0].requestHeaders.add[0].value"}
		tests["response set, "+name] = tc{func(r *v1.Route) { r.ResponseHeaders = &v1.HeaderModifier{Set: header(v)} }, "spec.routes[0].responseHeaders.set[0].value"}
		tests["response add, "+name] = tc{func(r *v1.Route) { r.ResponseHeaders = &v1.HeaderModifier{Add: header(v)} }, "spec.routes[0].responseHeaders.add[0].value"}
		tests["rewritePrefix, "+name] = tc{func(r *v1.Route) { r.RewritePrefix = v1.HTTPPath("/" + v) }, "spec.routes[0].rewritePrefix"}
		tests["maxBodySize, "+name] = tc{func(r *v1.Route) { r.MaxBodySize = "1m" + v }, "spec.routes[0].maxBodySize"}
	}
	for name, n := range map[string]string{"space": "X Team", "semicolon": "X;", "brace": "X{", "variable": "X$a", "newline": "X\nY", "non-ASCII": "X-caf\u00e9", "8 KiB": strings.Repeat("X", 8<<10)} {
		tests["request header name, "+name] = tc{func(r *v1.Route) {
			r.RequestHeaders = &v1.HeaderModifier{Remove: []v1.HTTPHeaderName{v1.HTTPHeaderName(n)}}
		}, "spec.routes[0].requestHeaders.remove[0]"}
		tests["response header name, "+name] = tc{func(r *v1.Route) {
			r.ResponseHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: v1.HTTPHeaderName(n), Value: "x"}}}
		}, "spec.routes[0].responseHeaders.set[0].name"}
	}
	tests["weighted backend breaking out"] = tc{func(r *v1.Route) {
		r.AdditionalBackends = []v1.WeightedBackend{{Name: `x";} server {#`, Port: 80, Weight: 10}}
	}, "spec.routes[0].additionalBackends[0].name"}
	tests["weights over 100"] = tc{func(r *v1.Route) {
		r.AdditionalBackends = []v1.WeightedBackend{{Name: "a", Port: 80, Weight: 60}, {Name: "b", Port: 80, Weight: 50}}
	}, "spec.routes[0].additionalBackends"}
	tests["negative weight"] = tc{func(r *v1.Route) { r.AdditionalBackends = []v1.WeightedBackend{{Name: "a", Port: 80, Weight: -10}} }, "spec.routes[0].additionalBackends[0].weight"}
	tests["zero timeout"] = tc{func(r *v1.Route) { r.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](0)} }, "spec.routes[0].timeouts.readSeconds"}
	tests["zero rate"] = tc{func(r *v1.Route) { r.RateLimit = &v1.RateLimit{} }, "spec.routes[0].rateLimit.requestsPerSecond"}
	tests["negative burst"] = tc{func(r *v1.Route) { r.RateLimit = &v1.RateLimit{RequestsPerSecond: 1, Burst: -1} }, "spec.routes[0].rateLimit.burst"}
	tests["rewritePrefix with a query"] = tc{func(r *v1.Route) { r.RewritePrefix = "/v2?admin=1" }, "spec.routes[0].rewritePrefix"}
	tests["rewritePrefix with a capture"] = tc{func(r *v1.Route) { r.RewritePrefix = "/$1" }, "spec.routes[0].rewritePrefix"}
	tests["rewritePrefix on an Exact route"] = tc{func(r *v1.Route) { r.PathType, r.RewritePrefix = v1.PathTypeExact, "/" }, "spec.routes[0].rewritePrefix"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := route("a.example.com", "/api", v1.PathTypePrefix, "web", 80)
			tc.set(&r)
			config, err := Config(gateway("evil", r), Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Empty(t, config)
		})
	}
}

// TestRenderConfigQuotesHarmlessText: ';', braces and '#' are allowed in a
// header value, and inside a quoted argument nginx reads them as text: the
// value stays one argument of one directive, and nginx loads the file.
// (TestDataPlaneTrafficHeaders shows the backend receives it as written.)
func TestRenderConfigQuotesHarmlessText(t *testing.T) {
	value := "; } server { listen 80; } # {"
	r := route("a.example.com", "/api", v1.PathTypePrefix, "web", 80)
	r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-A", Value: v1.HTTPHeaderValue(value)}}, Add: []v1.HTTPHeader{{Name: "X-B", Value: v1.HTTPHeaderValue(value)}}}
	r.ResponseHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-C", Value: v1.HTTPHeaderValue(value)}}}
	config, err := Config(gateway("odd", r), Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	assert.Contains(t, config, `proxy_set_header X-A "`+value+`";`)
	assert.Contains(t, config, `add_header X-C "`+value+`" always;`)
	assert.Contains(t, config, `default "$http_x_b, `+value+`";`)
	out, err := nginxTest(t, nginxBinary(t), config)
	require.NoError(t, err, "nginx -t:\n%s\n%s", out, config)
}

// TestBuildTrafficRefusesWhatValidationWouldHave: buildTraffic, given a
// route that never met validation, still refuses every hostile string it
// would write, at the string's field.
func TestBuildTrafficRefusesWhatValidationWouldHave(t *testing.T) {
	r := route("a.example.com", "/api", v1.PathTypePrefix, "web", 80)
	r.RequestHeaders = &v1.HeaderModifier{
		Set:    []v1.HTTPHeader{{Name: "X-A", Value: "a\"; return 200; #"}},
		Add:    []v1.HTTPHeader{{Name: "X-B", Value: "${HOME}"}},
		Remove: []v1.HTTPHeaderName{"X C"},
	}
	r.ResponseHeaders = &v1.HeaderModifier{
		Set:    []v1.HTTPHeader{{Name: "X-D", Value: v1.HTTPHeaderValue(strings.Repeat("a", 8<<10))}},
		Add:    []v1.HTTPHeader{{Name: "X-E{", Value: "x"}},
		Remove: []v1.HTTPHeaderName{"X-F\n"},
	}
	r.MaxBodySize = `1m"; include /etc/passwd; #`
	r.RewritePrefix = "/v2 break; return 200"
	backend := func(n v1.ServiceName, p int32) string { return fmt.Sprintf("%s:%d", n, p) }
	_, errs := buildTraffic(&r, backend, field.NewPath("spec", "routes").Index(0))
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	assert.ElementsMatch(t, []string{
		"spec.routes[0].requestHeaders.set[0].value", "spec.routes[0].requestHeaders.add[0].value", "spec.routes[0].requestHeaders.remove[0]",
		"spec.routes[0].responseHeaders.set[0].value", "spec.routes[0].responseHeaders.add[0].name", "spec.routes[0].responseHeaders.remove[0]",
		"spec.routes[0].maxBodySize", "spec.routes[0].rewritePrefix",
	}, fields)
	for _, e := range errs {
		assert.NotContains(t, e.Detail, "escape", "refused, not escaped")
	}
}

// maximalHeaders are 16 headers of maximal 1024-character values.
func maximalHeaders(prefix string) []v1.HTTPHeader {
	out := make([]v1.HTTPHeader, 16)
	for i := range out {
		out[i] = v1.HTTPHeader{Name: v1.HTTPHeaderName(fmt.Sprintf("X-%s-%02d", prefix, i)), Value: v1.HTTPHeaderValue(strings.Repeat("v", 1024))}
	}
	return out
}

// TestRenderedSizeBound: a gateway whose configuration passes
// MaxConfigBytes is refused, by admission's check and by the renderer,
// with the bound and the size named; an ordinary one passes both.
func TestRenderedSizeBound(t *testing.T) {
	huge := gateway("huge")
	for i := range 100 {
		r := everySetting(route(fmt.Sprintf("h%03d.example.com", i), "/api", v1.PathTypePrefix, "web", 8080))
		r.RequestHeaders = &v1.HeaderModifier{Set: maximalHeaders("set"), Add: maximalHeaders("add")}
		r.ResponseHeaders = &v1.HeaderModifier{Set: maximalHeaders("set"), Add: maximalHeaders("add")}
		huge.Spec.Routes = append(huge.Spec.Routes, r)
	}
	huge.Spec.Image, huge.Spec.Replicas = "nginx:1.29", ptr.To[int32](2)
	require.Empty(t, validation.Validate(nil, huge), "the huge gateway passes every other rule")
	tests := map[string]struct {
		gw      *v1.APIGateway
		refused bool
	}{
		"100 routes of maximal headers":            {gw: huge, refused: true},
		"100 routes with every setting":            {gw: benchTrafficGateway()},
		"the traffic golden":                       {gw: trafficGateway()},
		"an invalid gateway is left to validation": {gw: gateway("bad", route("Bad", "/", v1.PathTypePrefix, "web", 80))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := ValidateRenderedSize(tc.gw)
			config, err := Config(tc.gw, Options{})
			if !tc.refused {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, "spec.routes", errs[0].Field)
			assert.Equal(t, validation.RuleConfigSize, errs[0].Origin)
			assert.Contains(t, errs[0].Detail, fmt.Sprintf("over the bound of %d", MaxConfigBytes))
			size, _ := Resolve(tc.gw, sizeOptions).render()
			assert.Contains(t, errs[0].Detail, fmt.Sprintf("would be %d bytes", len(size)))
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err))
			assert.Contains(t, err.Error(), fmt.Sprintf("over the bound of %d", MaxConfigBytes))
			assert.Empty(t, config)
		})
	}
	assert.Less(t, MaxConfigBytes, 1<<20, "a ConfigMap holds at most 1 MiB")
}

// boundsGateway sets every traffic setting at each end of what admission
// admits: the longest names and values, of every character they may hold,
// the most entries, the largest and smallest numbers.
func boundsGateway() *v1.APIGateway {
	const valueChars = "!#%&'()*+,-./:;<=>?@[]^_`{|}~ azAZ09"
	value := strings.Repeat(valueChars, 1024/len(valueChars)+1)[:1023] + "x"
	many := func(prefix string) []v1.HTTPHeader {
		out := maximalHeaders(prefix)
		for i := range out {
			out[i].Name = v1.HTTPHeaderName(fmt.Sprintf("X-%s-%02d-", prefix, i) + strings.Repeat("a", 64-len(prefix)-6))
			out[i].Value = v1.HTTPHeaderValue(value)
		}
		return out
	}
	removed := func(prefix string) []v1.HTTPHeaderName {
		out := make([]v1.HTTPHeaderName, 16)
		for i := range out {
			out[i] = v1.HTTPHeaderName(fmt.Sprintf("X-%s-%02d", prefix, i))
		}
		return out
	}
	high := route("bounds.example.com", "/high/", v1.PathTypePrefix, "web", 65535)
	for i := range 7 {
		high.AdditionalBackends = append(high.AdditionalBackends, v1.WeightedBackend{
			Name: v1.ServiceName(fmt.Sprintf("b%d", i) + strings.Repeat("b", 61)), Port: 65535, Weight: []int32{100, 0, 0, 0, 0, 0, 0}[i],
		})
	}
	high.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](75), ReadSeconds: ptr.To[int32](3600)}
	high.RewritePrefix = v1.HTTPPath("/a-b._~!&()*+,=:@/" + strings.Repeat("p", 1024-19))
	high.RequestHeaders = &v1.HeaderModifier{Set: many("s"), Add: many("a"), Remove: removed("r")}
	high.ResponseHeaders = &v1.HeaderModifier{Set: many("s"), Add: many("a"), Remove: removed("r")}
	high.MaxBodySize = "9999g"
	high.RateLimit = &v1.RateLimit{RequestsPerSecond: 10000, Burst: 10000}

	low := route("bounds.example.com", "/low", v1.PathTypePrefix, "w", 1)
	low.AdditionalBackends = []v1.WeightedBackend{{Name: "c", Port: 1, Weight: 1}}
	low.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](1), ReadSeconds: ptr.To[int32](1)}
	low.RewritePrefix = "/"
	low.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "x", Value: ""}}, Add: []v1.HTTPHeader{{Name: "1", Value: "!"}}, Remove: []v1.HTTPHeaderName{"y"}}
	low.ResponseHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "x", Value: ""}}, Add: []v1.HTTPHeader{{Name: "1", Value: "~"}}}
	low.MaxBodySize = "1"
	low.RateLimit = &v1.RateLimit{RequestsPerSecond: 1}

	root := route("bounds.example.com", "/", v1.PathTypePrefix, "root", 80)
	root.RewritePrefix = v1.HTTPPath("/" + strings.Repeat("r", 1023))
	root.MaxBodySize = "9999"
	sizes := route("bounds.example.com", "/k", v1.PathTypeExact, "k", 80)
	sizes.MaxBodySize = "9999k"
	gw := gateway("bounds", high, low, root, sizes)
	gw.Spec.Image, gw.Spec.Replicas = "nginx:1.29", ptr.To[int32](2)
	return gw
}

// TestRenderTrafficAtItsBounds: a gateway whose every traffic setting is
// at a bound admission admits renders, and nginx loads it: no admitted
// value is one nginx refuses (a size it cannot parse, a token longer than
// its buffer, a rate or burst it rejects).
func TestRenderTrafficAtItsBounds(t *testing.T) {
	gw := boundsGateway()
	require.Empty(t, validation.Validate(nil, gw), "every value is admitted")
	config, err := Config(gw, Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	for _, want := range []string{
		`client_max_body_size "9999g";`, `client_max_body_size "1";`, `client_max_body_size "9999k";`, `client_max_body_size "9999";`,
		"proxy_connect_timeout 75s;", "proxy_read_timeout 3600s;", "proxy_connect_timeout 1s;", "proxy_read_timeout 1s;",
		"rate=10000r/s;", " burst=10000 nodelay;", "rate=1r/s;", "\n    * \"b0",
		`proxy_set_header x "";`, `proxy_set_header 1 $request_header_`, `add_header 1 "~" always;`,
		fmt.Sprintf("proxy_headers_hash_bucket_size %d;", proxyHeadersHashBucketSize),
	} {
		assert.Contains(t, config, want)
	}
	out, err := nginxTest(t, nginxBinary(t), config)
	require.NoError(t, err, "nginx -t:\n%s", out)
	assert.NotContains(t, out, "[warn]", "nginx builds every hash without searching past its maximum")
}

// FuzzRenderTrafficStrings: whatever strings a tenant writes into a
// route's traffic settings, the renderer refuses the gateway or writes
// the same directives and blocks as for harmless strings in their place,
// so no string adds, ends or opens a directive or a block. Its seeds (all
// that `go test` runs) are the hostile strings in every field.
func FuzzRenderTrafficStrings(f *testing.F) {
	for _, s := range hostileStrings() {
		f.Add(s, s, s, s, s)
		f.Add("X-A", s, "/v2", "1m", "canary")
		f.Add("X-A"+s, "v", "/v2"+s, "1m"+s, "canary"+s)
	}
	f.Add("X-A", `a;} server { #x 'y' ) ( {`, "/v2/a-b._~!&()*+,=:@", "9999g", "c")
	f.Add("X-A", "", "/", "0", "c")
	f.Fuzz(func(t *testing.T, name, value, rewrite, size, backend string) {
		config, err := Config(fuzzGateway(name, value, rewrite, size, backend), Options{Resolvers: []string{"127.0.0.1"}})
		if err != nil {
			require.Empty(t, config)
			return
		}
		harmless := func(s, h string) string {
			if s == "" {
				return ""
			}
			return h
		}
		// A size past MaxBufferedBody adds proxy_request_buffering.
		harmlessSize := "1k"
		if n, ok := sizeBytes(size); ok && (n == 0 || n > MaxBufferedBody) {
			harmlessSize = "0"
		}
		want, err := Config(fuzzGateway(harmless(name, "X-H"), harmless(value, "h"), harmless(rewrite, "/h"), harmless(size, harmlessSize), harmless(backend, "h")),
			Options{Resolvers: []string{"127.0.0.1"}})
		require.NoError(t, err, "a harmless gateway")
		assert.Equal(t, directives(t, want), directives(t, config), "%s", config)
	})
}

// fuzzGateway is one route with each string in every field that holds it.
func fuzzGateway(name, value, rewrite, size, backend string) *v1.APIGateway {
	r := route("fuzz.example.com", "/api", v1.PathTypePrefix, "web", 80)
	r.AdditionalBackends = []v1.WeightedBackend{{Name: v1.ServiceName(backend), Port: 80, Weight: 10}}
	r.RewritePrefix = v1.HTTPPath(rewrite)
	r.MaxBodySize = size
	h := []v1.HTTPHeader{{Name: v1.HTTPHeaderName(name), Value: v1.HTTPHeaderValue(value)}}
	r.RequestHeaders = &v1.HeaderModifier{Add: h}
	r.ResponseHeaders = &v1.HeaderModifier{Set: h}
	other := route("fuzz.example.com", "/other", v1.PathTypeExact, "other", 80)
	other.RequestHeaders = &v1.HeaderModifier{Set: h, Remove: []v1.HTTPHeaderName{v1.HTTPHeaderName(name + "-R")}}
	other.ResponseHeaders = &v1.HeaderModifier{Add: h, Remove: []v1.HTTPHeaderName{v1.HTTPHeaderName(name + "-R")}}
	return gateway("fuzz", r, other)
}

// directives are config's directives as nginx's parser reads them: each
// one's block depth, name and number of arguments, and how it ends (';'
// or '{'). Quoted arguments may hold anything but their quote (escaped
// with '\'); '#' at a token's start comments out the rest of the line.
func directives(t *testing.T, config string) []string {
	t.Helper()
	var out, args []string
	depth := 0
	for i := 0; i < len(config); {
		switch c := config[i]; {
		case strings.IndexByte(" \t\r\n", c) >= 0:
			i++
		case c == '#':
			for i < len(config) && config[i] != '\n' {
				i++
			}
		case c == ';' || c == '{':
			require.NotEmpty(t, args, "%q without a directive at byte %d", c, i)
			out = append(out, fmt.Sprintf("%d %s %d%c", depth, args[0], len(args), c))
			if c == '{' {
				depth++
			}
			args, i = nil, i+1
		case c == '}':
			require.Empty(t, args, "a directive without ';' before byte %d", i)
			depth--
			require.GreaterOrEqual(t, depth, 0, "'}' closes no block at byte %d", i)
			out = append(out, fmt.Sprintf("%d }", depth))
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for ; j < len(config) && config[j] != c; j++ {
				if config[j] == '\\' {
					j++
				}
			}
			require.Less(t, j, len(config), "a quote opened at byte %d never ends", i)
			args, i = append(args, "quoted"), j+1
		default:
			j := i
			for j < len(config) && strings.IndexByte(" \t\r\n;{}\"'", config[j]) < 0 {
				j++
			}
			args, i = append(args, config[i:j]), j
		}
	}
	require.Zero(t, depth, "a block never ends")
	require.Empty(t, args, "a directive never ends")
	return out
}

// TestBodyBuffering: a route whose maxBodySize allows more than the gateway
// buffers to disk (or any size) streams request bodies to its backend;
// one within it keeps nginx's buffering, which spares the backend slow
// uploads.
func TestBodyBuffering(t *testing.T) {
	tests := map[string]struct {
		size   string
		stream bool
	}{
		"unlimited":             {"0", true},
		"the default":           {"1m", false},
		"at the bound":          {"64m", false},
		"just past the bound":   {"65m", true},
		"in kilobytes, past it": {"9999k", false},
		"in gigabytes":          {"1g", true},
		"the largest admitted":  {"9999g", true},
		"in bytes":              {"1", false},
		"a thousand kilobytes":  {"1000k", false},
		"65537 kilobytes":       {"9999m", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			require.Empty(t, writeBodySize(&b, tc.size, field.NewPath("maxBodySize")))
			assert.Equal(t, tc.stream, strings.Contains(b.String(), "proxy_request_buffering off;"), b.String())
		})
	}
}
