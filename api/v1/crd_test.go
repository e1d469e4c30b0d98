package v1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/testenv"
)

// These tests hold the CRD's schema to the contract through the real
// kube-apiserver, with no webhook installed: what they check is what keeps the
// API safe when the webhooks are unreachable.

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

func TestSeedExampleAppliesUnchanged(t *testing.T) {
	ctx := t.Context()
	seed := filepath.Join(env.Root, "manifests", "samples", "apigateway_v1.yaml")

	res := env.Kubectl(ctx, nil, "apply", "-f", seed)
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, "apigateway.example.com/my-app-gateway created")

	res = env.Kubectl(ctx, nil, "get", "apigateways.v1.example.com", "my-app-gateway", "-n", "default", "-o", "json")
	require.NoError(t, res.Err)
	var got v1.APIGateway
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))

	data, err := os.ReadFile(seed)
	require.NoError(t, err)
	var want v1.APIGateway
	require.NoError(t, yaml.UnmarshalStrict(data, &want))
	// The schema defaults path and pathType, and the seed sets every path,
	// so the only field the server adds is pathType.
	for i := range want.Spec.Routes {
		want.Spec.Routes[i].PathType = v1.PathTypePrefix
	}
	assert.Equal(t, want.Spec, got.Spec)
}

func TestSchemaRejects(t *testing.T) {
	tests := map[string]struct {
		spec string
		// wantErr holds what kubectl must print: the field path and the rule.
		wantErr []string
	}{
		"replicas above 100": {
			spec:    "replicas: 101\n" + oneRoute,
			wantErr: []string{"spec.replicas: Invalid value: 101: spec.replicas in body should be less than or equal to 100"},
		},
		"negative replicas": {
			spec:    "replicas: -1\n" + oneRoute,
			wantErr: []string{"spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"},
		},
		"backend port 0": {
			spec:    routes(route("api.example.com", "/", "Prefix", "svc", 0)),
			wantErr: []string{"spec.routes[0].backendService.port: Invalid value: 0: spec.routes[0].backendService.port in body should be greater than or equal to 1"},
		},
		"backend port 70000": {
			spec:    routes(route("api.example.com", "/", "Prefix", "svc", 70000)),
			wantErr: []string{"spec.routes[0].backendService.port: Invalid value: 70000: spec.routes[0].backendService.port in body should be less than or equal to 65535"},
		},
		"pathType Regex": {
			spec:    routes(route("api.example.com", "/", "Regex", "svc", 80)),
			wantErr: []string{`spec.routes[0].pathType: Unsupported value: "Regex": supported values: "Prefix", "Exact"`},
		},
		"101 routes": {
			spec:    routes(manyRoutes(101)...),
			wantErr: []string{"spec.routes: Too many: 101: must have at most 100 items"},
		},
		"no routes": {
			spec:    "routes: []\n",
			wantErr: []string{"spec.routes: Invalid value: 0: spec.routes in body should have at least 1 items"},
		},
		"missing backendService": {
			spec:    "routes:\n- host: api.example.com\n  path: /\n",
			wantErr: []string{`spec.routes[0].backendService: Invalid value: a route needs a backendService, rules that pick one, or a redirect that answers every request`},
		},
		// The routes list is a map keyed by host, path and pathType: the
		// API server names the repeated route by its index.
		"two identical routes": {
			spec: routes(route("api.example.com", "/users/", "Prefix", "a", 80), route("api.example.com", "/users/", "Prefix", "b", 81)),
			wantErr: []string{
				`spec.routes[1]: Duplicate value: {"host":"api.example.com","path":"/users/","pathType":"Prefix"}`,
			},
		},
		"a route repeating the first of three": {
			spec: routes(route("api.example.com", "/users/", "Prefix", "a", 80), route("api.example.com", "/orders/", "Prefix", "b", 81),
				route("api.example.com", "/users/", "Prefix", "c", 82)),
			wantErr: []string{`spec.routes[2]: Duplicate value: `},
		},
		"two routes the same once path and pathType are defaulted": {
			spec:    "routes:\n- {host: api.example.com, backendService: {name: a, port: 80}}\n- {host: api.example.com, path: /, pathType: Prefix, backendService: {name: b, port: 80}}\n",
			wantErr: []string{`spec.routes[1]: Duplicate value: {"host":"api.example.com","path":"/","pathType":"Prefix"}`},
		},
		"an ingressClassName that is no name": {
			spec:    "ingressClassName: Not_A_Class\n" + routes(route("api.example.com", "/", "Prefix", "svc", 80)),
			wantErr: []string{`spec.ingressClassName: Invalid value: "Not_A_Class": must be the name of an IngressClass`},
		},
		"a source range not in canonical form, and one twice": {
			spec: routes(route("api.example.com", "/", "Prefix", "svc", 80) + "  sourceRanges: {allow: [10.0.0.1/8], deny: [2001:db8::/32, 2001:db8::/32]}\n"),
			wantErr: []string{
				`spec.routes[0].sourceRanges.allow[0]: Invalid value: "10.0.0.1/8": must be a network in canonical form`,
				`spec.routes[0].sourceRanges.deny[1]: Duplicate value: "2001:db8::/32"`,
			},
		},
		"wildcard over a top-level domain": {
			spec:    routes(route("*.com", "/", "Prefix", "svc", 80)),
			wantErr: []string{`spec.routes[0].host: Invalid value: "*.com": a wildcard must keep at least two labels after '*.', as in *.example.com`},
		},
		"upper-case host": {
			spec:    routes(route("Bad_Host", "/", "Prefix", "svc", 80)),
			wantErr: []string{"spec.routes[0].host: Invalid value", "must be a lower-case DNS name"},
		},
		"IP address host": {
			spec:    routes(route("10.0.0.1", "/", "Prefix", "svc", 80)),
			wantErr: []string{"spec.routes[0].host: Invalid value", "must be a DNS name, not an IP address"},
		},
		"path breaking out of the proxy configuration": {
			spec:    routes(route("api.example.com", `/a;} server { listen 1;`, "Prefix", "svc", 80)),
			wantErr: []string{"spec.routes[0].path: Invalid value", "must start with '/' and hold only"},
		},
		"path traversal": {
			spec:    routes(route("api.example.com", "/a/../admin", "Prefix", "svc", 80)),
			wantErr: []string{"spec.routes[0].path: Invalid value", "must not contain empty, '.' or '..' segments"},
		},
		// What the defaults fill in is required: with neither the policy nor
		// the webhook there, the API server says what is missing.
		"no image and no replicas": {
			spec:    "image: \"\"\nreplicas: null\n" + oneRoute,
			wantErr: []string{`spec.image: Invalid value: "": spec.image in body should be at least 1 chars long`, "spec.replicas: Required value"},
		},
		"image with a space": {
			spec:    "image: \"nginx:1.27 --evil\"\n" + oneRoute,
			wantErr: []string{`spec.image: Invalid value: "nginx:1.27 --evil": must not contain whitespace or control characters`},
		},
		"image with a no-break space": {
			spec:    "image: \"nginx:1.27\u00a0\"\n" + oneRoute,
			wantErr: []string{`spec.image: Invalid value: "nginx:1.27\u00a0": must not contain whitespace or control characters`},
		},
		"a TLS host no route serves": {
			spec:    oneRoute + "tls:\n- {hosts: [api.example.com, www.example.com], secretName: api-tls}\n",
			wantErr: []string{"spec.tls: Invalid value: host www.example.com is not the host of any of the gateway's routes: every TLS host must be one"},
		},
		"a TLS host listed twice": {
			spec:    oneRoute + "tls:\n- {hosts: [api.example.com], secretName: a-tls}\n- {hosts: [api.example.com], secretName: b-tls}\n",
			wantErr: []string{"spec.tls: Invalid value: a host may be listed once, in one TLS entry"},
		},
		"a TLS secretName that is no name": {
			spec:    oneRoute + "tls:\n- {hosts: [api.example.com], secretName: Not_A_Secret}\n",
			wantErr: []string{`spec.tls[0].secretName: Invalid value: "Not_A_Secret": must be the name of a Secret`},
		},
		"backend name not a DNS-1035 label": {
			spec:    routes(route("api.example.com", "/", "Prefix", "1svc", 80)),
			wantErr: []string{"spec.routes[0].backendService.name: Invalid value", "must be a DNS-1035 label"},
		},
		"an exposure type that is none": {
			spec:    oneRoute + "exposure: {type: LoadBalancer}\n",
			wantErr: []string{`spec.exposure.type: Unsupported value: "LoadBalancer": supported values: "Ingress", "HTTPRoute"`},
		},
		"an exposure without type": {
			spec:    oneRoute + "exposure: {httpRoute: {parentRefs: [{name: public}]}}\n",
			wantErr: []string{"spec.exposure.type: Required value"},
		},
		"httpRoute with type Ingress": {
			spec:    oneRoute + "exposure: {type: Ingress, httpRoute: {parentRefs: [{name: public}]}}\n",
			wantErr: []string{"spec.exposure: Invalid value", "httpRoute is required when type is HTTPRoute, and allowed only then"},
		},
		"type HTTPRoute without httpRoute": {
			spec:    oneRoute + "exposure: {type: HTTPRoute}\n",
			wantErr: []string{"spec.exposure: Invalid value", "httpRoute is required when type is HTTPRoute, and allowed only then"},
		},
		"no parentRefs": {
			spec:    oneRoute + "exposure: {type: HTTPRoute, httpRoute: {parentRefs: []}}\n",
			wantErr: []string{"spec.exposure.httpRoute.parentRefs: Invalid value: 0: spec.exposure.httpRoute.parentRefs in body should have at least 1 items"},
		},
		"33 parentRefs": {
			spec:    oneRoute + httpRouteExposure(manyParents(33)...),
			wantErr: []string{"spec.exposure.httpRoute.parentRefs: Too many: 33: must have at most 32 items"},
		},
		"a parentRef without name": {
			spec:    oneRoute + httpRouteExposure("{namespace: infra}"),
			wantErr: []string{"spec.exposure.httpRoute.parentRefs[0].name: Required value"},
		},
		"a parentRef namespace that is no DNS label": {
			spec:    oneRoute + httpRouteExposure("{name: public, namespace: infra.example}"),
			wantErr: []string{`spec.exposure.httpRoute.parentRefs[0].namespace: Invalid value: "infra.example": must be the name of a Namespace`},
		},
		"a parentRef name that is no name": {
			spec:    oneRoute + httpRouteExposure("{name: public}", "{name: Public_GW}"),
			wantErr: []string{`spec.exposure.httpRoute.parentRefs[1].name: Invalid value: "Public_GW": must be the name of a Gateway`},
		},
		"a parentRef sectionName that is no name": {
			spec:    oneRoute + httpRouteExposure("{name: public, sectionName: HTTPS}"),
			wantErr: []string{`spec.exposure.httpRoute.parentRefs[0].sectionName: Invalid value: "HTTPS": must be the name of a listener`},
		},
		"tls with type HTTPRoute": {
			spec:    oneRoute + "tls:\n- {hosts: [api.example.com], secretName: api-tls}\n" + httpRouteExposure("{name: public}"),
			wantErr: []string{"spec.tls: Invalid value", "with exposure type HTTPRoute, TLS is terminated by the parent Gateway's listeners"},
		},
		"ingressClassName with type HTTPRoute": {
			spec:    "ingressClassName: nginx\n" + oneRoute + httpRouteExposure("{name: public}"),
			wantErr: []string{"spec.ingressClassName: Invalid value", "ingressClassName selects the class of the gateway's Ingress, which exposure type HTTPRoute does not create"},
		},
		// The traffic settings (issue 26).
		"weights over 100": {
			spec:    traffic("additionalBackends: [{name: a, port: 80, weight: 60}, {name: b, port: 80, weight: 41}]"),
			wantErr: []string{"spec.routes[0].additionalBackends: Invalid value", "the weights add up to at most 100 (percent)"},
		},
		"a weight of 101": {
			spec:    traffic("additionalBackends: [{name: a, port: 80, weight: 101}]"),
			wantErr: []string{"spec.routes[0].additionalBackends[0].weight: Invalid value: 101", "less than or equal to 100"},
		},
		"a backend without weight": {
			spec:    traffic("additionalBackends: [{name: a, port: 80}]"),
			wantErr: []string{"spec.routes[0].additionalBackends[0].weight: Required value"},
		},
		"eight additional backends": {
			spec: traffic("additionalBackends: [{name: a, port: 1, weight: 1}, {name: a, port: 2, weight: 1}, {name: a, port: 3, weight: 1}, " +
				"{name: a, port: 4, weight: 1}, {name: a, port: 5, weight: 1}, {name: a, port: 6, weight: 1}, {name: a, port: 7, weight: 1}, {name: a, port: 8, weight: 1}]"),
			wantErr: []string{"spec.routes[0].additionalBackends: Too many: 8: must have at most 7 items"},
		},
		"a backend twice": {
			spec:    traffic("additionalBackends: [{name: a, port: 80, weight: 1}, {name: a, port: 80, weight: 2}]"),
			wantErr: []string{"spec.routes[0].additionalBackends[1]: Duplicate value"},
		},
		"the primary again": {
			spec:    traffic("additionalBackends: [{name: svc, port: 80, weight: 1}]"),
			wantErr: []string{"spec.routes[0].additionalBackends: Invalid value", "the same Service port as backendService"},
		},
		"a connect timeout of 76 s": {
			spec:    traffic("timeouts: {connectSeconds: 76}"),
			wantErr: []string{"spec.routes[0].timeouts.connectSeconds: Invalid value: 76", "less than or equal to 75"},
		},
		"a read timeout of 0": {
			spec:    traffic("timeouts: {readSeconds: 0}"),
			wantErr: []string{"spec.routes[0].timeouts.readSeconds: Invalid value: 0", "greater than or equal to 1"},
		},
		"a rewrite on an Exact route": {
			spec:    "routes:\n- {host: api.example.com, path: /a, pathType: Exact, rewritePrefix: /b, backendService: {name: svc, port: 80}}\n",
			wantErr: []string{"spec.routes[0].rewritePrefix: Invalid value", "an Exact route has none"},
		},
		"a rewrite with an escape": {
			spec:    traffic("rewritePrefix: /caf%C3%A9"),
			wantErr: []string{"spec.routes[0].rewritePrefix: Invalid value", "must not hold percent-encoded bytes"},
		},
		"a rewrite breaking out of the configuration": {
			spec:    traffic(`rewritePrefix: "/a;} server {"`),
			wantErr: []string{"spec.routes[0].rewritePrefix: Invalid value", "must start with '/' and hold only"},
		},
		"a reserved request header": {
			spec:    traffic("requestHeaders: {set: [{name: X-Forwarded-For, value: 1.2.3.4}]}"),
			wantErr: []string{"spec.routes[0].requestHeaders.set[0].name: Invalid value", "a header the gateway sets itself or a hop-by-hop header"},
		},
		"a header name with a variable": {
			spec:    traffic(`responseHeaders: {remove: ["X-$host"]}`),
			wantErr: []string{"spec.routes[0].responseHeaders.remove[0]: Invalid value", "should match"},
		},
		"a header value with a quote, a brace and a variable": {
			spec:    traffic(`requestHeaders: {add: [{name: X-A, value: "a\"; } $host"}]}`),
			wantErr: []string{"spec.routes[0].requestHeaders.add[0].value: Invalid value", "should match"},
		},
		"a header value with a newline": {
			spec:    traffic(`responseHeaders: {set: [{name: X-A, value: "a\nSet-Cookie: x"}]}`),
			wantErr: []string{"spec.routes[0].responseHeaders.set[0].value: Invalid value", "should match"},
		},
		"a header set twice": {
			spec:    traffic("requestHeaders: {set: [{name: X-A, value: a}, {name: X-A, value: b}]}"),
			wantErr: []string{"spec.routes[0].requestHeaders.set[1]: Duplicate value"},
		},
		"a header set and removed, in another case": {
			spec:    traffic("responseHeaders: {set: [{name: X-A, value: a}], remove: [x-a]}"),
			wantErr: []string{"spec.routes[0].responseHeaders: Invalid value", "names one header twice across set, add and remove"},
		},
		"a body size nginx does not read": {
			spec:    traffic("maxBodySize: 10MB"),
			wantErr: []string{"spec.routes[0].maxBodySize: Invalid value", "should match"},
		},
		"a rate of 0": {
			spec:    traffic("rateLimit: {requestsPerSecond: 0}"),
			wantErr: []string{"spec.routes[0].rateLimit.requestsPerSecond: Invalid value: 0", "greater than or equal to 1"},
		},
		"a rate limit without a rate": {
			spec:    traffic("rateLimit: {burst: 5}"),
			wantErr: []string{"spec.routes[0].rateLimit.requestsPerSecond: Required value"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			manifest := "apiVersion: example.com/v1\nkind: APIGateway\nmetadata:\n  name: invalid\n  namespace: default\nspec:\n" + indent(complete(tc.spec))
			res := env.Kubectl(t.Context(), strings.NewReader(manifest), "apply", "-f", "-")
			require.Error(t, res.Err, "kubectl apply must fail; it printed %q", res.Stdout)
			assert.Contains(t, res.Stderr, `The APIGateway "invalid" is invalid`)
			for _, want := range tc.wantErr {
				assert.Contains(t, res.Stderr, want)
			}
		})
	}
}

