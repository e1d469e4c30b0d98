package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestExternalAuthThroughKubectl: a route's externalAuth through the real
// API server and both webhooks, as a user applies it: admitted and stored
// as written, or refused with the field and the reason (the schema's CEL
// where it can say it, the validating webhook's Go rule otherwise; both
// are one rule, held together by validation's TestRuleCases).
func TestExternalAuthThroughKubectl(t *testing.T) {
	startWebhooks(t, Options{DefaultImage: flagImage, DefaultReplicas: 1})
	ctx := t.Context()
	createNamespace(t, "auth", "")
	const route = "routes:\n- host: auth.example.com\n  backendService: {name: app, port: 8080}\n"
	const auth = "  externalAuth:\n    service: oauth2-proxy\n    port: 4180\n    path: /oauth2/auth\n"
	ok := route + auth + "    forwardHeaders: [Cookie]\n    responseHeaders: [X-Auth-Request-User]\n" +
		"    signInURL: https://auth.example.com/oauth2/start\n    timeoutSeconds: 3\n"
	res := kubectl(ctx, manifest("auth", "gw", ok), "apply", "-f", "-")
	require.NoError(t, res.Err, res.Stderr)
	got := get(t, "auth", "gw").Spec.Routes[0].ExternalAuth
	require.NotNil(t, got)
	assert.Equal(t, v1.ServiceName("oauth2-proxy"), got.Service)
	assert.Equal(t, []v1.HTTPHeaderName{"X-Auth-Request-User"}, got.ResponseHeaders)
	assert.Equal(t, "https://auth.example.com/oauth2/start", got.SignInURL)

	tests := map[string]struct{ spec, want string }{
		"a hop-by-hop header forwarded": {
			spec: route + auth + "    forwardHeaders: [Connection]\n",
			want: `spec.routes[0].externalAuth.forwardHeaders[0]: Invalid value: "Connection": is a header the gateway sets itself or a hop-by-hop header`,
		},
		"Host as an identity header": {
			spec: route + auth + "    responseHeaders: [Host]\n",
			want: `spec.routes[0].externalAuth.responseHeaders[0]: Invalid value: "Host": is a header the gateway sets itself`,
		},
		"a sign-in URL over http": {
			spec: route + auth + "    signInURL: http://auth.example.com/start\n",
			want: `spec.routes[0].externalAuth.signInURL`,
		},
		"a sign-in URL with a variable": {
			spec: route + auth + "    signInURL: https://auth.example.com/$host\n",
			want: `spec.routes[0].externalAuth.signInURL`,
		},
		"another namespace's Service": {
			spec: route + "  externalAuth: {service: oauth2-proxy.infra, port: 4180, path: /oauth2/auth}\n",
			want: `spec.routes[0].externalAuth.service: Invalid value: "oauth2-proxy.infra": must be a DNS-1035 label`,
		},
		"an identity header requestHeaders add": {
			spec: route + auth + "    responseHeaders: [X-Auth-Request-User]\n  requestHeaders:\n    add: [{name: X-Auth-Request-User, value: admin}]\n",
			want: `spec.routes[0].externalAuth.responseHeaders: Invalid value: requestHeaders change a header the authentication Service's answer sets`,
		},
		"a timeout of a minute": {
			spec: route + auth + "    timeoutSeconds: 60\n",
			want: `spec.routes[0].externalAuth.timeoutSeconds: Invalid value: 60: spec.routes[0].externalAuth.timeoutSeconds in body should be less than or equal to 30`,
		},
	}
	refusedThroughKubectl(t, "auth", tests)
}
