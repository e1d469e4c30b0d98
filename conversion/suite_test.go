package conversion_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/conversion"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

// These tests run the real kube-apiserver against the operator's webhook
// server: the CRD converts through it (envtest points the CRD's conversion
// webhook at the local server; IgnoreSchemeConvertible because our types
// convert through our own handler, not Hub/Convertible methods) and
// the admission webhooks from manifests/webhook are installed beside it, so
// v1alpha1 writes take the same path as in a cluster.

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	// go test -fuzz runs the fuzz target in worker processes that run no
	// other test, so they need no control plane of their own.
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	testenv.Main(m, &env, testenv.Options{Webhooks: envtest.WebhookInstallOptions{
		Paths:                   []string{"../manifests/webhook"},
		IgnoreSchemeConvertible: true,
	}})
}

const (
	crdName      = "apigateways.example.com"
	defaultImage = "registry.example.com/gateway:1.0"
)

// startWebhooks runs the operator's webhooks, conversion included, until
// the test ends.
func startWebhooks(t *testing.T) {
	t.Helper()
	operatortest.Start(t, env, operatortest.Options{Webhooks: &webhooks.Options{DefaultImage: defaultImage, DefaultReplicas: 1}})
}

func hubRoute(host, path string, pathType v1.PathType, svc string, port int32) v1.Route {
	return v1.Route{Host: v1.Hostname(host), Path: v1.HTTPPath(path), PathType: pathType, BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
}

// richGateway has every kind of v1-only data.
func richGateway(ns, name, host string) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{
			Image:    "nginx:1.27",
			Replicas: ptr.To[int32](2),
			Routes: []v1.Route{
				hubRoute(host, "/users/", v1.PathTypeExact, "user-service", 8080),
				hubRoute(host, "/products/", v1.PathTypePrefix, "product-service", 8081),
			},
			TLS:              []v1.GatewayTLS{{Hosts: []string{host}, SecretName: "api-tls"}},
			IngressClassName: ptr.To("nginx"),
			Resources: &corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			},
			AccessLog: &v1.AccessLog{Format: v1.AccessLogJSON},
		},
	}
}

func alphaGateway(ns, name, host string) *v1alpha1.APIGateway {
	return &v1alpha1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.APIGatewaySpec{
			Image:    "nginx:1.27",
			Replicas: ptr.To[int32](2),
			Routes:   []v1alpha1.Route{{Host: v1.Hostname(host), Prefix: "/users/", ServiceName: "user-service", ServicePort: 8080}},
		},
	}
}

// assertSameSpec compares specs the way the API server does (quantities by
// value) and prints both on failure.
func assertSameSpec(t *testing.T, want, got v1.APIGatewaySpec) {
	t.Helper()
	assert.True(t, apiequality.Semantic.DeepEqual(want, got), "spec differs:\nwant %+v\ngot  %+v", want, got)
}

// kubectlGet runs kubectl get -o json for one resource (with its version,
// such as apigateways.v1.example.com) and decodes the output into out.
func kubectlGet(t *testing.T, out any, args ...string) string {
	t.Helper()
	res := env.Kubectl(t.Context(), nil, append([]string{"get", "-o", "json"}, args...)...)
	require.NoError(t, res.Err)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), out))
	return res.Stderr
}