// traffic is one route on api.example.com with settings, a YAML flow
// mapping's members.
func traffic(settings string) string {
	return "routes:\n- {host: api.example.com, path: /api, backendService: {name: svc, port: 80}, " + settings + "}\n"
}

// TestSchemaAcceptsEveryTrafficSetting: a route using every setting, each
// at a bound, is stored as written.
func TestSchemaAcceptsEveryTrafficSetting(t *testing.T) {
	spec := traffic("additionalBackends: [{name: canary, port: 80, weight: 100}, {name: drained, port: 80, weight: 0}], " +
		"timeouts: {connectSeconds: 75, readSeconds: 3600}, rewritePrefix: /, " +
		`requestHeaders: {set: [{name: X-Team, value: "a; b {c} 'd' #e"}], add: [{name: X-Tag, value: ""}], remove: [Cookie]}, ` +
		"responseHeaders: {set: [{name: Cache-Control, value: no-store}]}, maxBodySize: 9999g, " +
		"rateLimit: {requestsPerSecond: 10000, burst: 10000}")
	manifest := "apiVersion: example.com/v1\nkind: APIGateway\nmetadata:\n  name: every-setting\n  namespace: default\nspec:\n" + indent(complete(spec))
	res := env.Kubectl(t.Context(), strings.NewReader(manifest), "apply", "-f", "-")
	require.NoError(t, res.Err, res.Stderr)
	gw := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "every-setting"}, gw))
	r := gw.Spec.Routes[0]
	assert.Equal(t, []v1.WeightedBackend{{Name: "canary", Port: 80, Weight: 100}, {Name: "drained", Port: 80, Weight: 0}}, r.AdditionalBackends)
	assert.Equal(t, v1.HTTPHeaderValue("a; b {c} 'd' #e"), r.RequestHeaders.Set[0].Value)
	assert.Equal(t, "9999g", r.MaxBodySize)
	assert.Equal(t, int32(10000), r.RateLimit.Burst)
}

