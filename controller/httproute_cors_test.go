package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestHTTPRouteCORS: with exposure type HTTPRoute, the paths of routes
// with cors go to the gateway's own Service, whose nginx answers their
// preflights and adds their headers: the HTTPRoute has no CORS filter
// (the Gateway's would answer preflights before nginx's source ranges,
// and add a second Access-Control-Allow-Origin to nginx's). A redirect
// with cors is nginx's to answer too; one without stays the Gateway's.
func TestHTTPRouteCORS(t *testing.T) {
	cors := &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}}
	app := route("api.example.com", "/app/", v1.PathTypePrefix, "app", 80)
	app.CORS = cors
	moved := route("api.example.com", "/moved/", v1.PathTypePrefix, "", 0)
	moved.Redirect = &v1.HTTPRedirect{Hostname: "new.example.com"}
	moved.CORS = cors
	old := route("api.example.com", "/old/", v1.PathTypePrefix, "", 0)
	old.Redirect = &v1.HTTPRedirect{Hostname: "new.example.com"}
	gw := httpRouteGateway("cors", publicGateway, app, moved, old)
	filtered, proxied := httpRoutePaths(t, gw, "api.example.com")
	assert.Equal(t, map[string]gatewayv1.HTTPRouteFilterType{"PathPrefix /old": gatewayv1.HTTPRouteFilterRequestRedirect}, filtered,
		"only the redirect without cors has a filter")
	assert.Equal(t, map[string]bool{"PathPrefix /app": true, "PathPrefix /moved": true}, proxied)
}

// httpRoutePaths are the paths of gw's HTTPRoute for host: those whose
// rule has a filter (its type), and those proxied, each asserted to go
// to the gateway's own Service.
func httpRoutePaths(t *testing.T, gw *v1.APIGateway, host string) (filtered map[string]gatewayv1.HTTPRouteFilterType, proxied map[string]bool) {
	t.Helper()
	r := builtHTTPRoutes(t, gw)[host]
	require.NotNil(t, r)
	filtered, proxied = map[string]gatewayv1.HTTPRouteFilterType{}, map[string]bool{}
	for _, rule := range r.Spec.Rules {
		for _, m := range rule.Matches {
			key := fmt.Sprintf("%s %s", *m.Path.Type, *m.Path.Value)
			if len(rule.Filters) > 0 {
				filtered[key] = rule.Filters[0].Type
				continue
			}
			require.Len(t, rule.BackendRefs, 1, key)
			ref := rule.BackendRefs[0].BackendObjectReference
			assert.Equal(t, gatewayv1.ObjectName(gw.Name), ref.Name, "%s goes to the gateway's nginx", key)
			assert.Nil(t, ref.Namespace, key)
			proxied[key] = true
		}
	}
	return filtered, proxied
}