func TestCreatedInOneVersionReadsInTheOther(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")

	t.Run("v1alpha1 reads as v1", func(t *testing.T) {
		require.NoError(t, env.Client.Create(ctx, alphaGateway(ns, "alpha", "alpha.example.com")))
		want := v1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Routes: []v1.Route{
			hubRoute("alpha.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080),
		}}

		got := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alpha"}, got))
		assertSameSpec(t, want, got.Spec)
		assert.NotContains(t, got.Annotations, conversion.DataAnnotation)

		var printed v1.APIGateway
		kubectlGet(t, &printed, "apigateways.v1.example.com", "alpha", "-n", ns)
		assert.Equal(t, "example.com/v1", printed.APIVersion)
		assertSameSpec(t, want, printed.Spec)
	})

	t.Run("v1 reads as v1alpha1", func(t *testing.T) {
		require.NoError(t, env.Client.Create(ctx, richGateway(ns, "hub", "hub.example.com")))
		want := v1alpha1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Routes: []v1alpha1.Route{
			{Host: "hub.example.com", Prefix: "/users/", ServiceName: "user-service", ServicePort: 8080},
			{Host: "hub.example.com", Prefix: "/products/", ServiceName: "product-service", ServicePort: 8081},
		}}

		got := &v1alpha1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hub"}, got))
		assert.Equal(t, want, got.Spec)
		assert.Contains(t, got.Annotations, conversion.DataAnnotation)

		var printed v1alpha1.APIGateway
		stderr := kubectlGet(t, &printed, "apigateways.v1alpha1.example.com", "hub", "-n", ns)
		assert.Equal(t, "example.com/v1alpha1", printed.APIVersion)
		assert.Equal(t, want, printed.Spec)
		assert.Equal(t, got.Annotations, printed.Annotations)
		assert.Contains(t, stderr, "example.com/v1alpha1 APIGateway is deprecated")
	})
}

func TestV1DataSurvivesV1alpha1Writes(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	key := client.ObjectKey{Namespace: ns, Name: "rich"}
	created := richGateway(ns, "rich", "api.example.com")
	require.NoError(t, env.Client.Create(ctx, created))
	want := created.Spec

	// Read-modify-write through v1alpha1: the image changes, nothing else.
	alpha := &v1alpha1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, key, alpha))
	alpha.Spec.Image = "nginx:1.28"
	require.NoError(t, env.Client.Update(ctx, alpha))
	want.Image = "nginx:1.28"

	got := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, key, got))
	assertSameSpec(t, want, got.Spec)
	assert.NotContains(t, got.Annotations, conversion.DataAnnotation)
	assert.Equal(t, int64(2), got.Generation)

	var printed v1.APIGateway
	kubectlGet(t, &printed, "apigateways.v1.example.com", "rich", "-n", ns)
	assert.Equal(t, v1.PathTypeExact, printed.Spec.Routes[0].PathType)
	assert.Equal(t, want.TLS, printed.Spec.TLS)

	t.Run("an unchanged v1alpha1 write changes nothing", func(t *testing.T) {
		alpha := &v1alpha1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, key, alpha))
		require.NoError(t, env.Client.Update(ctx, alpha))
		after := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, key, after))
		assert.Equal(t, got.Generation, after.Generation)
		assert.Equal(t, got.ResourceVersion, after.ResourceVersion, "a no-op write must not store anything")
	})

	t.Run("kubectl merge patch through v1alpha1", func(t *testing.T) {
		res := env.Kubectl(ctx, nil, "patch", "apigateways.v1alpha1.example.com", "rich", "-n", ns,
			"--type", "merge", "-p", `{"spec":{"replicas":3}}`)
		require.NoError(t, res.Err)
		want.Replicas = ptr.To[int32](3)
		after := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, key, after))
		assertSameSpec(t, want, after.Spec)
	})

	t.Run("an edited route gets the v1alpha1 meaning, the rest stays", func(t *testing.T) {
		res := env.Kubectl(ctx, nil, "patch", "apigateways.v1alpha1.example.com", "rich", "-n", ns,
			"--type", "json", "-p", `[{"op":"replace","path":"/spec/routes/0/prefix","value":"/people/"}]`)
		require.NoError(t, res.Err)
		want.Routes[0].Path, want.Routes[0].PathType = "/people/", v1.PathTypePrefix
		after := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, key, after))
		assertSameSpec(t, want, after.Spec)
	})
}

