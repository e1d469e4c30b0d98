package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// gatewayOn is a gateway with one route per host, each to the Service web.
func gatewayOn(hosts ...string) *v1.APIGateway {
	gw := &v1.APIGateway{}
	for _, h := range hosts {
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: v1.Hostname(h), BackendService: v1.BackendService{Name: "web"}})
	}
	return gw
}

func TestBackendServiceNames(t *testing.T) {
	split := gatewayOn("a.example.com", "b.example.com")
	split.Spec.Routes[1].AdditionalBackends = []v1.WeightedBackend{{Name: "canary"}, {Name: "web"}}
	authed := gatewayOn("a.example.com", "b.example.com")
	authed.Spec.Routes[0].ExternalAuth = &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/"}
	authed.Spec.Routes[1].ExternalAuth = &v1.ExternalAuth{Service: "web", Port: 80, Path: "/"}
	tests := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"one backend on two routes, once", gatewayOn("a.example.com", "b.example.com"), []string{"web"}},
		{"additional backends too", split, []string{"web", "canary"}},
		{"an authentication Service too", authed, []string{"web", "oauth2-proxy"}},
		{"no routes", &v1.APIGateway{}, nil},
		{"not a gateway", &corev1.Service{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, backendServiceNames(tt.obj))
		})
	}
}

// TestRetryServiceNames: the backends of the routes with retries, whose
// endpoints their configuration writes; not their authentication Service.
func TestRetryServiceNames(t *testing.T) {
	gw := gatewayOn("a.example.com", "b.example.com", "c.example.com")
	gw.Spec.Routes[0].Retries = &v1.RouteRetries{Attempts: 1}
	gw.Spec.Routes[0].AdditionalBackends = []v1.WeightedBackend{{Name: "canary"}}
	gw.Spec.Routes[0].Rules = []v1.RouteRule{{BackendService: v1.BackendService{Name: "v2"}}}
	gw.Spec.Routes[0].ExternalAuth = &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/"}
	gw.Spec.Routes[1].BackendService.Name = "plain"
	assert.Equal(t, []string{"web", "canary", "v2"}, retryServiceNames(gw))
	assert.Equal(t, []string{"web", "canary", "v2", "oauth2-proxy", "plain"}, backendServiceNames(gw))
	assert.Nil(t, retryServiceNames(gatewayOn("a.example.com")), "no route with retries")
}

func TestCoveringClaims(t *testing.T) {
	names := func(hosts ...string) []string {
		var out []string
		for _, h := range hosts {
			out = append(out, v1.HostClaimName(h))
		}
		return out
	}
	tests := []struct {
		name string
		objs []client.Object
		want []string
	}{
		{"a host and the hosts that cover it",
			[]client.Object{gatewayOn("login.shop.example.com")},
			names("login.shop.example.com", "shop.example.com", "*.shop.example.com", "example.com", "*.example.com")},
		{"a wildcard is covered by its base",
			[]client.Object{gatewayOn("*.shop.example.com")},
			names("*.shop.example.com", "shop.example.com", "example.com", "*.example.com")},
		{"the old object's hosts too, each record once",
			[]client.Object{gatewayOn("a.example.com"), gatewayOn("b.example.com", "a.example.com")},
			names("a.example.com", "example.com", "*.example.com", "b.example.com")},
		{"not a gateway", []client.Object{&corev1.Service{}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, coveringClaims(tt.objs...))
		})
	}
}