// A gateway exposed through HTTPRoutes is stored as written: every field
// of a parentRef, the optional ones included, and references to one
// Gateway's listeners side by side.
func TestHTTPRouteExposureRoundTrips(t *testing.T) {
	ctx := t.Context()
	apply(t, ctx, "exposed", oneRoute+httpRouteExposure(
		"{name: public, namespace: infra, sectionName: https}",
		"{name: public, namespace: infra, sectionName: http}",
		"{name: internal}",
	))
	res := env.Kubectl(ctx, nil, "get", "apigateways.v1.example.com", "exposed", "-n", "default", "-o", "json")
	require.NoError(t, res.Err)
	var got v1.APIGateway
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	str := func(s string) *string { return &s }
	assert.Equal(t, &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: []v1.ParentGatewayReference{
		{Namespace: str("infra"), Name: "public", SectionName: str("https")},
		{Namespace: str("infra"), Name: "public", SectionName: str("http")},
		{Name: "internal"},
	}}}, got.Spec.Exposure)
}

// Server-side apply merges routes by their key (host, path, pathType),
// defaults included: re-applying the same manifest changes nothing, an
// applier's dropped route goes, and two appliers can each own routes.
func TestServerSideApplyMergesRoutesByKey(t *testing.T) {
	ctx := t.Context()
	ssa := func(manager, spec string) testenv.Result {
		manifest := "apiVersion: example.com/v1\nkind: APIGateway\nmetadata:\n  name: ssa\n  namespace: default\nspec:\n" + indent(complete(spec))
		return env.Kubectl(ctx, strings.NewReader(manifest), "apply", "--server-side", "--field-manager="+manager, "-f", "-")
	}
	get := func() v1.APIGateway {
		res := env.Kubectl(ctx, nil, "get", "apigateways.v1.example.com", "ssa", "-n", "default", "-o", "json")
		require.NoError(t, res.Err)
		var gw v1.APIGateway
		require.NoError(t, json.Unmarshal([]byte(res.Stdout), &gw))
		return gw
	}
	paths := func(gw v1.APIGateway) []string {
		var out []string
		for _, r := range gw.Spec.Routes {
			out = append(out, string(r.Host)+string(r.Path)+" "+string(r.PathType)+" "+string(r.BackendService.Name))
		}
		return out
	}
	// The first route leaves path and pathType to the schema's defaults.
	teamA := "routes:\n- {host: api.example.com, backendService: {name: a, port: 80}}\n" + route("api.example.com", "/orders/", "Exact", "o", 80)
	require.NoError(t, ssa("team-a", teamA).Err)
	first := get()
	assert.Equal(t, []string{"api.example.com/ Prefix a", "api.example.com/orders/ Exact o"}, paths(first))

	require.NoError(t, ssa("team-a", teamA).Err)
	assert.Equal(t, first.ResourceVersion, get().ResourceVersion, "the same apply again writes nothing")

	// Another manager adds a route of its own; team-a's stay.
	require.NoError(t, ssa("team-b", routes(route("api.example.com", "/b/", "Prefix", "b", 80))).Err)
	assert.Equal(t, []string{"api.example.com/ Prefix a", "api.example.com/orders/ Exact o", "api.example.com/b/ Prefix b"}, paths(get()))

	// team-a drops a route it applied; team-b's stays.
	require.NoError(t, ssa("team-a", "routes:\n- {host: api.example.com, backendService: {name: a, port: 81}}\n").Err)
	gw := get()
	assert.Equal(t, []string{"api.example.com/ Prefix a", "api.example.com/b/ Prefix b"}, paths(gw))
	assert.Equal(t, v1.PortNumber(81), gw.Spec.Routes[0].BackendService.Port)

	// A route another manager owns is a conflict, as for any field.
	res := ssa("team-a", routes(route("api.example.com", "/", "Prefix", "a", 81), route("api.example.com", "/b/", "Prefix", "stolen", 80)))
	require.Error(t, res.Err)
	assert.Contains(t, res.Stderr, `conflict with "team-b"`)
}

