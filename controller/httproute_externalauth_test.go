package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestHTTPRouteExternalAuth: with exposure type HTTPRoute, the paths of
// routes with externalAuth go to the gateway's own Service, whose nginx
// asks the authentication Service: the HTTPRoute never sends them to
// their backends past it, and has no filter of its own for them. A
// redirect that answers every request is the Gateway's to answer, as it
// is nginx's before any authentication (it reaches no backend).
func TestHTTPRouteExternalAuth(t *testing.T) {
	auth := &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}
	app := route("api.example.com", "/app/", v1.PathTypePrefix, "app", 80)
	app.ExternalAuth = auth
	exact := route("api.example.com", "/admin", v1.PathTypeExact, "admin", 80)
	exact.ExternalAuth = auth
	moved := route("api.example.com", "/moved/", v1.PathTypePrefix, "", 0)
	moved.Redirect = &v1.HTTPRedirect{Hostname: "new.example.com"}
	moved.ExternalAuth = auth
	gw := httpRouteGateway("authed", publicGateway, app, exact, moved)
	r := builtHTTPRoutes(t, gw)["api.example.com"]
	require.NotNil(t, r)
	proxied := map[string]bool{}
	for _, rule := range r.Spec.Rules {
		for _, m := range rule.Matches {
			key := fmt.Sprintf("%s %s", *m.Path.Type, *m.Path.Value)
			if len(rule.Filters) > 0 {
				assert.Equal(t, "PathPrefix /moved", key, "only the redirect has a filter")
				continue
			}
			require.Len(t, rule.BackendRefs, 1, key)
			ref := rule.BackendRefs[0].BackendObjectReference
			assert.Equal(t, gatewayv1.ObjectName(gw.Name), ref.Name, "%s goes to the gateway's nginx", key)
			assert.Nil(t, ref.Namespace, key)
			proxied[key] = true
		}
	}
	assert.Equal(t, map[string]bool{"PathPrefix /app": true, "Exact /admin": true}, proxied)
}
