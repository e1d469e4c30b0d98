package routeindex

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// TestIndexFuncSkipsObjectsBeyondTheSchemaLimits: 2,000 parent Gateways
// (v1 allows 32), restored from a hand-made conversion annotation before
// conversion refused such data, made 200,000 keys for one gateway of 100
// routes; such an object gets none.
func TestIndexFuncSkipsObjectsBeyondTheSchemaLimits(t *testing.T) {
	gw := gateway("default", "smuggled", nil)
	for i := range 100 {
		gw.Spec.Routes = append(gw.Spec.Routes, route(fmt.Sprintf("/r%d/", i)))
	}
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{}}
	for i := range 32 {
		gw.Spec.Exposure.HTTPRoute.ParentRefs = append(gw.Spec.Exposure.HTTPRoute.ParentRefs, v1.ParentGatewayReference{Name: fmt.Sprintf("g%d", i)})
	}
	keys, err := IndexFunc(gw)
	require.NoError(t, err)
	assert.Len(t, keys, 100*32, "the largest gateway the schema admits")

	for i := 32; i < 2000; i++ {
		gw.Spec.Exposure.HTTPRoute.ParentRefs = append(gw.Spec.Exposure.HTTPRoute.ParentRefs, v1.ParentGatewayReference{Name: fmt.Sprintf("g%d", i)})
	}
	keys, err = IndexFunc(gw)
	require.NoError(t, err)
	assert.Empty(t, keys)

	gw.Spec.Exposure.HTTPRoute.ParentRefs = []v1.ParentGatewayReference{{Name: strings.Repeat("g", 254)}}
	keys, err = IndexFunc(gw)
	require.NoError(t, err)
	assert.Empty(t, keys, "a parent name longer than the schema allows")
}

// TestOverlappingFindsWhatAScanFinds: for every host, Overlapping finds
// the gateways a scan of all of them finds (validation.Overlap), among
// gateways on single labels, wildcards, and names several labels below
// others.
func TestOverlappingFindsWhatAScanFinds(t *testing.T) {
	hosts := []string{"localhost", "com", "example.com", "*.example.com", "shop.example.com", "*.shop.example.com",
		"login.shop.example.com", "a.b.shop.example.com", "*.b.shop.example.com", "other.example.org", "*.example.org"}
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, Indexers())
	var all []*v1.APIGateway
	for i, h := range hosts {
		gw := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("g%d", i)},
			Spec: v1.APIGatewaySpec{Routes: []v1.Route{{Host: v1.Hostname(h), Path: "/", PathType: v1.PathTypePrefix}}}}
		if i%3 == 0 { // a second host
			gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: v1.Hostname(hosts[(i+5)%len(hosts)]), Path: "/", PathType: v1.PathTypePrefix})
		}
		require.NoError(t, indexer.Add(gw))
		all = append(all, gw)
	}
	finder := NewFinder(indexer)
	for _, h := range hosts {
		var want []string
		for _, gw := range all {
			if slices.ContainsFunc(gw.Spec.Routes, func(r v1.Route) bool { return validation.Overlap(h, string(r.Host)) }) {
				want = append(want, gw.Name)
			}
		}
		gws, err := finder.Overlapping(h)
		require.NoError(t, err)
		var got []string
		for _, gw := range gws {
			got = append(got, gw.Name)
		}
		assert.ElementsMatch(t, want, got, "host %s", h)
	}
}

// TestMirrorAnswersOnceSynced: a Finder over a mirror (namespaced mode)
// does not answer from a mirror its informers' first lists have not
// filled: the reads with a context wait for it, and give up with it;
// Overlapping refuses. Once synced, it finds what the mirror holds.
func TestMirrorAnswersOnceSynced(t *testing.T) {
	gw := gateway("team-a", "shop", nil, route("/users"))
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, Indexers())
	synced := make(chan struct{})
	f := indexFinder{indexer: indexer, counts: countNamespaces(indexer), synced: synced}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.OnHost(ctx, "team-a", "api.example.com")
	require.ErrorIs(t, err, errNotSynced)
	require.ErrorIs(t, err, context.Canceled)
	_, err = f.Overlapping("api.example.com")
	require.ErrorIs(t, err, errNotSynced)

	require.NoError(t, indexer.Add(gw))
	close(synced)
	gws, err := f.OnHost(context.Background(), "team-a", "api.example.com")
	require.NoError(t, err)
	assert.Equal(t, []*v1.APIGateway{gw}, gws)
	gws, err = f.Overlapping("api.example.com")
	require.NoError(t, err)
	assert.Equal(t, []*v1.APIGateway{gw}, gws)
}