func TestGetShowsPrinterColumns(t *testing.T) {
	ctx := t.Context()
	apply(t, ctx, "columns", "image: nginx:1.27\nreplicas: 3\n"+oneRoute)

	res := env.Kubectl(ctx, nil, "get", "agw", "columns", "-n", "default")
	require.NoError(t, res.Err)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 2, res.Stdout)
	assert.Equal(t, []string{"NAME", "IMAGE", "REPLICAS", "READY", "STATUS", "EXPOSED", "AGE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"columns", "nginx:1.27", "3"}, strings.Fields(lines[1])[:3])

	// The category finds it too.
	res = env.Kubectl(ctx, nil, "get", "gateways", "-n", "default", "-o", "name")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, "apigateway.example.com/columns")
}

func TestExplainShowsFieldDocs(t *testing.T) {
	res := env.Kubectl(t.Context(), nil, "explain", "apigateway.spec.routes.host")
	require.NoError(t, res.Err)
	assert.Contains(t, res.Stdout, "GROUP:      example.com")
	assert.Contains(t, res.Stdout, "VERSION:    v1")
	assert.Contains(t, res.Stdout, "host is the DNS name the route answers for")
}

func TestScaleSubresource(t *testing.T) {
	ctx := t.Context()
	apply(t, ctx, "scaled", "replicas: 2\n"+oneRoute)

	res := env.Kubectl(ctx, nil, "scale", "agw", "scaled", "-n", "default", "--replicas=5")
	require.NoError(t, res.Err)
	res = env.Kubectl(ctx, nil, "get", "agw", "scaled", "-n", "default", "-o", "jsonpath={.spec.replicas}")
	require.NoError(t, res.Err)
	assert.Equal(t, "5", res.Stdout)

	res = env.Kubectl(ctx, nil, "scale", "agw", "scaled", "-n", "default", "--replicas=101")
	require.Error(t, res.Err)
	assert.Contains(t, res.Stderr, "should be less than or equal to 100")
}

