package controller

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/render/rendertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./controller -run %s -update", t.Name())
	assert.Equal(t, string(want), string(got), "output differs from %s (go test ./controller -update rewrites it)", path)
}

func goldenYAML(t *testing.T, name string, obj any) {
	t.Helper()
	data, err := yaml.Marshal(obj)
	require.NoError(t, err)
	golden(t, name, data)
}

// The renderer's fixtures (package rendertest), under the names these
// tests use.
var (
	route   = rendertest.Route
	gateway = rendertest.Gateway
)

// testGateways are the gateways the builders' golden files show.
func testGateways() map[string]*v1.APIGateway {
	seed := rendertest.Seed()

	full := gateway("full",
		route("www.example.com", "/", v1.PathTypePrefix, "web", 80),
		route("*.apps.example.com", "/api", v1.PathTypePrefix, "api", 8080),
		route("api.example.com", "/v1/status", v1.PathTypeExact, "status", 9000))
	full.Spec.Replicas = ptr.To[int32](3)
	full.Spec.IngressClassName = ptr.To("nginx")
	full.Spec.TLS = []v1.GatewayTLS{{Hosts: []string{"www.example.com", "api.example.com"}, SecretName: "example-tls"}}
	full.Spec.Resources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}

	// No image and no replicas: what the reconciler sees when the
	// defaulting webhook failed open.
	bare := gateway("bare", route("bare.example.com", "/", v1.PathTypePrefix, "web", 80))

	// Exposed through HTTPRoutes: one per host, attached to a listener of
	// a Gateway in another namespace and to a Gateway in its own.
	httpRoute := httpRouteGateway("httproute", []v1.ParentGatewayReference{
		{Namespace: ptr.To("infra"), Name: "public", SectionName: ptr.To("https")},
		{Name: "internal"},
	},
		route("www.example.com", "/", v1.PathTypePrefix, "web", 80),
		route("*.apps.example.com", "/api/", v1.PathTypePrefix, "api", 8080),
		route("api.example.com", "/v1/status", v1.PathTypeExact, "status", 9000),
		route("api.example.com", "/caf%C3%A9/", v1.PathTypePrefix, "cafe", 8080),
		// Rules: with a backendService, the path alone; with rules only,
		// a match per match Gateway API can state; with a cookie, which
		// it cannot, the path alone.
		withRules(route("api.example.com", "/canary/", v1.PathTypePrefix, "stable", 80), false,
			v1.RequestMatch{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always"}}}),
		withRules(route("api.example.com", "/beta", v1.PathTypeExact, "", 0), true,
			v1.RequestMatch{Headers: []v1.HeaderMatch{{Name: "X-Beta", Type: v1.MatchExact, Value: "1"}, {Name: "X-Seen", Type: v1.MatchPresent}}, Method: ptr.To[v1.HTTPMethod]("GET")},
			v1.RequestMatch{QueryParams: []v1.QueryParamMatch{{Name: "beta", Type: v1.MatchExact, Value: "on"}}}),
		withRules(route("api.example.com", "/cookie", v1.PathTypeExact, "", 0), true,
			v1.RequestMatch{Method: ptr.To[v1.HTTPMethod]("GET")},
			v1.RequestMatch{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}}),
		// Redirects: without scheme, a rule of Gateway API's
		// RequestRedirect each; with one, the path alone (nginx decides).
		withRedirect(route("api.example.com", "/old/", v1.PathTypePrefix, "", 0), &v1.HTTPRedirect{
			Path: &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: "/new/"}, StatusCode: ptr.To[int32](301)}),
		withRedirect(route("api.example.com", "/docs", v1.PathTypeExact, "", 0), &v1.HTTPRedirect{
			Hostname: "docs.example.com", Port: ptr.To[v1.PortNumber](8443), Path: &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/"}}),
		withRedirect(route("api.example.com", "/secure/", v1.PathTypePrefix, "secure", 80), &v1.HTTPRedirect{Scheme: "https"}))
	return map[string]*v1.APIGateway{"seed": seed, "full": full, "bare": bare, "httproute": httpRoute}
}

// withRedirect gives r the redirect rd.
func withRedirect(r v1.Route, rd *v1.HTTPRedirect) v1.Route {
	r.Redirect = rd
	return r
}

// withRules gives r a rule of matches to Service canary, and leaves out
// its backendService when rulesOnly.
func withRules(r v1.Route, rulesOnly bool, matches ...v1.RequestMatch) v1.Route {
	r.Rules = []v1.RouteRule{{Matches: matches, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
	if rulesOnly {
		r.BackendService = v1.BackendService{}
	}
	return r
}

// TestRenderConfigGolden pins the configuration of each of the renderer's
// route sets (rendertest.RouteSets): the ConfigMap's data the reconciler
// writes, so a change of the rendered bytes, which reloads every gateway,
// shows as a diff here.
func TestRenderConfigGolden(t *testing.T) {
	for name, gw := range rendertest.RouteSets() {
		t.Run(name, func(t *testing.T) {
			config, err := render.Config(gw, render.Options{})
			require.NoError(t, err)
			golden(t, name+".conf.template", []byte(config))
		})
	}
	// The traffic route set as the reconciler renders it once its backend
	// Services exist: each with a ClusterIP, pooled (render.ServiceAddresses),
	// but "web-green", resolved by name as if it did not exist yet.
	t.Run("pooled", func(t *testing.T) {
		config, err := render.Config(rendertest.Traffic(), render.Options{ServiceAddresses: func(_, name string, _ int32) (netip.Addr, bool) {
			return netip.AddrFrom4([4]byte{10, 96, byte(len(name)), name[0]}), name != "web-green"
		}})
		require.NoError(t, err)
		golden(t, "pooled.conf.template", []byte(config))
	})
}

// testImage is the image the golden Deployments run when spec.image is empty.
const (
	testImage         = "nginxinc/nginx-unprivileged:1.29-alpine"
	testReloaderImage = "registry.example.com/apigateway-operator:v1.2.3"
)

func TestBuildersGolden(t *testing.T) {
	for name, gw := range testGateways() {
		t.Run(name, func(t *testing.T) {
			config, err := render.Config(gw, render.Options{})
			require.NoError(t, err)
			goldenYAML(t, name+".configmap.yaml", desiredConfigMap(gw, config))
			goldenYAML(t, name+".deployment.yaml", desiredDeployment(gw, deploymentParams{
				Image: testImage, ConfigHash: configHash(config), ReloaderImage: testReloaderImage,
			}))
			goldenYAML(t, name+".service.yaml", desiredService(gw))
			if budget := desiredDisruptionBudget(gw, false); budget != nil {
				goldenYAML(t, name+".poddisruptionbudget.yaml", budget)
			}
			if !exposedByHTTPRoute(gw) {
				goldenYAML(t, name+".ingress.yaml", desiredIngress(gw))
				return
			}
			// One file, the HTTPRoutes in the order they are applied.
			var docs []string
			for _, r := range desiredHTTPRoutes(gw) {
				data, err := yaml.Marshal(r)
				require.NoError(t, err)
				docs = append(docs, string(data))
			}
			golden(t, name+".httproutes.yaml", []byte(strings.Join(docs, "---\n")))
		})
	}
}

func TestBuildersArePure(t *testing.T) {
	for name, gw := range testGateways() {
		t.Run(name, func(t *testing.T) {
			before := gw.DeepCopy()
			a, err := render.Config(gw, render.Options{})
			require.NoError(t, err)
			b, err := render.Config(gw, render.Options{})
			require.NoError(t, err)
			assert.Equal(t, a, b)
			assert.Equal(t, desiredDeployment(gw, deploymentParams{ConfigHash: configHash(a)}),
				desiredDeployment(gw, deploymentParams{ConfigHash: configHash(b)}))
			assert.Equal(t, before, gw, "a builder changed its input")
		})
	}
}

// ingressPathSet is an Ingress's rules as "host path pathType" strings.
func ingressPathSet(t *testing.T, gw *v1.APIGateway) []string {
	t.Helper()
	var out []string
	for _, rule := range desiredIngress(gw).Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			assert.Equal(t, gw.Name, *p.Backend.Service.Name, "every path goes to Service N")
			assert.Equal(t, "http", *p.Backend.Service.Port.Name)
			out = append(out, *rule.Host+" "+*p.Path+" "+string(*p.PathType))
		}
	}
	return out
}

func TestDesiredIngressPaths(t *testing.T) {
	tests := map[string]struct {
		routes []v1.Route
		want   []string
	}{
		"one path per route, hosts and paths sorted": {
			routes: []v1.Route{
				route("www.example.com", "/", "", "web", 80),
				route("api.example.com", "/users/", v1.PathTypePrefix, "users", 8080),
				route("api.example.com", "/orders", v1.PathTypeExact, "orders", 8080),
			},
			want: []string{"api.example.com /orders Exact", "api.example.com /users Prefix", "www.example.com / Prefix"},
		},
		"the path nginx matches: decoded, a prefix without its trailing slash": {
			routes: []v1.Route{
				route("api.example.com", "/%75sers/", v1.PathTypePrefix, "users", 8080),
				route("api.example.com", "/caf%C3%A9/", v1.PathTypeExact, "cafe", 8080),
			},
			want: []string{"api.example.com /café/ Exact", "api.example.com /users Prefix"},
		},
		"routes nginx serves alike share one path": {
			routes: []v1.Route{
				route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080),
				route("api.example.com", "/users/", v1.PathTypePrefix, "users-v2", 8080),
				route("api.example.com", "/%75sers", v1.PathTypePrefix, "users-v3", 8080),
			},
			want: []string{"api.example.com /users Prefix"},
		},
		"Exact and Prefix on one path are two paths": {
			routes: []v1.Route{
				route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080),
				route("api.example.com", "/users", v1.PathTypeExact, "users-exact", 8080),
			},
			want: []string{"api.example.com /users Exact", "api.example.com /users Prefix"},
		},
		"a route the renderer refuses is left out": {
			routes: []v1.Route{
				route("api.example.com", "/ok", v1.PathTypePrefix, "ok", 8080),
				route("api.example.com", "/a%252Fb", v1.PathTypeExact, "bad", 8080),
				route("api.example.com", "/x", "Regex", "bad", 8080),
				route("bad.example.com", "/a/%2E%2E/b", v1.PathTypePrefix, "bad", 8080),
			},
			want: []string{"api.example.com /ok Prefix"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, ingressPathSet(t, gateway("gw", tc.routes...)))
		})
	}
}

// TestIngressesOfGatewaysSharingAHostAreDisjoint: two gateways on one host
// no longer both claim "/", so the Ingress controller routes each path to
// the gateway that serves it.
func TestIngressesOfGatewaysSharingAHostAreDisjoint(t *testing.T) {
	users := gateway("users", route("api.example.com", "/users/", v1.PathTypePrefix, "users", 8080))
	orders := gateway("orders",
		route("api.example.com", "/orders", v1.PathTypePrefix, "orders", 8080),
		route("api.example.com", "/orders/status", v1.PathTypeExact, "status", 8080))
	a, b := ingressPathSet(t, users), ingressPathSet(t, orders)
	assert.Equal(t, []string{"api.example.com /users Prefix"}, a)
	assert.Equal(t, []string{"api.example.com /orders Prefix", "api.example.com /orders/status Exact"}, b)
	for _, p := range a {
		assert.NotContains(t, b, p)
	}
}
