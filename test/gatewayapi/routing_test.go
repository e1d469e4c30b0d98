package gatewayapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/testenv"
)

// Who answered a request: an echo backend (through Traefik and the
// gateway's nginx), the gateway's nginx, or Traefik itself.
const (
	byBackend = "backend"
	byNginx   = "nginx"
	byTraefik = "Traefik"
)

// traefikNotFound is the body of Traefik's 404, for a request no route of
// the entry point matches.
const traefikNotFound = "404 page not found\n"

// request is a request to the Gateway and what must answer it.
type request struct {
	scheme, host, target string
	status               int
	by                   string // byBackend, byNginx or byTraefik
	service              string // the echo backend, when by is byBackend
	uri                  string // the request URI the backend receives; empty: target
	method               string // empty: GET
	headers              []string
}

func (r request) String() string { return fmt.Sprintf("%s://%s%s", r.scheme, r.host, r.target) }

// answeredBy tells from a response body who wrote it.
func answeredBy(body string) (string, dataplane.EchoReply) {
	var reply dataplane.EchoReply
	switch {
	case json.Unmarshal([]byte(body), &reply) == nil && reply.Service != "":
		return byBackend, reply
	case body == traefikNotFound:
		return byTraefik, reply
	case strings.Contains(body, "<center>nginx"):
		return byNginx, reply
	case body == "":
		// Traefik refuses a request it cannot route (a fragment in the
		// request line) with no body; nginx and the backends write one.
		return byTraefik, reply
	}
	return "unknown", reply
}

// check sends r until it gets the answer r expects, for as long as
// Traefik may take to program a change (waitFor): a route Traefik has
// accepted may answer 404 for a moment still.
func (g gatewayClient) check(t *testing.T, r request) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		method := r.method
		if method == "" {
			method = "GET"
		}
		status, body, err := g.send(r.scheme, method, r.host, r.target, r.headers...)
		require.NoError(c, err)
		by, reply := answeredBy(body)
		require.Equal(c, r.status, status, "body: %s", body)
		require.Equal(c, r.by, by, "body: %s", body)
		if by != byBackend {
			return
		}
		assert.Equal(c, r.service, reply.Service)
		uri := r.uri
		if uri == "" {
			uri = r.target
		}
		assert.Equal(c, uri, reply.RequestURI, "the request URI the backend received")
		assert.Equal(c, r.host, reply.Host)
	}, waitFor, tick, "%s", r)
}

// checkAll checks each request in turn.
func (g gatewayClient) checkAll(t *testing.T, requests ...request) {
	t.Helper()
	for _, r := range requests {
		g.check(t, r)
	}
}

// served is a request an echo backend answers, receiving target as sent.
func served(scheme, host, target, service string) request {
	return request{scheme: scheme, host: host, target: target, status: 200, by: byBackend, service: service}
}

// notFound is a request answered 404 by Traefik (no route) or nginx.
func notFound(scheme, host, target, by string) request {
	return request{scheme: scheme, host: host, target: target, status: 404, by: by}
}

// servedPod starts the pod of the gateway ns/name and waits until its
// HTTPRoutes are Exposed.
func servedPod(t *testing.T, ns, name string) client.ObjectKey {
	t.Helper()
	gw := client.ObjectKey{Namespace: ns, Name: name}
	startPod(t, gw)
	waitCondition(t, gw, v1.ConditionExposed, "True", v1.ReasonExposed)
	return gw
}

// apiGateway is an APIGateway exposed through HTTPRoutes at the listener
// section of the Gateway public; routes are YAML flow mappings.
func apiGateway(ns, name, section string, routes ...string) string {
	return fmt.Sprintf(`
apiVersion: example.com/v1
kind: APIGateway
metadata: {name: %s, namespace: %s}
spec:
  image: %s
  replicas: 2
  exposure:
    type: HTTPRoute
    httpRoute:
      parentRefs: [{namespace: %s, name: %s, sectionName: %s}]
  routes:
    - %s
`, name, ns, image, infraNamespace, gatewayName, section, strings.Join(routes, "\n    - "))
}

func route(host, path, pathType, service string, port int) string {
	return fmt.Sprintf("{host: %q, path: %q, pathType: %s, backendService: {name: %s, port: %d}}", host, path, pathType, service, port)
}

