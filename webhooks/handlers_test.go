package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/routeindex"
	"example.com/apigateway-operator/test/testenv"
)

// These tests drive the handlers as controller-runtime's webhook server
// does, with a fake client standing in for the manager's Namespace cache
// and a client-go indexer for the APIGateway informer's; the envtest suite
// runs the same handlers behind the real API server.

func fakeReader(t testing.TB, funcs *interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(testenv.NewScheme()).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func defaultNamespace(annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: annotations}}
}

// testDefaults are the operator's flags in these tests.
var testDefaults = defaults.Operator{Image: "registry.example/nginx:1.27", Replicas: 3}

func TestDefaulterReadsTheNamespaceAnnotation(t *testing.T) {
	failingGet := &interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("cache unavailable")
	}}
	tests := map[string]struct {
		image      string
		ns, live   *corev1.Namespace
		funcs      *interceptor.Funcs
		wantImage  string // "": no image in the patch
		wantSource string
		wantErr    string
	}{
		"annotation wins over the flag default": {
			ns:        defaultNamespace(map[string]string{v1.DefaultImageAnnotation: "team/nginx:2"}),
			wantImage: "team/nginx:2", wantSource: "namespace-annotation",
		},
		"flag default without the annotation": {
			ns:        defaultNamespace(nil),
			wantImage: testDefaults.Image, wantSource: "operator-flag",
		},
		"flag default when the namespace is found nowhere": {
			wantImage: testDefaults.Image, wantSource: "operator-flag",
		},
		"a namespace the cache has not seen yet is read live": {
			live:      defaultNamespace(map[string]string{v1.DefaultImageAnnotation: "live/nginx:3"}),
			wantImage: "live/nginx:3", wantSource: "namespace-annotation",
		},
		"a set image is kept, and the namespace is not read": {
			image: "mine:1", funcs: failingGet,
		},
		"a failed read is an error, not a guess": {
			funcs:   failingGet,
			wantErr: `reading the example.com/default-gateway-image annotation of namespace "default": cache unavailable`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var objs []client.Object
			if tc.ns != nil {
				objs = append(objs, tc.ns)
			}
			var live []client.Object
			if tc.live != nil {
				live = append(live, tc.live)
			}
			h := mutatingHandler{&Defaulter{Namespaces: fakeReader(t, tc.funcs, objs...), LiveNamespaces: fakeReader(t, nil, live...), Operator: testDefaults}}
			gw := validGateway()
			gw.Spec.Image = v1.Image(tc.image)
			raw, err := json.Marshal(gw)
			require.NoError(t, err)
			resp := h.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Operation: admissionv1.Create, Namespace: "default", Name: "gw", Object: runtime.RawExtension{Raw: raw},
			}})
			if tc.wantErr != "" {
				require.False(t, resp.Allowed)
				assert.Contains(t, resp.Result.Message, tc.wantErr)
				return
			}
			require.True(t, resp.Allowed, "%+v", resp.Result)
			var image string
			for _, op := range resp.Patches {
				if op.Path == "/spec/image" {
					image, _ = op.Value.(string)
				}
			}
			assert.Equal(t, tc.wantImage, image)
			assert.Equal(t, tc.wantSource, resp.AuditAnnotations[AuditImageSource])
		})
	}
}

