package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// RouteKey tells routes apart exactly as the Ingress controller does: by
// ingress class, host, pathType and normalised path.
func TestRouteKey(t *testing.T) {
	type classRoute struct {
		class          *string
		host, path, pt string
	}
	prefix := func(path string) classRoute { return classRoute{host: "api.example.com", path: path, pt: "Prefix"} }
	exact := func(path string) classRoute { return classRoute{host: "api.example.com", path: path, pt: "Exact"} }
	inClass := func(class string, r classRoute) classRoute { r.class = ptr.To(class); return r }
	tests := map[string]struct {
		a, b classRoute
		same bool
	}{
		"identical":                            {a: prefix("/users/"), b: prefix("/users/"), same: true},
		"Prefix without its trailing slash":    {a: prefix("/users/"), b: prefix("/users"), same: true},
		"percent-encoded letter":               {a: prefix("/users"), b: prefix("/%75sers"), same: true},
		"percent-encoded trailing slash":       {a: prefix("/users"), b: prefix("/users%2F"), same: true},
		"encoding in upper and lower case":     {a: prefix("/caf%C3%A9"), b: prefix("/caf%c3%a9"), same: true},
		"Exact keeps its trailing slash":       {a: exact("/users/"), b: exact("/users")},
		"Exact decoded too":                    {a: exact("/users"), b: exact("/%75sers"), same: true},
		"Exact and Prefix":                     {a: exact("/users"), b: prefix("/users")},
		"root Prefix":                          {a: prefix("/"), b: prefix(""), same: true},
		"other path":                           {a: prefix("/users"), b: prefix("/orders")},
		"escaped percent sign decoded once":    {a: prefix("/100%25"), b: prefix("/100%2525")},
		"other host":                           {a: prefix("/"), b: classRoute{host: "www.example.com", path: "/", pt: "Prefix"}},
		"wildcard is not the host it covers":   {a: prefix("/"), b: classRoute{host: "*.example.com", path: "/", pt: "Prefix"}},
		"same class":                           {a: inClass("nginx", prefix("/")), b: inClass("nginx", prefix("/")), same: true},
		"other class":                          {a: inClass("nginx", prefix("/")), b: inClass("internal", prefix("/"))},
		"unset class is its own":               {a: prefix("/"), b: inClass("nginx", prefix("/"))},
		"unset class is not a class named so":  {a: prefix("/"), b: inClass("default", prefix("/"))},
		"class with a space cannot fake a key": {a: inClass("a Prefix", prefix("/")), b: inClass("a", classRoute{host: "Prefix api.example.com", path: "/", pt: "Prefix"})},
	}
	key := func(t *testing.T, r classRoute) string {
		scope := RouteScopes(&v1.APIGateway{Spec: v1.APIGatewaySpec{IngressClassName: r.class}})[0]
		k, ok := RouteKey(scope, &v1.Route{Host: v1.Hostname(r.host), Path: v1.HTTPPath(r.path), PathType: v1.PathType(r.pt)})
		require.True(t, ok, "%+v has a key", r)
		return k
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.same {
				assert.Equal(t, key(t, tc.a), key(t, tc.b))
			} else {
				assert.NotEqual(t, key(t, tc.a), key(t, tc.b))
			}
		})
	}
}

// A path with no normal form has no key: validation reports the path, and
// the route conflicts with nothing.
func TestRouteKeyOfAnInvalidPath(t *testing.T) {
	for _, path := range []string{"/%zz", "/a%20b", "/a/%2e%2e/b"} {
		_, ok := RouteKey("default", &v1.Route{Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix})
		assert.False(t, ok, path)
	}
}

