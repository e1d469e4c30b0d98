package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

func TestRouteIndex(t *testing.T) {
	gw := validGateway()
	gw.Spec.IngressClassName = ptr.To("nginx")
	gw.Spec.Routes = append(gw.Spec.Routes,
		route("/%75sers", "s", 80), // the same as /users/ once normalised
		route("/users", "s", 80),   // made Exact below: another key
		route("/%zz", "s", 80),     // no key
	)
	gw.Spec.Routes[3].PathType = v1.PathTypeExact
	keys, err := indexRouteKeys(gw)
	require.NoError(t, err)
	want := func(r v1.Route) string { k, _ := validation.RouteKey(ptr.To("nginx"), &r); return k }
	assert.Equal(t, []string{
		want(route("/users", "", 0)), want(route("/products", "", 0)),
		want(v1.Route{Host: "api.example.com", Path: "/users", PathType: v1.PathTypeExact}),
	}, keys, "one value per distinct key, the gateway's namespace left out")

	keys, err = indexRouteKeys(&corev1.Service{})
	assert.NoError(t, err)
	assert.Nil(t, keys)
}
