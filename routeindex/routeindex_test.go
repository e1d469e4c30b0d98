package routeindex

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// route is a Prefix route on api.example.com.
func route(path string) v1.Route {
	return v1.Route{Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "s", Port: 80}}
}

func gateway(ns, name string, class *string, routes ...v1.Route) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.APIGatewaySpec{IngressClassName: class, Routes: routes},
	}
}

func TestIndexFunc(t *testing.T) {
	gw := gateway("default", "gw", ptr.To("nginx"),
		route("/users/"), route("/products/"),
		route("/%75sers"), // the same as /users/ once normalised
		route("/users"),   // made Exact below: another key
		route("/%zz"),     // no key
	)
	gw.Spec.Routes[3].PathType = v1.PathTypeExact
	keys, err := IndexFunc(gw)
	require.NoError(t, err)
	want := func(r v1.Route) string { k, _ := validation.RouteKey(validation.RouteScopes(gw)[0], &r); return k }
	exact := route("/users")
	exact.PathType = v1.PathTypeExact
	assert.Equal(t, []string{want(route("/users")), want(route("/products/")), want(exact)}, keys,
		"one value per distinct key, the gateway's namespace left out")

	keys, err = IndexFunc(&corev1.Service{})
	assert.NoError(t, err)
	assert.Nil(t, keys)
}

// TestFinder: the gateways of every namespace holding a key, and only
// those of its ingress class.
func TestFinder(t *testing.T) {
	a := gateway("team-a", "shop", nil, route("/users"), route("/cart"))
	b := gateway("team-b", "shop", nil, route("/users/"))
	internal := gateway("team-c", "internal", ptr.To("internal"), route("/users"))
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{Name: IndexFunc})
	for _, gw := range []*v1.APIGateway{a, b, internal} {
		require.NoError(t, indexer.Add(gw))
	}
	finder := NewFinder(indexer)
	names := func(path string) []string {
		r := route(path)
		key, ok := validation.RouteKey(validation.RouteScopes(a)[0], &r)
		require.True(t, ok)
		gws, err := finder.Serving(context.Background(), key)
		require.NoError(t, err)
		var out []string
		for _, gw := range gws {
			out = append(out, gw.Namespace+"/"+gw.Name)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"team-a/shop", "team-b/shop"}, names("/users"))
	assert.Equal(t, []string{"team-a/shop"}, names("/cart"))
	assert.Empty(t, names("/orders"))
}