func TestV1alpha1WritesAreAdmittedAsV1(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")

	t.Run("defaults", func(t *testing.T) {
		bare := &v1alpha1.APIGateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"},
			Spec: v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{
				// A host of its own: the first namespace to route a host
				// owns it, and another test's namespace has api.example.com.
				{Host: "API.Bare.example.com.", ServiceName: "api", ServicePort: 80},
			}},
		}
		require.NoError(t, env.Client.Create(ctx, bare))
		assert.Equal(t, defaultImage, string(bare.Spec.Image), "the create response is the admitted object, in v1alpha1")

		got := &v1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(bare), got))
		assertSameSpec(t, v1.APIGatewaySpec{Image: defaultImage, Replicas: ptr.To[int32](1), Routes: []v1.Route{
			hubRoute("api.bare.example.com", "/", v1.PathTypePrefix, "api", 80),
		}}, got.Spec)

		alpha := &v1alpha1.APIGateway{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(bare), alpha))
		assert.NotContains(t, alpha.Annotations, conversion.DataAnnotation, "the defaults are all v1alpha1 can say")
	})

	// Rejections name the field. They come from the v1alpha1 schema, which
	// runs after the mutating webhook and says what package validation
	// says of a route (controller's TestV1alpha1SchemaRepeatsV1Rules); the
	// conflict below is the validating webhook's alone, and proves
	// v1alpha1 writes reach it.
	rejects := map[string]struct {
		route v1alpha1.Route
		field string
		want  []string
	}{
		"host that is an IP address behind a wildcard (schema)": {
			route: v1alpha1.Route{Host: "*.10.0.0.1", Prefix: "/", ServiceName: "api", ServicePort: 80},
			field: "spec.routes[0].host",
			want:  []string{`spec.routes[0].host: Invalid value: "*.10.0.0.1": must be a DNS name, not an IP address`},
		},
		"invalid host (schema, after lower-casing by the webhook)": {
			route: v1alpha1.Route{Host: "Bad_Host", Prefix: "/", ServiceName: "api", ServicePort: 80},
			field: "spec.routes[0].host",
			want:  []string{`spec.routes[0].host: Invalid value: "bad_host"`},
		},
		"prefix that would inject proxy configuration (schema)": {
			route: v1alpha1.Route{Host: "api.example.com", Prefix: "/a;return 200", ServiceName: "api", ServicePort: 80},
			field: "spec.routes[0].prefix",
			want:  []string{`spec.routes[0].prefix: Invalid value: "/a;return 200"`},
		},
	}
	for name, tc := range rejects {
		t.Run(name, func(t *testing.T) {
			bad := &v1alpha1.APIGateway{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
				Spec:       v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{tc.route}},
			}
			err := env.Client.Create(ctx, bad)
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			assert.Contains(t, causeFields(t, err), tc.field)

			manifest, err := yaml.Marshal(map[string]any{
				"apiVersion": "example.com/v1alpha1", "kind": "APIGateway",
				"metadata": map[string]any{"name": "bad", "namespace": ns},
				"spec":     bad.Spec,
			})
			require.NoError(t, err)
			res := env.Kubectl(ctx, bytes.NewReader(manifest), "apply", "-f", "-")
			require.Error(t, res.Err)
			for _, want := range tc.want {
				assert.Contains(t, res.Stderr, want)
			}
		})
	}

	t.Run("route another gateway serves (webhook, reads other gateways)", func(t *testing.T) {
		// Routes conflict only with the same pathType and ingress class:
		// a v1alpha1 route is a Prefix route of the default class.
		require.NoError(t, env.Client.Create(ctx, alphaGateway(ns, "owner", "taken.example.com")))
		// The webhook sees other gateways through the manager's cache, which
		// learns of "owner" shortly after its creation.
		var err error
		poll := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err = env.Client.Create(ctx, alphaGateway(ns, "intruder", "taken.example.com"))
			if err == nil {
				return false, fmt.Errorf("a v1alpha1 route served by another gateway was admitted")
			}
			return apierrors.IsInvalid(err), nil
		})
		require.NoError(t, poll, "last error: %v", err)
		assert.Contains(t, causeFields(t, err), "spec.routes[0]")
		assert.Contains(t, err.Error(), "owner")
	})
}