// TestRoutedThroughTraefik runs a real Gateway in front of the operator's
// gateways: Traefik programs the Gateway public from the API server and
// routes real requests, by the HTTPRoutes the operator wrote, to each
// gateway's nginx, which proxies them to echo backends. Each case checks
// what a user would: who answers which request, what the backend
// receives, and the Exposed condition, from Traefik's own status.
func TestRoutedThroughTraefik(t *testing.T) {
	installGatewayAPI(t, standardChannel(t))
	dns := dataplane.StartServiceDNS(t, "cluster.local")
	startOperator(t, dns)
	startTraefik(t)
	g := gatewayClient{roots: createGateway(t)}

	t.Run("the sample's routes, over the listener's TLS", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "cart-service", "127.0.0.1:8080")
		sample, err := os.ReadFile(filepath.Join(env.Root, "manifests", "samples", "apigateway_httproute.yaml"))
		require.NoError(t, err)
		apply(t, string(sample))
		shop := client.ObjectKey{Namespace: "default", Name: "shop-gateway"}
		startPod(t, shop)
		cur := waitCondition(t, shop, v1.ConditionExposed, "True", v1.ReasonExposed)
		exposed := time.Now()
		assertAcceptedByTraefik(t, shop)
		g.check(t, served("https", "shop.example.com", "/cart", "cart-service"))
		t.Logf("Traefik served the route %s after it reported it Accepted (Exposed since %s)",
			time.Since(exposed).Round(time.Millisecond), meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed).LastTransitionTime)
		g.checkAll(t,
			served("https", "shop.example.com", "/cart/", "cart-service"),
			served("https", "shop.example.com", "/cart/items/1?expand=true", "cart-service"),
			served("https", "shop.example.com", "/healthz", "cart-service"),
			// Exact and PathPrefix as Gateway API defines them, which is
			// what nginx does too: Traefik refuses these itself.
			notFound("https", "shop.example.com", "/healthz/", byTraefik),
			notFound("https", "shop.example.com", "/cartX", byTraefik),
			notFound("https", "shop.example.com", "/", byTraefik),
			notFound("https", "other.example.com", "/cart", byTraefik),
			// The route is attached to the listener https only.
			notFound("http", "shop.example.com", "/cart", byTraefik),
		)
	})

	t.Run("a listener whose allowedRoutes exclude the namespace", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "app", "127.0.0.1:9009")
		ns := testenv.NewNamespace(t, env.Client, "restricted")
		apply(t, apiGateway(ns, "app", listenerRestricted, route("app.restricted.example.com", "/", "Prefix", "app", 9009)))
		gw := client.ObjectKey{Namespace: ns, Name: "app"}
		startPod(t, gw)
		cur := waitCondition(t, gw, v1.ConditionExposed, "False", "NotAllowedByListeners")
		msg := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed).Message
		assert.Contains(t, msg, "at Gateway "+infraNamespace+"/"+gatewayName+" listener "+listenerRestricted+": Accepted=False NotAllowedByListeners")
		g.check(t, notFound("http", "app.restricted.example.com", "/", byTraefik))

		// Once the namespace is admitted, Traefik accepts the route.
		res := env.Kubectl(t.Context(), nil, "label", "namespace", ns, accessLabel+"=granted")
		require.NoError(t, res.Err)
		waitCondition(t, gw, v1.ConditionExposed, "True", v1.ReasonExposed)
		g.check(t, served("http", "app.restricted.example.com", "/x", "app"))
	})

	t.Run("two gateways sharing a host on one Gateway split it by path", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "users", "127.0.0.1:9001")
		dataplane.StartEchoBackend(t, "orders", "127.0.0.1:9002")
		// The host belongs to the namespace that claimed it first; its
		// gateways share it (another namespace would need a delegation).
		ns := testenv.NewNamespace(t, env.Client, "shared")
		apply(t, apiGateway(ns, "users", listenerHTTP, route("shared.example.com", "/users/", "Prefix", "users", 9001)))
		apply(t, apiGateway(ns, "orders", listenerHTTP, route("shared.example.com", "/orders/", "Prefix", "orders", 9002)))
		servedPod(t, ns, "users")
		servedPod(t, ns, "orders")
		g.checkAll(t,
			served("http", "shared.example.com", "/users/1", "users"),
			served("http", "shared.example.com", "/orders/7", "orders"),
			notFound("http", "shared.example.com", "/payments", byTraefik),
		)
		// Admission refuses one gateway's claim on the other's path,
		// naming the holder: both attach to the same Gateway.
		res := env.Kubectl(t.Context(), strings.NewReader(apiGateway(ns, "orders", listenerHTTP,
			route("shared.example.com", "/orders/", "Prefix", "orders", 9002),
			route("shared.example.com", "/users", "Prefix", "orders", 9002))), "apply", "-f", "-")
		require.Error(t, res.Err)
		assert.Contains(t, res.Stderr, "APIGateway "+ns+"/users")
	})

	t.Run("percent-encoded and unusual paths", func(t *testing.T) {
		startEchoBackends(t, 9100, "cafe", "docs", "internal", "public", "colon")
		ns := testenv.NewNamespace(t, env.Client, "encoded")
		const host = "encoded.example.com"
		apply(t, apiGateway(ns, "encoded", listenerHTTP,
			route(host, "/caf%C3%A9", "Exact", "cafe", 9100),
			route(host, "/docs/", "Prefix", "docs", 9101),
			route(host, "/internal/", "Prefix", "internal", 9102),
			route(host, "/public/", "Prefix", "public", 9103),
			route(host, "/a:b", "Exact", "colon", 9104)))
		servedPod(t, ns, "encoded")
		g.check(t, served("http", host, "/docs/x", "docs"))
		refused := func(target, by string) request {
			return request{scheme: "http", host: host, target: target, status: 400, by: by}
		}
		tests := map[string]request{
			// As the README promises: a path reaches the backend as
			// sent and decodes to the path that was matched ...
			"an encoded space":         served("http", host, "/docs/a%20b", "docs"),
			"an encoded percent":       served("http", host, "/docs/100%25", "docs"),
			"an encoded hash":          served("http", host, "/public/x%23y", "public"),
			"an encoded question mark": served("http", host, "/public/x%3Fy", "public"),
			"the query is not checked": served("http", host, "/public/x?next=%2F..%2Finternal", "public"),
			// ... and an encoded slash or backslash gets nginx's 400,
			// whichever case its hex digits are in.
			"an encoded slash":                    refused("/public/..%2Finternal/x", byNginx),
			"an encoded slash, lower case":        refused("/public/..%2finternal/x", byNginx),
			"an encoded backslash":                refused("/public/..%5Cinternal", byNginx),
			"a backslash":                         refused(`/public/..\internal`, byNginx),
			"an absolute form with encoded slash": refused("http://"+host+"/internal/..%2Fpublic/x", byNginx),
			// Traefik refuses a fragment in the request line itself.
			"a fragment": refused("/public/x#/../../internal", byTraefik),
			// Unlike nginx alone, Traefik normalises the path before it
			// routes (RFC 3986: unreserved characters decoded; dot and
			// empty segments resolved, encoded dots included) and
			// forwards the normalised path: the backend receives the path
			// it was routed by, rather than nginx refusing the request.
			"an encoded unreserved character": withURI(served("http", host, "/%64ocs/%7Ex", "docs"), "/docs/~x"),
			"a dot dot segment":               withURI(served("http", host, "/public/../internal/x", "internal"), "/internal/x"),
			"an encoded dot dot segment":      withURI(served("http", host, "/public/%2e%2E/internal/x", "internal"), "/internal/x"),
			"a dot segment":                   withURI(served("http", host, "/public/./x", "public"), "/public/x"),
			"an empty segment":                withURI(served("http", host, "//public//x", "public"), "/public/x"),
			// Traefik matches a path with reserved characters encoded as
			// sent, and the operator writes them decoded where Gateway
			// API allows: an encoded ':' does not match the route /a:b.
			"a reserved character":          served("http", host, "/a:b", "colon"),
			"an encoded reserved character": notFound("http", host, "/a%3Ab", byTraefik),
			// Gateway API's path match cannot hold é: the operator writes
			// it percent-encoded, and Traefik compares that with the
			// decoded request path, so the route is never matched
			// (documented in the README).
			"a path with a character Gateway API's match cannot hold": notFound("http", host, "/caf%C3%A9", byTraefik),
		}
		for name, r := range tests {
			t.Run(name, func(t *testing.T) { g.check(t, r) })
		}
	})

	t.Run("wildcard hosts", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "wide", "127.0.0.1:9012")
		dataplane.StartEchoBackend(t, "narrow", "127.0.0.1:9013")
		ns := testenv.NewNamespace(t, env.Client, "wild")
		apply(t, apiGateway(ns, "wide", listenerHTTP, route("*.wild.example.com", "/", "Prefix", "wide", 9012)))
		apply(t, apiGateway(ns, "narrow", listenerHTTP, route("*.b.wild.example.com", "/", "Prefix", "narrow", 9013)))
		servedPod(t, ns, "wide")
		servedPod(t, ns, "narrow")
		g.checkAll(t,
			served("http", "one.wild.example.com", "/x", "wide"),
			served("http", "a.b.wild.example.com", "/x", "narrow"),
			// Gateway API's wildcard matches any number of labels, the
			// gateway's (as an Ingress's) exactly one: Traefik sends the
			// request to the gateway, whose nginx answers 404.
			notFound("http", "a.c.wild.example.com", "/x", byNginx),
			notFound("http", "wild.example.com", "/x", byTraefik),
		)
	})

	t.Run("a route added is served", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "v1", "127.0.0.1:9005")
		dataplane.StartEchoBackend(t, "v2", "127.0.0.1:9006")
		ns := testenv.NewNamespace(t, env.Client, "added")
		apply(t, apiGateway(ns, "api", listenerHTTP, route("added.example.com", "/v1/", "Prefix", "v1", 9005)))
		gw := client.ObjectKey{Namespace: ns, Name: "api"}
		p := startPod(t, gw)
		waitCondition(t, gw, v1.ConditionExposed, "True", v1.ReasonExposed)
		g.checkAll(t,
			served("http", "added.example.com", "/v1/x", "v1"),
			notFound("http", "added.example.com", "/v2/x", byTraefik),
		)
		apply(t, apiGateway(ns, "api", listenerHTTP,
			route("added.example.com", "/v1/", "Prefix", "v1", 9005),
			route("added.example.com", "/v2/", "Prefix", "v2", 9006)))
		// Exposed again only once Traefik answered for the new generation
		// of the HTTPRoute.
		waitCondition(t, gw, v1.ConditionExposed, "True", v1.ReasonExposed)
		p.sync(t)
		g.checkAll(t,
			served("http", "added.example.com", "/v2/x", "v2"),
			served("http", "added.example.com", "/v1/x", "v1"),
		)
	})

	t.Run("switching to Ingress and back", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "web", "127.0.0.1:9007")
		ns := testenv.NewNamespace(t, env.Client, "switch")
		manifest := apiGateway(ns, "web", listenerHTTP, route("switch.example.com", "/", "Prefix", "web", 9007))
		apply(t, manifest)
		gw := servedPod(t, ns, "web")
		g.check(t, served("http", "switch.example.com", "/x", "web"))

		res := env.Kubectl(t.Context(), nil, "patch", "agw", "web", "-n", ns, "--type=merge",
			"-p", `{"spec":{"exposure":{"type":"Ingress","httpRoute":null}}}`)
		require.NoError(t, res.Err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			require.NoError(c, env.Client.Get(context.Background(), gw, &networkingv1.Ingress{}))
			cur := &v1.APIGateway{}
			require.NoError(c, env.Client.Get(context.Background(), gw, cur))
			assert.Nil(c, meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionExposed))
		}, waitFor, tick, "the Ingress in place of the HTTPRoute")
		assert.Empty(t, httpRoutesOf(t, gw))
		g.check(t, notFound("http", "switch.example.com", "/x", byTraefik))

		apply(t, manifest)
		waitCondition(t, gw, v1.ConditionExposed, "True", v1.ReasonExposed)
		g.check(t, served("http", "switch.example.com", "/x", "web"))
		err := env.Client.Get(t.Context(), gw, &networkingv1.Ingress{})
		assert.True(t, apierrors.IsNotFound(err), "the Ingress should be gone: %v", err)
	})

	// The rules of dataplane.RulesRoutes, with the requests
	// render.TestDataPlaneRules sends through nginx alone: Traefik passes
	// to the gateway what nginx serves, by the HTTPRoute's header, query
	// parameter and method matches, and answers 404 itself to the rest,
	// but where the table says the HTTPRoute is broader (nginx answers)
	// or narrower (Traefik answers a request nginx would serve).
	t.Run("rules: by header, query parameter and method", func(t *testing.T) {
		ports := startEchoBackends(t, 9020, dataplane.RulesServices...)
		ns := testenv.NewNamespace(t, env.Client, "rules")
		apply(t, apiGateway(ns, "rules", listenerHTTP, flowRoutes(t, dataplane.RulesRoutes(ports))...))
		servedPod(t, ns, "rules")
		for name, tc := range dataplane.RuleRequests() {
			r := notFound("http", dataplane.RulesHost, tc.Target, byTraefik)
			switch {
			case tc.Narrower != "":
			case tc.Service != "":
				r = served("http", dataplane.RulesHost, tc.Target, tc.Service)
			case tc.Broader != "":
				r.by = byNginx
			}
			r.method = tc.Method
			r.headers = dataplane.HeaderLines(tc.Header)
			t.Run(name, func(t *testing.T) { g.check(t, r) })
		}
	})

	t.Run("a gateway with 100 paths on one host", func(t *testing.T) {
		dataplane.StartEchoBackend(t, "even", "127.0.0.1:9010")
		dataplane.StartEchoBackend(t, "odd", "127.0.0.1:9011")
		ns := testenv.NewNamespace(t, env.Client, "many")
		var routes []string
		for i := range 100 {
			svc, port := "even", 9010
			if i%2 == 1 {
				svc, port = "odd", 9011
			}
			routes = append(routes, route("many.example.com", fmt.Sprintf("/p%03d", i), "Prefix", svc, port))
		}
		apply(t, apiGateway(ns, "many", listenerHTTP, routes...))
		gw := servedPod(t, ns, "many")
		hr := httpRoutesOf(t, gw)
		require.Len(t, hr, 1)
		assert.LessOrEqual(t, len(hr[0].Spec.Rules), 16, "Gateway API allows 16 rules")
		matches := 0
		for _, r := range hr[0].Spec.Rules {
			matches += len(r.Matches)
		}
		assert.Equal(t, 100, matches, "one match per path")
		for i := range 100 {
			svc := map[bool]string{true: "even", false: "odd"}[i%2 == 0]
			g.check(t, served("http", "many.example.com", fmt.Sprintf("/p%03d/x", i), svc))
		}
		g.checkAll(t,
			notFound("http", "many.example.com", "/p100", byTraefik),
			notFound("http", "many.example.com", "/p0000", byTraefik),
		)
	})

	t.Run("redirects", func(t *testing.T) { redirectsThroughTraefik(t) })
	t.Run("cors", func(t *testing.T) { corsThroughTraefik(t) })
}