// The patch holds only what the defaulter changed: fields it did not touch
// are not rewritten, and fields the Go type does not know (from a newer
// CRD) are not dropped.
func TestDefaulterPatchIsMinimal(t *testing.T) {
	wh := mutatingWebhook(fakeReader(t, nil, defaultNamespace(nil)))

	raw := `{"apiVersion":"example.com/v1","kind":"APIGateway",
	  "metadata":{"name":"gw","namespace":"default","uid":"0d1c","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z",
	    "annotations":{},"labels":{"a":"b"},
	    "managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
	  "spec":{"futureField":{"x":[1,2]},"ingressClassName":"nginx",
	    "routes":[{"host":"API.example.com.","path":"/","pathType":"Prefix","weight":5,"backendService":{"name":"svc","port":80}},
	              {"host":"api.example.com","path":"/b/","pathType":"Exact","backendService":{"name":"svc","port":80,"appProtocol":"h2c"}}],
	    "resources":{"limits":{"cpu":"500m","memory":"1Gi"}}},
	  "status":{"observedGeneration":0,"conditions":[]}}`

	resp := wh.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Update, Namespace: "default", Name: "gw",
		Object: runtime.RawExtension{Raw: []byte(raw)},
	}})
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.ElementsMatch(t, []jsonpatch.Operation{
		{Operation: "add", Path: "/spec/image", Value: testDefaults.Image},
		{Operation: "add", Path: "/spec/replicas", Value: json.Number("3")},
		{Operation: "replace", Path: "/spec/routes/0/host", Value: "api.example.com"},
	}, asSent(t, resp.Patches))

	// An object that needs nothing gets no patch at all.
	defaulted := applyPatch(t, raw, resp.Patches)
	assert.Contains(t, string(defaulted), `"futureField":{"x":[1,2]}`)
	resp = wh.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "2", Operation: admissionv1.Update, Namespace: "default", Name: "gw",
		Object: runtime.RawExtension{Raw: defaulted},
	}})
	require.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
	assert.Nil(t, resp.PatchType)
}

// On create, as on update, the patch is the table's operations and
// nothing else: no status, no member the request did not hold.
func TestDefaulterPatchOnCreate(t *testing.T) {
	wh := mutatingWebhook(fakeReader(t, nil, defaultNamespace(nil)))
	raw := `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"default"},
	  "spec":{"image":"nginx:1.27","routes":[{"host":"api.example.com","path":"/","pathType":"Prefix","backendService":{"name":"svc","port":80}}]}}`
	resp := wh.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Namespace: "default", Name: "gw",
		Object: runtime.RawExtension{Raw: []byte(raw)},
	}})
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, []jsonpatch.Operation{{Operation: "add", Path: "/spec/replicas", Value: json.Number("3")}}, asSent(t, resp.Patches))
	assert.Equal(t, "replicas", resp.AuditAnnotations[AuditDefaults])
}

// asSent is ops as the API server reads them: JSON, numbers as numbers.
func asSent(t *testing.T, ops []jsonpatch.Operation) []jsonpatch.Operation {
	t.Helper()
	data, err := json.Marshal(ops)
	require.NoError(t, err)
	var out []jsonpatch.Operation
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	require.NoError(t, d.Decode(&out))
	return out
}

func mutatingWebhook(reader client.Reader) *admission.Webhook {
	return (&admission.Webhook{Handler: mutatingHandler{&Defaulter{Namespaces: reader, Operator: testDefaults}}}).WithRecoverPanic(false)
}

func validatingWebhook(gateways routeindex.Finder) *admission.Webhook {
	return (&admission.Webhook{Handler: validatingHandler{&Validator{Gateways: gateways}}}).WithRecoverPanic(false)
}

// testFinder is the production routeindex.Finder over an indexer holding
// gws, its host namespaces counted once as the operator keeps them.
func testFinder(t testing.TB, gws ...*v1.APIGateway) routeindex.Finder {
	t.Helper()
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, routeindex.Indexers())
	for _, gw := range gws {
		require.NoError(t, indexer.Add(gw))
	}
	return routeindex.NewStaticFinder(indexer)
}

// failingFinder is a cache that cannot answer (the first call fails).
type failingFinder struct{ routeindex.Finder }

func (failingFinder) Serving(context.Context, string) ([]*v1.APIGateway, error) {
	return nil, errors.New("cache unavailable")
}

func applyPatch(t *testing.T, doc string, ops []jsonpatch.Operation) []byte {
	t.Helper()
	data, err := json.Marshal(ops)
	require.NoError(t, err)
	patch, err := jsonpatchv5.DecodePatch(data)
	require.NoError(t, err)
	out, err := patch.Apply([]byte(doc))
	require.NoError(t, err)
	return out
}

type stubPorts map[string][]int32

func (s stubPorts) Ports(context.Context, string, []string) map[string][]int32 { return s }