func causeFields(t *testing.T, err error) []string {
	t.Helper()
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	require.NotNil(t, status.Status().Details)
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

// v1 routes are a map keyed by host, path and pathType; v1alpha1 routes
// stay atomic, because an Exact and a Prefix route on one path are one
// host and prefix in v1alpha1. Server-side apply tracks each manager's
// fields in its own version, so once a v1alpha1 client has applied the
// object, every v1 write converts it to v1alpha1 too: keyed by host and
// prefix there, such a v1 object would make every write fail ("duplicate
// entries for key").
func TestV1WritesBesideAV1alpha1Applier(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	apply := func(version, manager, spec string, args ...string) testenv.Result {
		manifest := "apiVersion: example.com/" + version + "\nkind: APIGateway\nmetadata: {name: mixed, namespace: " + ns + "}\nspec:\n" + spec
		return env.Kubectl(ctx, strings.NewReader(manifest), append([]string{"apply", "--server-side", "--field-manager=" + manager, "-f", "-"}, args...)...)
	}
	res := apply("v1alpha1", "legacy", "  image: nginx:1.27\n  replicas: 2\n  routes:\n  - {host: mixed.example.com, prefix: /users, serviceName: a, servicePort: 80}\n")
	require.NoError(t, res.Err, res.Stderr)

	// The v1alpha1 applier owns the routes as a whole: taking them over
	// is a forced apply, and it must then succeed.
	res = apply("v1", "hub", "  routes:\n  - {host: mixed.example.com, path: /users, backendService: {name: a, port: 80}}\n"+
		"  - {host: mixed.example.com, path: /users, pathType: Exact, backendService: {name: b, port: 80}}\n", "--force-conflicts")
	require.NoError(t, res.Err, res.Stderr)
	res = apply("v1", "hub", "  routes:\n  - {host: mixed.example.com, path: /users, backendService: {name: a, port: 81}}\n"+
		"  - {host: mixed.example.com, path: /users, pathType: Exact, backendService: {name: b, port: 80}}\n")
	require.NoError(t, res.Err, res.Stderr)

	got := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mixed"}, got))
	assert.Equal(t, []v1.Route{
		hubRoute("mixed.example.com", "/users", v1.PathTypePrefix, "a", 81),
		hubRoute("mixed.example.com", "/users", v1.PathTypeExact, "b", 80),
	}, got.Spec.Routes)

	// And the v1alpha1 client can still write it (the image only).
	res = env.Kubectl(ctx, nil, "patch", "apigateways.v1alpha1.example.com", "mixed", "-n", ns, "--type", "merge", "-p", `{"spec":{"image":"nginx:1.28"}}`)
	require.NoError(t, res.Err, res.Stderr)
}

func TestListsInBothVersions(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	// More than the handler converts on the request's goroutine (64), so
	// the API server reads a review converted in parallel.
	const n = 70
	for i := range n {
		name, host := fmt.Sprintf("gw-%02d", i), fmt.Sprintf("h%d.example.com", i)
		if i%2 == 0 {
			require.NoError(t, env.Client.Create(ctx, richGateway(ns, name, host)))
		} else {
			require.NoError(t, env.Client.Create(ctx, alphaGateway(ns, name, host)))
		}
	}

	hubs := &v1.APIGatewayList{}
	require.NoError(t, env.Client.List(ctx, hubs, client.InNamespace(ns)))
	require.Len(t, hubs.Items, n)
	alphas := &v1alpha1.APIGatewayList{}
	require.NoError(t, env.Client.List(ctx, alphas, client.InNamespace(ns)))
	require.Len(t, alphas.Items, n)
	for i := range n {
		hub, alpha := hubs.Items[i], alphas.Items[i]
		require.Equal(t, hub.Name, alpha.Name)
		written := i%2 == 0 // through v1, with v1-only data
		assert.Equal(t, written, hub.Spec.Routes[0].PathType == v1.PathTypeExact, hub.Name)
		assert.Equal(t, written, len(hub.Spec.TLS) == 1, hub.Name)
		assert.Equal(t, written, alpha.Annotations[conversion.DataAnnotation] != "", alpha.Name)
		assert.NotContains(t, hub.Annotations, conversion.DataAnnotation, hub.Name)
		assert.Equal(t, hub.Spec.Routes[0].Host, alpha.Spec.Routes[0].Host)
	}

	for version, check := range map[string]func(item map[string]any){
		"v1": func(item map[string]any) {
			routes := item["spec"].(map[string]any)["routes"].([]any)
			assert.Contains(t, []any{"Exact", "Prefix"}, routes[0].(map[string]any)["pathType"])
		},
		"v1alpha1": func(item map[string]any) {
			routes := item["spec"].(map[string]any)["routes"].([]any)
			assert.Equal(t, "/users/", routes[0].(map[string]any)["prefix"])
		},
	} {
		var list struct {
			Items []map[string]any `json:"items"`
		}
		kubectlGet(t, &list, "apigateways."+version+".example.com", "-n", ns)
		require.Len(t, list.Items, n, version)
		for _, item := range list.Items {
			assert.Equal(t, "example.com/"+version, item["apiVersion"])
			check(item)
		}
	}
}

// TestConversionEndpointSurvivesBadInput posts what the API server never
// sends straight to the webhook server, then checks real conversion still
// works.
func TestConversionEndpointSurvivesBadInput(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(env.Webhooks.LocalServingCAData))
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + net.JoinHostPort(env.Webhooks.LocalServingHost, strconv.Itoa(env.Webhooks.LocalServingPort)) + "/convert"

	post := func(body string) (int, apiextensionsv1.ConversionReview) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		var out apiextensionsv1.ConversionReview
		if resp.StatusCode == http.StatusOK {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		}
		return resp.StatusCode, out
	}
	request := func(desired, object string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1",` +
			`"desiredAPIVersion":"` + desired + `","objects":[` + object + `]}}`
	}

	code, _ := post("{not json")
	assert.Equal(t, http.StatusBadRequest, code)

	for desired, tc := range map[string]struct{ object, message string }{
		"example.com/v9": {
			object:  `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"x"}}`,
			message: `cannot convert to desiredAPIVersion "example.com/v9"`,
		},
		"example.com/v1": {
			object:  `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`,
			message: `objects[0] (x): apiVersion "v1", kind "Secret" is not an APIGateway`,
		},
	} {
		code, out := post(request(desired, tc.object))
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, metav1.StatusFailure, out.Response.Result.Status)
		assert.Equal(t, "u1", string(out.Response.UID))
		assert.Contains(t, out.Response.Result.Message, tc.message)
	}

	require.NoError(t, env.Client.Create(ctx, richGateway(ns, "after", "after.example.com")))
	alpha := &v1alpha1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "after"}, alpha))
	assert.Equal(t, v1.HTTPPath("/users/"), alpha.Spec.Routes[0].Prefix)
}

