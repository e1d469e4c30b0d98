package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/internal/testenv"
)

// newHandler serves conversion the way the manager's webhook server does.
func newHandler(t *testing.T) http.Handler {
	t.Helper()
	scheme := testenv.NewScheme()
	converter, err := NewConverter(scheme)
	require.NoError(t, err)
	registry := crconversion.NewRegistry()
	require.NoError(t, registry.RegisterConverter(v1.GroupVersion.WithKind("APIGateway").GroupKind(), converter))
	return crconversion.NewWebhookHandler(scheme, registry)
}

func review(desired string, objects ...string) string {
	raw := make([]runtime.RawExtension, len(objects))
	for i, o := range objects {
		raw[i] = runtime.RawExtension{Raw: []byte(o)}
	}
	out, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "uid-1", DesiredAPIVersion: desired, Objects: raw},
	})
	utilruntime.Must(err)
	return string(out)
}

// post sends body to h and decodes the ConversionReview it answers with;
// the review is nil when the answer is not 200.
func post(t *testing.T, h http.Handler, body string) (int, *apiextensionsv1.ConversionReview) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewBufferString(body)))
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	out := &apiextensionsv1.ConversionReview{}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), out))
	return rec.Code, out
}

const (
	v1Object = `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"ns","uid":"u"},` +
		`"spec":{"image":"nginx:1.27","routes":[{"host":"api.example.com","path":"/users/","pathType":"Exact",` +
		`"backendService":{"name":"user-service","port":8080}}],"tls":[{"hosts":["api.example.com"],"secretName":"api-tls"}]}}`
	v1alpha1Object = `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"old","namespace":"ns"},` +
		`"spec":{"routes":[{"host":"api.example.com","prefix":"/","serviceName":"api","servicePort":80}]}}`
)

func TestConversionReview(t *testing.T) {
	h := newHandler(t)

	t.Run("v1 to v1alpha1 and back", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1alpha1", v1Object))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, metav1.StatusSuccess, resp.Response.Result.Status, resp.Response.Result.Message)
		assert.Equal(t, "uid-1", string(resp.Response.UID))
		require.Len(t, resp.Response.ConvertedObjects, 1)
		alpha := &v1alpha1.APIGateway{}
		require.NoError(t, json.Unmarshal(resp.Response.ConvertedObjects[0].Raw, alpha))
		assert.Equal(t, metav1.TypeMeta{APIVersion: "example.com/v1alpha1", Kind: "APIGateway"}, alpha.TypeMeta)
		assert.Equal(t, []v1alpha1.Route{{Host: "api.example.com", Prefix: "/users/", ServiceName: "user-service", ServicePort: 8080}}, alpha.Spec.Routes)
		assert.Contains(t, alpha.Annotations, DataAnnotation)

		code, resp = post(t, h, review("example.com/v1", string(resp.Response.ConvertedObjects[0].Raw)))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, metav1.StatusSuccess, resp.Response.Result.Status, resp.Response.Result.Message)
		// Nothing may differ: status is omitzero, so an empty one is not added.
		assert.JSONEq(t, v1Object, string(resp.Response.ConvertedObjects[0].Raw))
	})

	t.Run("v1alpha1 to v1, several objects", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1", v1alpha1Object, v1alpha1Object))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, metav1.StatusSuccess, resp.Response.Result.Status, resp.Response.Result.Message)
		require.Len(t, resp.Response.ConvertedObjects, 2)
		hub := &v1.APIGateway{}
		require.NoError(t, json.Unmarshal(resp.Response.ConvertedObjects[1].Raw, hub))
		assert.Equal(t, "example.com/v1", hub.APIVersion)
		assert.Equal(t, []v1.Route{{Host: "api.example.com", Path: "/", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "api", Port: 80}}}, hub.Spec.Routes)
	})

	t.Run("a corrupt annotation converts and is kept", func(t *testing.T) {
		obj := `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"x","annotations":{"` +
			DataAnnotation + `":"{\"spec\":"}},"spec":{"routes":[]}}`
		code, resp := post(t, h, review("example.com/v1", obj))
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, metav1.StatusSuccess, resp.Response.Result.Status, resp.Response.Result.Message)
		hub := &v1.APIGateway{}
		require.NoError(t, json.Unmarshal(resp.Response.ConvertedObjects[0].Raw, hub))
		assert.Equal(t, `{"spec":`, hub.Annotations[DataAnnotation])
	})

	// Requests the API server should never send still get an answer that
	// names the problem, and the handler goes on serving.
	failures := map[string]struct {
		body    string
		message string
	}{
		"unknown desired version": {
			body: review("example.com/v2", v1Object), message: `no kind "APIGateway" is registered for version "example.com/v2"`,
		},
		"desired version of another group": {
			body: review("apps/v1", v1Object), message: `no kind "APIGateway" is registered for version "apps/v1"`,
		},
		"same version": {
			body: review("example.com/v1", v1Object), message: "conversion is not allowed between same type",
		},
		"an object of another kind": {
			body:    review("example.com/v1", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`),
			message: `no kind "ConfigMap" is registered for version "example.com/v1"`,
		},
		"an object of an unknown kind": {
			body:    review("example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Gadget","metadata":{"name":"c"}}`),
			message: `no kind "Gadget" is registered for version "example.com/v1alpha1"`,
		},
		"an object that is not JSON": {
			body: review("example.com/v1", `"nope"`), message: "",
		},
		"an object with a wrongly typed field": {
			body:    review("example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","spec":{"replicas":"three"}}`),
			message: "cannot unmarshal",
		},
		"an object without apiVersion and kind": {
			body: review("example.com/v1", `{"metadata":{"name":"x"}}`), message: "",
		},
	}
	for name, tc := range failures {
		t.Run(name, func(t *testing.T) {
			code, resp := post(t, h, tc.body)
			require.Equal(t, http.StatusOK, code)
			assert.Equal(t, metav1.StatusFailure, resp.Response.Result.Status)
			assert.NotEmpty(t, resp.Response.Result.Message)
			assert.Contains(t, resp.Response.Result.Message, tc.message)
			assert.Empty(t, resp.Response.ConvertedObjects)
			assert.Equal(t, "uid-1", string(resp.Response.UID))
		})
	}

	// A body that is no ConversionReview has no UID to answer to:
	// controller-runtime answers 400 and logs why.
	for name, body := range map[string]string{
		"not JSON":      "{{{",
		"empty":         "",
		"no request":    `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`,
		"request array": `{"request":[]}`,
	} {
		t.Run("malformed review: "+name, func(t *testing.T) {
			code, _ := post(t, h, body)
			assert.Equal(t, http.StatusBadRequest, code)
		})
	}

	t.Run("still serving after bad input", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1", v1alpha1Object))
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, metav1.StatusSuccess, resp.Response.Result.Status)
	})
}

func TestNewConverterNeedsBothVersions(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1.AddToScheme(scheme))
	_, err := NewConverter(scheme)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "v1alpha1")
}
