package render

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/dataplane"
)

// TestDataPlaneRules: routes with rules through the real nginx, with real
// HTTP on loopback (dataplane.RuleRequests: each condition on both sides
// of its decision, and a request none takes on a route without
// backendService). The request reaches the backend as the client sent
// it: the hand-over to a rule's named location keeps method, URI and
// body.
func TestDataPlaneRules(t *testing.T) {
	nginx := startTrafficGateway(t, dataplane.RulesRoutes, nil, dataplane.RulesServices...)
	c := gatewayClient("127.0.0.1")
	for name, tc := range dataplane.RuleRequests() {
		t.Run(name, func(t *testing.T) {
			method := tc.Method
			if method == "" {
				method = http.MethodGet
			}
			body := ""
			if method == http.MethodPost {
				body = "payload"
			}
			resp, data := send(t, c, nginx.httpAddr, method, tc.Target, tc.Header, strings.NewReader(body))
			if tc.Service == "" {
				assert.Equal(t, http.StatusNotFound, resp.StatusCode, "body: %s", data)
				return
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s\n%s", data, nginx.logs())
			got := echoed(t, data)
			assert.Equal(t, tc.Service, got.Service)
			assert.Equal(t, method, got.Method)
			assert.Equal(t, tc.Target, got.RequestURI)
			assert.Equal(t, body, got.Body)
		})
	}
}

// TestDataPlaneRulesKeepBackendErrors: a backend's own 5xx, and nginx's
// 502 for a backend that is down, reach the client from the backend that
// took the request: no error is handed to a rule.
func TestDataPlaneRulesKeepBackendErrors(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		down := route("api.example.com", "/down/", v1.PathTypePrefix, "gone", 1)
		down.Rules = []v1.RouteRule{{
			Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchPresent}}}},
			BackendService: v1.BackendService{Name: "canary", Port: v1.PortNumber(ports["canary"])},
		}}
		return []v1.Route{down}
	}, nil, "canary")
	c := gatewayClient("127.0.0.1")
	resp, data := send(t, c, nginx.httpAddr, http.MethodGet, "/down/1", nil, strings.NewReader(""))
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode, "body: %s", data)
	resp, data = send(t, c, nginx.httpAddr, http.MethodGet, "/down/1", http.Header{"X-Canary": {"1"}}, strings.NewReader(""))
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", data)
	assert.Equal(t, "canary", echoed(t, data).Service)
}