// A gateway's routes compete in its ingress class, or, exposed through
// HTTPRoutes, in each Gateway they attach to: the Gateway, not the
// listener, merges routes, and an unset namespace is the gateway's own.
func TestRouteScopes(t *testing.T) {
	tests := map[string]struct {
		mutate func(*v1.APIGateway)
		want   []string
	}{
		"no exposure, no class":      {want: []string{"default"}},
		"no exposure, a class":       {mutate: func(gw *v1.APIGateway) { gw.Spec.IngressClassName = ptr.To("nginx") }, want: []string{`"nginx"`}},
		"Ingress exposure, no class": {mutate: func(gw *v1.APIGateway) { gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureIngress} }, want: []string{"default"}},
		"Ingress exposure, a class": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.IngressClassName, gw.Spec.Exposure = ptr.To("nginx"), &v1.Exposure{Type: v1.ExposureIngress}
		}, want: []string{`"nginx"`}},
		"a Gateway of another namespace": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public", inNamespace("infra"))) },
			want:   []string{"gateway infra/public"},
		},
		"a Gateway of the gateway's namespace": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public")) },
			want:   []string{"gateway default/public"},
		},
		"two Gateways, in order": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public", inNamespace("infra")), parent("internal")) },
			want:   []string{"gateway infra/public", "gateway default/internal"},
		},
		"two listeners of one Gateway": {
			mutate: func(gw *v1.APIGateway) {
				exposedBy(gw, parent("public", listener("http")), parent("public", listener("https")), parent("public", listener("admin")))
			},
			want: []string{"gateway default/public"},
		},
		"one Gateway with and without its namespace": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public"), parent("public", inNamespace("default"))) },
			want:   []string{"gateway default/public"},
		},
		"a namesake in another namespace is another Gateway": {
			mutate: func(gw *v1.APIGateway) { exposedBy(gw, parent("public"), parent("public", inNamespace("infra"))) },
			want:   []string{"gateway default/public", "gateway infra/public"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, RouteScopes(gatewayWith(tc.mutate)))
		})
	}
}

func TestRouteKeys(t *testing.T) {
	key := func(scope string, r v1.Route) string {
		k, ok := RouteKey(scope, &r)
		require.True(t, ok)
		return k
	}
	users, products := route("/users/", "a", 80), route("/products/", "b", 80)
	t.Run("each route in each Gateway, in route order", func(t *testing.T) {
		gw := gatewayWith(func(gw *v1.APIGateway) {
			exposedBy(gw, parent("public", inNamespace("infra"), listener("https")), parent("internal"), parent("public", inNamespace("infra"), listener("http")))
		})
		assert.Equal(t, []string{
			key("gateway infra/public", users), key("gateway default/internal", users),
			key("gateway infra/public", products), key("gateway default/internal", products),
		}, RouteKeys(gw))
	})
	t.Run("a route repeated once normalised counts once", func(t *testing.T) {
		gw := gatewayWith(func(gw *v1.APIGateway) {
			exposedBy(gw, parent("public"), parent("internal"))
			gw.Spec.Routes = append(gw.Spec.Routes, route("/%75sers", "c", 80), route("/bad%zz", "d", 80))
		})
		assert.Equal(t, []string{
			key("gateway default/public", users), key("gateway default/internal", users),
			key("gateway default/public", products), key("gateway default/internal", products),
		}, RouteKeys(gw))
	})
	t.Run("ingress class scope unchanged", func(t *testing.T) {
		gw := gatewayWith(func(gw *v1.APIGateway) { gw.Spec.IngressClassName = ptr.To("nginx") })
		assert.Equal(t, []string{key(`"nginx"`, users), key(`"nginx"`, products)}, RouteKeys(gw))
		gw.Spec.IngressClassName = nil
		assert.Equal(t, []string{key("default", users), key("default", products)}, RouteKeys(gw))
	})
	// A gateway in the Gateway's namespace that leaves the namespace unset
	// and one elsewhere that names it compete for the same requests.
	t.Run("unset namespace is the gateway's", func(t *testing.T) {
		local := gatewayWith(func(gw *v1.APIGateway) { gw.Namespace = "infra"; exposedBy(gw, parent("public")) })
		remote := gatewayWith(func(gw *v1.APIGateway) { gw.Namespace = "team"; exposedBy(gw, parent("public", inNamespace("infra"))) })
		assert.Equal(t, RouteKeys(local), RouteKeys(remote))
	})
	// No ingress class can stand for a Gateway: a class is quoted.
	t.Run("HTTPRoute keys never meet Ingress keys", func(t *testing.T) {
		byRoute := gatewayWith(func(gw *v1.APIGateway) { exposedBy(gw, parent("public")) })
		for _, class := range []*string{nil, ptr.To("gateway default/public"), ptr.To("default/public")} {
			byIngress := gatewayWith(func(gw *v1.APIGateway) { gw.Spec.IngressClassName = class })
			for _, k := range RouteKeys(byIngress) {
				assert.NotContains(t, RouteKeys(byRoute), k)
			}
		}
	})
	t.Run("no parentRefs, no keys", func(t *testing.T) {
		assert.Empty(t, RouteKeys(gatewayWith(func(gw *v1.APIGateway) { exposedBy(gw) })))
	})
}