const oneRoute = "routes:\n- host: api.example.com\n  backendService: {name: svc, port: 80}\n"

func apply(t *testing.T, ctx context.Context, name, spec string) {
	t.Helper()
	manifest := "apiVersion: example.com/v1\nkind: APIGateway\nmetadata:\n  name: " + name + "\n  namespace: default\nspec:\n" + indent(complete(spec))
	res := env.Kubectl(ctx, strings.NewReader(manifest), "apply", "-f", "-")
	require.NoError(t, res.Err)
}

// complete adds to spec the image and replicas it leaves out: no policy
// or webhook defaults them here, and the schema requires both.
func complete(spec string) string {
	if !strings.Contains(spec, "image:") {
		spec = "image: nginx:1.27\n" + spec
	}
	if !strings.Contains(spec, "replicas:") {
		spec = "replicas: 2\n" + spec
	}
	return spec
}

func route(host, path, pathType, svc string, port int) string {
	return fmt.Sprintf("- host: %q\n  path: %q\n  pathType: %s\n  backendService: {name: %s, port: %d}\n", host, path, pathType, svc, port)
}

func manyRoutes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = route("api.example.com", fmt.Sprintf("/r%d/", i), "Prefix", "svc", 80)
	}
	return out
}

func routes(rs ...string) string { return "routes:\n" + strings.Join(rs, "") }

