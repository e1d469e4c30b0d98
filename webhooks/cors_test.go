package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestCORSThroughKubectl: a route's cors through the real API server and
// both webhooks, as a user applies it: admitted and stored as written, or
// refused with the field and the reason ('*' with credentials, '*' beside
// another origin or method or header, an origin with a path, a regular
// expression or a port past 65535, maxAge past its bound, responseHeaders
// that set an Access-Control-* header). "*" as the
// allowed headers is admitted with credentials: the gateway echoes the
// headers a preflight asks for.
func TestCORSThroughKubectl(t *testing.T) {
	startWebhooks(t, Options{DefaultImage: flagImage, DefaultReplicas: 1})
	ctx := t.Context()
	createNamespace(t, "cors", "")
	const route = "routes:\n- host: cors.example.com\n  backendService: {name: app, port: 8080}\n  cors:\n"
	ok := route + "    allowOrigins: [https://app.example.com, \"https://*.example.org:8443\"]\n" +
		"    allowMethods: [PUT]\n    allowHeaders: [\"*\"]\n    exposeHeaders: [X-Request-Id]\n    maxAge: 600\n    allowCredentials: true\n"
	res := kubectl(ctx, manifest("cors", "gw", ok), "apply", "-f", "-")
	require.NoError(t, res.Err, res.Stderr)
	got := get(t, "cors", "gw").Spec.Routes[0].CORS
	require.NotNil(t, got)
	assert.Equal(t, []v1.CORSOrigin{"https://app.example.com", "https://*.example.org:8443"}, got.AllowOrigins)
	assert.True(t, got.AllowCredentials)
	assert.Equal(t, []v1.CORSHeaderName{"*"}, got.AllowHeaders)

	tests := map[string]struct{ spec, want string }{
		"* with credentials": {
			spec: route + "    allowOrigins: [\"*\"]\n    allowCredentials: true\n",
			want: `spec.routes[0].cors.allowCredentials: Invalid value: allowCredentials lets the browser send cookies`,
		},
		"* beside another origin": {
			spec: route + "    allowOrigins: [\"*\", https://app.example.com]\n",
			want: `spec.routes[0].cors.allowOrigins: Invalid value: '*' allows every origin: list it alone`,
		},
		"an origin with a path": {
			spec: route + "    allowOrigins: [https://app.example.com/x]\n",
			want: `spec.routes[0].cors.allowOrigins[0]`,
		},
		"an origin as a regular expression": {
			spec: route + "    allowOrigins: [\"https://(.*).example.com\"]\n",
			want: `spec.routes[0].cors.allowOrigins[0]`,
		},
		"a port past 65535": {
			spec: route + "    allowOrigins: [\"https://app.example.com:70000\"]\n",
			want: `spec.routes[0].cors.allowOrigins[0]: Invalid value: "https://app.example.com:70000": the port is from 1 to 65535`,
		},
		"* beside another method": {
			spec: route + "    allowOrigins: [https://app.example.com]\n    allowMethods: [PUT, \"*\"]\n",
			want: `spec.routes[0].cors.allowMethods: Invalid value: '*' allows every method: list it alone`,
		},
		"* beside another header": {
			spec: route + "    allowOrigins: [https://app.example.com]\n    allowHeaders: [\"*\", X-Team]\n",
			want: `spec.routes[0].cors.allowHeaders: Invalid value: '*' allows every header: list it alone`,
		},
		"a header name with a '*'": {
			spec: route + "    allowOrigins: [https://app.example.com]\n    allowHeaders: [\"X-*\"]\n",
			want: `spec.routes[0].cors.allowHeaders[0]`,
		},
		"responseHeaders setting an Access-Control-* header": {
			spec: route + "    allowOrigins: [https://app.example.com]\n  responseHeaders:\n    set: [{name: Access-Control-Allow-Origin, value: \"*\"}]\n",
			want: `spec.routes[0].responseHeaders: Invalid value: sets an Access-Control-* header, which the route's cors writes`,
		},
		"a maxAge of two days": {
			spec: route + "    allowOrigins: [https://app.example.com]\n    maxAge: 172800\n",
			want: `spec.routes[0].cors.maxAge: Invalid value: 172800: spec.routes[0].cors.maxAge in body should be less than or equal to 86400`,
		},
	}
	refusedThroughKubectl(t, "cors", tests)
}

// refusedThroughKubectl applies each spec as gateway "refused" of
// namespace ns and asserts kubectl's error names want (the field and
// the reason).
func refusedThroughKubectl(t *testing.T, ns string, tests map[string]struct{ spec, want string }) {
	t.Helper()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := kubectl(t.Context(), manifest(ns, "refused", tc.spec), "apply", "-f", "-")
			require.Error(t, res.Err)
			assert.Contains(t, res.Stderr, tc.want)
		})
	}
}