func TestValidatorHandler(t *testing.T) {
	legacy := validGateway()
	legacy.Name = "legacy"
	legacy.Spec.Routes = []v1.Route{route("/orders/", "s", 80), route("/a,b=c/", "s", 80)}
	legacy.Spec.TLS = nil
	elsewhere := legacy.DeepCopy()
	elsewhere.Name, elsewhere.Namespace = "elsewhere", "other"
	elsewhere.Spec.Routes = []v1.Route{route("/shop/", "s", 80)}
	// The same namespace and name as the gateway under test, in another
	// namespace: another gateway.
	namesake := elsewhere.DeepCopy()
	namesake.Name = "gw"
	namesake.Spec.Routes = []v1.Route{route("/cart", "s", 80)}
	// Another ingress class: it never conflicts.
	otherClass := legacy.DeepCopy()
	otherClass.Name, otherClass.Spec.IngressClassName = "other-class", ptr.To("internal")
	otherClass.Spec.Routes = []v1.Route{route("/users/", "s", 80), route("/products/", "s", 80)}

	tests := map[string]struct {
		old, gw  func(*v1.APIGateway)
		finder   routeindex.Finder
		ports    stubPorts
		wantErr  string
		wantWarn []string
	}{
		"no conflict, no warning": {},
		"route served by another gateway": {
			gw: func(gw *v1.APIGateway) { gw.Name, gw.Spec.Routes[1].Path = "new", "/orders/" },
			wantErr: `APIGateway.example.com "new" is invalid: spec.routes[1]: Duplicate value: "api.example.com/orders/ (Prefix)": ` +
				`host and path already served by APIGateway default/legacy, which claimed api.example.com/orders (Prefix) first for the cluster's default ingress class`,
		},
		"path with index-selector characters": {
			gw:      func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a,b=c/" },
			wantErr: `spec.routes[1]: Duplicate value: "api.example.com/a,b=c/ (Prefix)": host and path already served by APIGateway default/legacy`,
		},
		// The host is default's (its namespace is first by name among
		// gateways not yet claimed): other's gateways compete for routes
		// only, and are not named to a user who may not read them.
		"route served by a gateway of another namespace": {
			gw: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/%73hop" },
			wantErr: `spec.routes[1]: Duplicate value: "api.example.com/%73hop (Prefix)": host and path already served by an APIGateway of another namespace, ` +
				`which claimed api.example.com/shop (Prefix) first`,
		},
		"a namesake in another namespace is another gateway": {
			gw:      func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/cart/" },
			wantErr: `spec.routes[1]: Duplicate value: "api.example.com/cart/ (Prefix)": host and path already served by an APIGateway of another namespace`,
		},
		"a host of another namespace": {
			gw: func(gw *v1.APIGateway) { gw.Namespace = "zzz" },
			wantErr: `spec.routes[0].host: Forbidden: host api.example.com belongs to another namespace, which lends namespace zzz no path prefix covering ` +
				`api.example.com/users (Prefix)`,
		},
		"the same routes in another ingress class": {
			gw: func(gw *v1.APIGateway) { gw.Spec.Routes = otherClass.Spec.Routes },
		},
		"an update checks only the routes it adds, once normalised": {
			old: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/%6frders/" },
			gw:  func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/orders" },
		},
		"updating a gateway does not conflict with itself": {
			gw:  func(gw *v1.APIGateway) { *gw = *legacy.DeepCopy(); gw.Spec.Replicas = ptr.To[int32](3) },
			old: func(gw *v1.APIGateway) { *gw = *legacy.DeepCopy() },
		},
		"invalid object: the image's warning is the policy's": {
			gw: func(gw *v1.APIGateway) {
				gw.Name, gw.Spec.Image, gw.Spec.Routes[0].Host = "x", "nginx:latest", "10.0.0.1"
			},
			wantErr: `APIGateway.example.com "x" is invalid: spec.routes[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address`,
			// The warnings policy sends the image's warning, not the webhook.
			wantWarn: nil,
		},
		"backend port warning": {
			ports:    stubPorts{"user-service": {80}},
			wantWarn: []string{`spec.routes[0].backendService: Service "user-service" has no port 8080 (its ports: 80)`},
		},
		"auth Service port warning": {
			gw: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].ExternalAuth = &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}
			},
			ports:    stubPorts{"user-service": {8080}, "oauth2-proxy": {80}},
			wantWarn: []string{`spec.routes[0].externalAuth: Service "oauth2-proxy" has no port 4180 (its ports: 80)`},
		},
		"a failed lookup is an error": {
			finder:  failingFinder{},
			wantErr: "looking up the APIGateways that share the gateway's hosts: cache unavailable",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.finder == nil {
				tc.finder = testFinder(t, legacy, elsewhere, namesake, otherClass)
			}
			v := &Validator{Gateways: tc.finder, Services: tc.ports}
			gw := gatewayWith(tc.gw)
			var warnings admission.Warnings
			var err error
			if tc.old != nil {
				warnings, err = v.ValidateUpdate(t.Context(), gatewayWith(tc.old), gw)
			} else {
				warnings, err = v.ValidateCreate(t.Context(), gw)
			}
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.True(t, apierrors.IsInvalid(err) || apierrors.IsServiceUnavailable(err), "%T", err)
			} else {
				require.NoError(t, err)
			}
			require.Len(t, warnings, len(tc.wantWarn), "%q", warnings)
			for i, w := range tc.wantWarn {
				assert.Contains(t, warnings[i], w)
			}
		})
	}
}