// TestCRDManifestConvertsThroughWebhook checks the deployable CRD, built
// by kustomize from the generated base and our patch.
func TestCRDManifestConvertsThroughWebhook(t *testing.T) {
	res := env.Kubectl(t.Context(), nil, "kustomize", env.Root+"/manifests/crd")
	require.NoError(t, res.Err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(res.Stdout), crd))
	require.NotNil(t, crd.Spec.Conversion)
	assert.Equal(t, apiextensionsv1.WebhookConverter, crd.Spec.Conversion.Strategy)
	require.NotNil(t, crd.Spec.Conversion.Webhook)
	assert.Equal(t, []string{"v1"}, crd.Spec.Conversion.Webhook.ConversionReviewVersions)
	assert.Equal(t, &apiextensionsv1.ServiceReference{
		Namespace: "apigateway-operator-system", Name: "apigateway-operator-webhook", Path: ptr.To("/convert"),
	}, crd.Spec.Conversion.Webhook.ClientConfig.Service)
	for _, v := range crd.Spec.Versions {
		assert.Equal(t, v.Name == "v1", v.Storage, "v1 is the only storage version")
	}
}

// setStorageVersion makes version the CRD's storage version and returns
// once the API server serves with the changed CRD. The API server picks up a
// CRD change asynchronously; the same update changes v1alpha1's
// deprecation warning to a marker, and a v1alpha1 request that carries the
// marker was served by the new storage.
func setStorageVersion(t *testing.T, ns, version string) {
	t.Helper()
	ctx := t.Context()
	marker := fmt.Sprintf("storage is %s (%d)", version, time.Now().UnixNano())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd))
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		v.Storage = v.Name == version
		if v.Name == "v1alpha1" {
			v.DeprecationWarning = ptr.To(marker)
		}
	}
	require.NoError(t, env.Client.Update(ctx, crd))
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		res := env.Kubectl(ctx, nil, "get", "apigateways.v1alpha1.example.com", "-n", ns)
		return res.Err == nil && strings.Contains(res.Stderr, marker), nil
	})
	require.NoError(t, err, "the API server did not pick up storage version %s", version)
}