// startEchoBackends starts an echo backend for each of services, on
// 127.0.0.1 at ports from base, and returns each one's port.
func startEchoBackends(t *testing.T, base int32, services ...string) map[string]int32 {
	ports := map[string]int32{}
	for i, s := range services {
		ports[s] = base + int32(i)
		dataplane.StartEchoBackend(t, s, fmt.Sprintf("127.0.0.1:%d", ports[s]))
	}
	return ports
}

// flowRoutes are routes as apiGateway's YAML flow mappings (JSON).
func flowRoutes(t *testing.T, routes []v1.Route) []string {
	flows := make([]string, len(routes))
	for i, r := range routes {
		flow, err := json.Marshal(r)
		require.NoError(t, err)
		flows[i] = string(flow)
	}
	return flows
}

func withURI(r request, uri string) request {
	r.uri = uri
	return r
}

// assertAcceptedByTraefik: gw's HTTPRoutes carry Traefik's own verdict,
// Accepted and ResolvedRefs, for their current generation.
func assertAcceptedByTraefik(t *testing.T, gw client.ObjectKey) {
	t.Helper()
	routes := httpRoutesOf(t, gw)
	require.NotEmpty(t, routes)
	for _, r := range routes {
		require.Len(t, r.Status.Parents, 1)
		s := r.Status.Parents[0]
		assert.Equal(t, gatewayv1.GatewayController(traefikControler), s.ControllerName)
		for _, typ := range []string{string(gatewayv1.RouteConditionAccepted), string(gatewayv1.RouteConditionResolvedRefs)} {
			c := meta.FindStatusCondition(s.Conditions, typ)
			if assert.NotNil(t, c, "no %s from Traefik", typ) {
				assert.Equal(t, "True", string(c.Status), "%s: %s", typ, c.Message)
				assert.Equal(t, r.Generation, c.ObservedGeneration)
			}
		}
	}
}

// httpRoutesOf are the HTTPRoutes the operator made for gw.
func httpRoutesOf(t *testing.T, gw client.ObjectKey) []gatewayv1.HTTPRoute {
	t.Helper()
	routes, err := listHTTPRoutes(t.Context(), gw)
	require.NoError(t, err)
	return routes
}

// listHTTPRoutes lists the HTTPRoutes the operator made for gw.
func listHTTPRoutes(ctx context.Context, gw client.ObjectKey) ([]gatewayv1.HTTPRoute, error) {
	var list gatewayv1.HTTPRouteList
	err := env.Client.List(ctx, &list, client.InNamespace(gw.Namespace), client.MatchingLabels{controller.LabelInstance: gw.Name})
	return list.Items, err
}