// Bad input to the HTTP endpoints gets an error response, never a panic,
// and the server keeps serving.
func TestBadRequests(t *testing.T) {
	reader := fakeReader(t, nil, defaultNamespace(nil))
	mux := http.NewServeMux()
	mux.Handle("/mutate", mutatingWebhook(reader))
	mux.Handle("/validate", validatingWebhook(testFinder(t)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	review := func(op admissionv1.Operation, object string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","operation":"` + string(op) +
			`","namespace":"default","name":"gw","kind":{"group":"example.com","version":"v1","kind":"APIGateway"},"object":` + object + `}}`
	}
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"x"}]}}`
	tests := map[string]struct {
		body, contentType string
		// onlyValidate: the defaulter ignores the operation, so an odd
		// one only matters to the validator.
		onlyValidate bool
		wantCode     int32
		wantMessage  string
	}{
		"empty body":             {body: "", wantCode: http.StatusBadRequest, wantMessage: "request body is empty"},
		"malformed JSON":         {body: `{"apiVersion":`, wantCode: http.StatusBadRequest},
		"not JSON":               {body: "\x00\xff<xml/>", wantCode: http.StatusBadRequest},
		"wrong content type":     {body: review(admissionv1.Create, `{}`), contentType: "text/plain", wantCode: http.StatusBadRequest, wantMessage: "expected application/json"},
		"review without request": {body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantCode: http.StatusBadRequest},
		"a review of a Pod":      {body: review(admissionv1.Create, pod), wantCode: http.StatusBadRequest},
		"no object":              {body: review(admissionv1.Create, `null`), wantCode: http.StatusBadRequest, wantMessage: "there is no content to decode"},
		// The defaults read JSON, and find nothing to do in a list that is
		// not one; the validating webhook (and the schema) refuse it.
		"object of wrong shape": {body: review(admissionv1.Create, `{"apiVersion":"example.com/v1","kind":"APIGateway","spec":{"routes":"nope"}}`), onlyValidate: true, wantCode: http.StatusBadRequest},
		"unknown operation":     {body: review("EXPLODE", `{"apiVersion":"example.com/v1","kind":"APIGateway"}`), onlyValidate: true, wantCode: http.StatusBadRequest, wantMessage: `unknown operation "EXPLODE"`},
		"huge body":             {body: `{"x":"` + strings.Repeat("a", 8<<20) + `"}`, wantCode: http.StatusRequestEntityTooLarge, wantMessage: "request entity is too large"},
	}
	for name, tc := range tests {
		for _, path := range []string{"/mutate", "/validate"} {
			if tc.onlyValidate && path == "/mutate" {
				continue
			}
			t.Run(name+path, func(t *testing.T) {
				if tc.contentType == "" {
					tc.contentType = "application/json"
				}
				resp := post(t, srv.URL+path, tc.contentType, tc.body)
				require.NotNil(t, resp.Response)
				assert.False(t, resp.Response.Allowed)
				require.NotNil(t, resp.Response.Result)
				assert.Equal(t, tc.wantCode, resp.Response.Result.Code, resp.Response.Result.Message)
				assert.Contains(t, resp.Response.Result.Message, tc.wantMessage)
			})
		}
	}

	// An empty object decodes as an empty APIGateway (the decoder takes
	// the kind from the target type): the defaulter fills it in and the
	// validator rejects it with its reasons.
	for _, object := range []string{`{}`, `{"apiVersion":"example.com/v1","kind":"APIGateway"}`} {
		resp := post(t, srv.URL+"/mutate", "application/json", review(admissionv1.Create, object))
		assert.True(t, resp.Response.Allowed, "%+v", resp.Response.Result)
		resp = post(t, srv.URL+"/validate", "application/json", review(admissionv1.Create, object))
		require.False(t, resp.Response.Allowed)
		assert.Equal(t, int32(http.StatusUnprocessableEntity), resp.Response.Result.Code)
		assert.Contains(t, resp.Response.Result.Message, "spec.routes: Required value")
	}

	// After all that, the server still serves a good request.
	good, err := json.Marshal(validGateway())
	require.NoError(t, err)
	resp := post(t, srv.URL+"/validate", "application/json", review(admissionv1.Create, string(good)))
	assert.True(t, resp.Response.Allowed, "%+v", resp.Response.Result)
	assert.Equal(t, "u1", string(resp.Response.UID))
}

func post(t *testing.T, url, contentType, body string) admissionv1.AdmissionReview {
	t.Helper()
	res, err := http.Post(url, contentType, strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var review admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(res.Body).Decode(&review))
	return review
}

// TestDefaulterPatchKeepsUnknownFieldsInAnyShape: objects whose JSON lacks
// what the patch addresses (no spec, a null spec, a route that is null or
// empty) get the objects it needs first, and nothing else is rewritten:
// members the Go type does not know stay, and the patched object is
// the table's result. A newer CRD could make such shapes storable.
func TestDefaulterPatchKeepsUnknownFieldsInAnyShape(t *testing.T) {
	const head = `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"default"},"futureTop":1`
	tests := map[string]struct {
		raw  string
		kept []string // what the patched object must still contain
	}{
		"no spec":                    {raw: head + `}`, kept: []string{`"futureTop":1`}},
		"a null spec":                {raw: head + `,"spec":null}`, kept: []string{`"futureTop":1`}},
		"a spec of unknown fields":   {raw: head + `,"spec":{"futureField":1}}`, kept: []string{`"futureField":1`}},
		"an empty route":             {raw: head + `,"spec":{"futureField":1,"routes":[{"futureField":2}]}}`, kept: []string{`"futureField":1`, `{"futureField":2,`}},
		"a null route beside others": {raw: head + `,"spec":{"routes":[null,{"host":"A.example.com","futureField":3,"backendService":{"name":"s","port":80}}]}}`, kept: []string{`"futureField":3`}},
	}
	wh := mutatingWebhook(fakeReader(t, nil, defaultNamespace(nil)))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp := wh.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Operation: admissionv1.Create, Namespace: "default", Name: "gw",
				Object: runtime.RawExtension{Raw: []byte(tc.raw)},
			}})
			require.True(t, resp.Allowed, "%+v", resp.Result)
			patched := applyPatch(t, tc.raw, resp.Patches)
			for _, s := range tc.kept {
				assert.Contains(t, string(patched), s)
			}
			var got map[string]any
			require.NoError(t, json.Unmarshal(patched, &got))
			assert.Empty(t, defaults.Patch(got, testDefaults.Params(nil)), "the table has nothing left to do")
		})
	}
}
