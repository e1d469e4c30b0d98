package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
	filtered, proxied := httpRoutePaths(t, gw, "api.example.com")
	assert.Equal(t, map[string]gatewayv1.HTTPRouteFilterType{"PathPrefix /moved": gatewayv1.HTTPRouteFilterRequestRedirect}, filtered,
		"only the redirect has a filter")
	assert.Equal(t, map[string]bool{"PathPrefix /app": true, "Exact /admin": true}, proxied)
}