// httpRouteExposure is an exposure of type HTTPRoute with parentRefs refs,
// each a YAML flow mapping.
func httpRouteExposure(refs ...string) string {
	return "exposure:\n  type: HTTPRoute\n  httpRoute:\n    parentRefs:\n    - " + strings.Join(refs, "\n    - ") + "\n"
}

// manyParents are n references to distinct Gateways.
func manyParents(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("{name: g%d}", i)
	}
	return out
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// Writes through v1alpha1 are validated against the v1alpha1 schema, before
// conversion, so it repeats the rules that keep user strings out of the
// generated configuration.
func TestV1alpha1SchemaRejects(t *testing.T) {
	tests := map[string]struct {
		route   string
		wantErr string
	}{
		"upper-case host": {
			route:   `{host: Bad_Host, prefix: /, serviceName: svc, servicePort: 80}`,
			wantErr: `spec.routes[0].host: Invalid value: "Bad_Host": must be a lower-case DNS name`,
		},
		"prefix breaking out of the proxy configuration": {
			route:   `{host: api.example.com, prefix: "/a;}", serviceName: svc, servicePort: 80}`,
			wantErr: `spec.routes[0].prefix: Invalid value: "/a;}": must start with '/' and hold only`,
		},
		"service port 0": {
			route:   `{host: api.example.com, prefix: /, serviceName: svc, servicePort: 0}`,
			wantErr: "spec.routes[0].servicePort: Invalid value: 0",
		},
		// v1alpha1's routes stay an atomic list (see the type): its rule
		// names the repeated route's index in the message.
		"two identical routes, one with the prefix left out": {
			route:   "{host: api.example.com, serviceName: a, servicePort: 80}\n  - {host: api.example.com, prefix: /, serviceName: b, servicePort: 80}",
			wantErr: "spec.routes: Invalid value: spec.routes[1] has the same host and prefix as an earlier route; each route must be unique",
		},
		"a route repeating the second of three": {
			route: "{host: api.example.com, prefix: /a/, serviceName: a, servicePort: 80}\n  - {host: api.example.com, prefix: /b/, serviceName: b, servicePort: 80}\n" +
				"  - {host: api.example.com, prefix: /b/, serviceName: c, servicePort: 80}",
			wantErr: "spec.routes[2] has the same host and prefix as an earlier route",
		},
		"wildcard over a top-level domain": {
			route:   `{host: "*.com", prefix: /, serviceName: svc, servicePort: 80}`,
			wantErr: `spec.routes[0].host: Invalid value: "*.com": a wildcard must keep at least two labels after '*.', as in *.example.com`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			manifest := "apiVersion: example.com/v1alpha1\nkind: APIGateway\nmetadata: {name: invalid, namespace: default}\nspec:\n" +
				"  image: nginx:1.27\n  replicas: 2\n  routes:\n  - " + tc.route + "\n"
			res := env.Kubectl(t.Context(), strings.NewReader(manifest), "apply", "-f", "-")
			require.Error(t, res.Err, "kubectl apply must fail; it printed %q", res.Stdout)
			assert.Contains(t, res.Stderr, tc.wantErr)
		})
	}
}
