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
		k, ok := RouteKey(scope, &v1.Route{Host: r.host, Path: r.path, PathType: v1.PathType(r.pt)})
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
		_, ok := RouteKey("default", &v1.Route{Host: "api.example.com", Path: path, PathType: v1.PathTypePrefix})
		assert.False(t, ok, path)
	}
}
