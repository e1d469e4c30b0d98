package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestHTTPRouteRetries: with exposure type HTTPRoute, the paths of a
// route with retries go to the gateway's own Service, whose nginx sends
// a failed request to another of the backend's endpoints: the HTTPRoute
// has no Retry (the Gateway's would send a request nginx failed after
// its own retries to nginx again, multiplying the tries), like a route
// without.
func TestHTTPRouteRetries(t *testing.T) {
	retried := route("api.example.com", "/orders/", v1.PathTypePrefix, "orders", 80)
	retried.Retries = &v1.RouteRetries{Attempts: 3, On: []v1.RetryCondition{v1.RetryOnConnectError, v1.RetryOnHTTP503}, NonIdempotent: true}
	plain := route("api.example.com", "/plain/", v1.PathTypePrefix, "plain", 80)
	gw := httpRouteGateway("retries", publicGateway, retried, plain)
	filtered, proxied := httpRoutePaths(t, gw, "api.example.com")
	assert.Empty(t, filtered)
	assert.Equal(t, map[string]bool{"PathPrefix /orders": true, "PathPrefix /plain": true}, proxied)
	for _, rule := range builtHTTPRoutes(t, gw)["api.example.com"].Spec.Rules {
		assert.Nil(t, rule.Retry, "nginx retries, not the Gateway")
		assert.Nil(t, rule.SessionPersistence)
	}
}