// TestStorageMigration writes objects while v1alpha1 is the storage
// version, switches storage back to v1, and reads, updates and migrates
// them. It changes the shared CRD, so it puts it back when it ends.
func TestStorageMigration(t *testing.T) {
	startWebhooks(t)
	ctx, ns := t.Context(), testenv.NewNamespace(t, env.Client, "conversion")
	original := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: crdName}, original))
	t.Cleanup(func() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: crdName}, crd); err != nil {
			t.Errorf("restoring the CRD: %v", err)
			return
		}
		crd.Spec.Versions = original.Spec.Versions
		if err := env.Client.Update(context.Background(), crd); err != nil {
			t.Errorf("restoring the CRD: %v", err)
		}
	})

	setStorageVersion(t, ns, "v1alpha1")
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd))
	require.Contains(t, crd.Status.StoredVersions, "v1alpha1")

	rich := richGateway(ns, "rich", "rich.example.com")
	require.NoError(t, env.Client.Create(ctx, rich))
	require.NoError(t, env.Client.Create(ctx, alphaGateway(ns, "plain", "plain.example.com")))
	// Updated while stored as v1alpha1, too.
	stored := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rich), stored))
	stored.Spec.Replicas = ptr.To[int32](4)
	require.NoError(t, env.Client.Update(ctx, stored))
	want := rich.Spec
	want.Replicas = ptr.To[int32](4)

	setStorageVersion(t, ns, "v1")

	got := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rich), got))
	assertSameSpec(t, want, got.Spec)
	assert.NotContains(t, got.Annotations, conversion.DataAnnotation)

	plain := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, plain))
	assertSameSpec(t, v1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Routes: []v1.Route{
		hubRoute("plain.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080),
	}}, plain.Spec)

	// Update: the image changes, the v1-only data stays.
	got.Spec.Image = "nginx:1.28"
	require.NoError(t, env.Client.Update(ctx, got))
	want.Image = "nginx:1.28"
	after := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rich), after))
	assertSameSpec(t, want, after.Spec)

	// Migrate: rewrite every object in the storage version, then drop
	// v1alpha1 from the stored versions, as a storage migration does.
	list := &v1.APIGatewayList{}
	require.NoError(t, env.Client.List(ctx, list, client.InNamespace(ns)))
	require.Len(t, list.Items, 2)
	for i := range list.Items {
		require.NoError(t, env.Client.Update(ctx, &list.Items[i]))
	}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd))
	crd.Status.StoredVersions = []string{"v1"}
	require.NoError(t, env.Client.Status().Update(ctx, crd))

	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rich), after))
	assertSameSpec(t, want, after.Spec)
	alpha := &v1alpha1.APIGateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rich), alpha))
	assert.Equal(t, v1.Image("nginx:1.28"), alpha.Spec.Image)
}
