package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

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

// send sends a request with body to h and returns the recorded answer.
func send(h http.Handler, method, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/convert", strings.NewReader(body)))
	return rec
}

// post sends body to h and decodes the ConversionReview it answers with;
// the review is nil when the answer is not 200.
func post(t *testing.T, h http.Handler, body string) (int, *apiextensionsv1.ConversionReview) {
	t.Helper()
	rec := send(h, http.MethodPost, body)
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Equal(t, fmt.Sprint(rec.Body.Len()), rec.Header().Get("Content-Length"))
	out := &apiextensionsv1.ConversionReview{}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), out), "%.500s", rec.Body.String())
	assert.Equal(t, metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"}, out.TypeMeta)
	require.NotNil(t, out.Response)
	return rec.Code, out
}

// requireSuccess fails unless resp succeeded for the request review sends,
// with n objects of version apiVersion, and returns them.
func requireSuccess(t *testing.T, resp *apiextensionsv1.ConversionReview, apiVersion string, n int) []runtime.RawExtension {
	t.Helper()
	require.Equal(t, metav1.StatusSuccess, resp.Response.Result.Status, resp.Response.Result.Message)
	assert.Equal(t, "uid-1", string(resp.Response.UID))
	require.Len(t, resp.Response.ConvertedObjects, n)
	for i, obj := range resp.Response.ConvertedObjects {
		var tm metav1.TypeMeta
		require.NoError(t, json.Unmarshal(obj.Raw, &tm))
		require.Equal(t, metav1.TypeMeta{APIVersion: apiVersion, Kind: "APIGateway"}, tm, "object %d", i)
	}
	return resp.Response.ConvertedObjects
}

const (
	v1Object = `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"ns","uid":"u"},` +
		`"spec":{"image":"nginx:1.27","routes":[{"host":"api.example.com","path":"/users/","pathType":"Exact",` +
		`"backendService":{"name":"user-service","port":8080}}],"tls":[{"hosts":["api.example.com"],"secretName":"api-tls"}]}}`
	v1alpha1Object = `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"old","namespace":"ns"},` +
		`"spec":{"routes":[{"host":"api.example.com","prefix":"/","serviceName":"api","servicePort":80}]}}`
)

// alphaNamed is a v1alpha1 object named name, with a route of that host.
func alphaNamed(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(v1alpha1Object, `"old"`, `"`+name+`"`), "api.example.com", name+".example.com")
}

func TestConversionReview(t *testing.T) {
	h := NewWebhookHandler()

	t.Run("v1 to v1alpha1 and back", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1alpha1", v1Object))
		require.Equal(t, http.StatusOK, code)
		objects := requireSuccess(t, resp, "example.com/v1alpha1", 1)
		alpha := &v1alpha1.APIGateway{}
		require.NoError(t, json.Unmarshal(objects[0].Raw, alpha))
		assert.Equal(t, []v1alpha1.Route{{Host: "api.example.com", Prefix: "/users/", ServiceName: "user-service", ServicePort: 8080}}, alpha.Spec.Routes)
		assert.Contains(t, alpha.Annotations, DataAnnotation)

		code, resp = post(t, h, review("example.com/v1", string(objects[0].Raw)))
		require.Equal(t, http.StatusOK, code)
		objects = requireSuccess(t, resp, "example.com/v1", 1)
		// Nothing may differ: status is omitzero, so an empty one is not added.
		assert.JSONEq(t, v1Object, string(objects[0].Raw))
	})

	t.Run("v1alpha1 to v1, several objects, in order", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1", alphaNamed("a"), alphaNamed("b"), alphaNamed("c")))
		require.Equal(t, http.StatusOK, code)
		objects := requireSuccess(t, resp, "example.com/v1", 3)
		for i, name := range []string{"a", "b", "c"} {
			hub := &v1.APIGateway{}
			require.NoError(t, json.Unmarshal(objects[i].Raw, hub))
			assert.Equal(t, name, hub.Name)
			assert.Equal(t, []v1.Route{{Host: v1.Hostname(name + ".example.com"), Path: "/", PathType: v1.PathTypePrefix,
				BackendService: v1.BackendService{Name: "api", Port: 80}}}, hub.Spec.Routes)
		}
	})

	t.Run("no objects", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1"))
		require.Equal(t, http.StatusOK, code)
		requireSuccess(t, resp, "example.com/v1", 0)
	})

	// The API server never asks for it, but an object already in the
	// desired version is no error: it comes back as it was sent.
	t.Run("an object in the desired version comes back unchanged", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1", alphaNamed("a"), v1Object, alphaNamed("b")))
		require.Equal(t, http.StatusOK, code)
		objects := requireSuccess(t, resp, "example.com/v1", 3)
		assert.Equal(t, v1Object, string(objects[1].Raw))
	})

	t.Run("a corrupt annotation converts and is kept", func(t *testing.T) {
		obj := `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"x","annotations":{"` +
			DataAnnotation + `":"{\"spec\":"}},"spec":{"routes":[]}}`
		code, resp := post(t, h, review("example.com/v1", obj))
		require.Equal(t, http.StatusOK, code)
		objects := requireSuccess(t, resp, "example.com/v1", 1)
		hub := &v1.APIGateway{}
		require.NoError(t, json.Unmarshal(objects[0].Raw, hub))
		assert.Equal(t, `{"spec":`, hub.Annotations[DataAnnotation])
	})
}

// TestConversionReviewFailures sends requests the API server should never
// send: each gets an answer that names the problem, and the handler goes
// on serving.
func TestConversionReviewFailures(t *testing.T) {
	h := NewWebhookHandler()
	many := make([]string, 1000)
	for i := range many {
		many[i] = alphaNamed(fmt.Sprintf("gw-%d", i))
	}
	many[700] = `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"bad-700"},"spec":{"replicas":"x"}}`
	many[900] = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad-900"}}`

	// json/v2 words its errors "cannot" or "unable to", at random per
	// process, so that no one depends on the text: detail is the part after.
	failures := map[string]struct {
		body, message, detail string
	}{
		"unknown desired version": {
			body:    review("example.com/v2", v1Object),
			message: `cannot convert to desiredAPIVersion "example.com/v2": APIGateway is served as example.com/v1 and example.com/v1alpha1`,
		},
		"desired version of another group": {
			body: review("apps/v1", v1Object), message: `cannot convert to desiredAPIVersion "apps/v1"`,
		},
		"an object of another kind": {
			body:    review("example.com/v1", v1alpha1Object, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`),
			message: `objects[1] (ns/c): apiVersion "v1", kind "ConfigMap" is not an APIGateway of example.com/v1 or example.com/v1alpha1`,
		},
		"an object of an unknown kind": {
			body:    review("example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"Gadget","metadata":{"name":"c"}}`),
			message: `objects[0] (c): apiVersion "example.com/v1alpha1", kind "Gadget" is not an APIGateway`,
		},
		"an object of an unknown version": {
			body:    review("example.com/v1alpha1", `{"apiVersion":"example.com/v2","kind":"APIGateway","metadata":{"name":"c"}}`),
			message: `objects[0] (c): apiVersion "example.com/v2", kind "APIGateway" is not an APIGateway`,
		},
		"an object that is not a JSON object": {
			body:    review("example.com/v1", `"nope"`),
			message: "converting objects[0] from example.com/v1alpha1 to example.com/v1: json: ",
			detail:  "unmarshal JSON string into Go v1alpha1.APIGateway",
		},
		"an object with a wrongly typed field": {
			body:    review("example.com/v1", `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"r"},"spec":{"replicas":"three"}}`),
			message: `converting objects[0] (r) from example.com/v1alpha1 to example.com/v1: json: `,
			detail:  `unmarshal JSON string into Go int32 within "/spec/replicas"`,
		},
		"an object with a duplicate member": {
			body:    review("example.com/v1alpha1", `{"apiVersion":"example.com/v1","kind":"APIGateway","spec":{"image":"a","image":"b"}}`),
			message: `converting objects[0] from example.com/v1 to example.com/v1alpha1: jsontext: duplicate object member name "image"`,
		},
		"an object without apiVersion and kind": {
			body: review("example.com/v1", `{"metadata":{"name":"x"}}`), message: `objects[0] (x): apiVersion "", kind "" is not an APIGateway`,
		},
		"the first of two bad objects among 1,000 (parallel)": {
			body:    review("example.com/v1", many...),
			message: `converting objects[700] (bad-700) from example.com/v1alpha1 to example.com/v1: json: `,
			detail:  `unmarshal JSON string into Go int32 within "/spec/replicas"`,
		},
	}
	for name, tc := range failures {
		t.Run(name, func(t *testing.T) {
			code, resp := post(t, h, tc.body)
			require.Equal(t, http.StatusOK, code)
			assert.Equal(t, metav1.StatusFailure, resp.Response.Result.Status)
			assert.Contains(t, resp.Response.Result.Message, tc.message)
			assert.Contains(t, resp.Response.Result.Message, tc.detail)
			assert.Empty(t, resp.Response.ConvertedObjects)
			assert.Equal(t, "uid-1", string(resp.Response.UID))
		})
	}

	// A body that is no ConversionReview has no UID to answer to.
	malformed := map[string]struct {
		method, body    string
		code            int
		message, detail string
	}{
		"not JSON": {
			body: "{{{", code: http.StatusBadRequest, message: "decoding the ConversionReview: jsontext: invalid character '{'",
		},
		"empty": {
			body: "", code: http.StatusBadRequest, message: "decoding the ConversionReview: jsontext: unexpected EOF",
		},
		"no request": {
			body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, code: http.StatusBadRequest,
			message: "the ConversionReview has no request",
		},
		"request array": {
			body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":[]}`, code: http.StatusBadRequest,
			message: "decoding the ConversionReview: json: ",
			detail:  `unmarshal JSON array into Go conversion.reviewRequest within "/request"`,
		},
		"objects not an array": {
			body:    `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","objects":{}}}`,
			code:    http.StatusBadRequest,
			message: "decoding the ConversionReview: json: ",
			detail:  `unmarshal JSON object into Go []jsontext.Value within "/request/objects"`,
		},
		"no apiVersion and kind": {
			body: `{"request":{"uid":"u","desiredAPIVersion":"example.com/v1"}}`, code: http.StatusBadRequest,
			message: `expected a apiextensions.k8s.io/v1 ConversionReview, got apiVersion "", kind ""`,
		},
		"v1beta1 review": {
			body:    strings.Replace(review("example.com/v1"), "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1),
			code:    http.StatusBadRequest,
			message: `expected a apiextensions.k8s.io/v1 ConversionReview, got apiVersion "apiextensions.k8s.io/v1beta1", kind "ConversionReview"`,
		},
		"GET": {
			method: http.MethodGet, code: http.StatusMethodNotAllowed, message: "a ConversionReview must be POSTed",
		},
	}
	for name, tc := range malformed {
		t.Run("malformed review: "+name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			rec := send(h, method, tc.body)
			assert.Equal(t, tc.code, rec.Code)
			assert.Contains(t, rec.Body.String(), tc.message)
			assert.Contains(t, rec.Body.String(), tc.detail)
			if tc.code == http.StatusMethodNotAllowed {
				assert.Equal(t, http.MethodPost, rec.Header().Get("Allow"))
			}
		})
	}

	t.Run("still serving after bad input", func(t *testing.T) {
		code, resp := post(t, h, review("example.com/v1", v1alpha1Object))
		require.Equal(t, http.StatusOK, code)
		requireSuccess(t, resp, "example.com/v1", 1)
	})
}

func TestConversionReviewSizeLimit(t *testing.T) {
	body := review("example.com/v1", v1alpha1Object, v1alpha1Object)
	tests := map[string]struct {
		limit         int64
		contentLength int64 // -1: unknown, as when chunked
		outer         int64 // a limit put on the body before the handler (the webhook server's in-flight bound); 0: none
		code          int
	}{
		"at the limit":                   {limit: int64(len(body)), contentLength: int64(len(body)), code: http.StatusOK},
		"over the limit, length known":   {limit: int64(len(body)) - 1, contentLength: int64(len(body)), code: http.StatusRequestEntityTooLarge},
		"over the limit, length unknown": {limit: int64(len(body)) - 1, contentLength: -1, code: http.StatusRequestEntityTooLarge},
		"under the limit, length unknown": {
			limit: int64(len(body)), contentLength: -1, code: http.StatusOK,
		},
		"over an outer limit, length unknown": {
			limit: int64(len(body)), contentLength: -1, outer: int64(len(body)) - 2, code: http.StatusRequestEntityTooLarge,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := &handler{maxBytes: tc.limit, converters: converters}
			// A MultiReader hides the length from NewRequest: the test sets it.
			req := httptest.NewRequest(http.MethodPost, "/convert", io.MultiReader(strings.NewReader(body)))
			req.ContentLength = tc.contentLength
			rec := httptest.NewRecorder()
			limit := tc.limit
			if tc.outer > 0 {
				req.Body, limit = http.MaxBytesReader(rec, req.Body, tc.outer), tc.outer
			}
			h.ServeHTTP(rec, req)
			assert.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.code == http.StatusRequestEntityTooLarge {
				assert.Contains(t, rec.Body.String(), fmt.Sprintf("the ConversionReview is larger than the limit of %d bytes", limit))
			}
		})
	}
}

// TestConversionReviewPanic checks that a panicking conversion fails its
// request, on the request's goroutine and on the workers, and is counted.
func TestConversionReviewPanic(t *testing.T) {
	panicking := &converter{from: v1alpha1APIVersion, to: v1APIVersion, metrics: upMetrics,
		convert: func(raw jsontext.Value, buf *bytes.Buffer) error {
			if strings.Contains(string(raw), `"boom"`) {
				panic("boom")
			}
			_, err := buf.Write(raw)
			return err
		}}
	h := &handler{maxBytes: MaxRequestBytes, converters: []*converter{panicking}}
	tests := map[string]int{"serial": 3, "parallel": 500}
	for name, n := range tests {
		t.Run(name, func(t *testing.T) {
			objects := make([]string, n)
			for i := range objects {
				objects[i] = alphaNamed(fmt.Sprintf("gw-%d", i))
			}
			objects[n-2] = alphaNamed("boom")
			code, resp := post(t, h, review("example.com/v1", objects...))
			require.Equal(t, http.StatusOK, code)
			assert.Equal(t, metav1.StatusFailure, resp.Response.Result.Status)
			assert.Equal(t, fmt.Sprintf("converting objects[%d] (ns/boom) from example.com/v1alpha1 to example.com/v1: internal error: boom", n-2),
				resp.Response.Result.Message)
		})
	}
}

// TestConvertParallelMatchesSerial converts 1,000 different objects, rich
// and plain, on 4 workers and on one goroutine: the output must be the
// same, byte for byte and in order.
func TestConvertParallelMatchesSerial(t *testing.T) {
	objects := make([]jsontext.Value, 1000)
	for i := range objects {
		gw := benchGateway()
		gw.Name = fmt.Sprintf("gw-%04d", i)
		gw.Spec.Routes = gw.Spec.Routes[:1+i%10]
		if i%2 == 0 {
			gw.Spec.TLS = nil
			for j := range gw.Spec.Routes {
				gw.Spec.Routes[j].PathType = v1.PathTypePrefix
			}
		}
		raw, err := json.Marshal(gw)
		require.NoError(t, err)
		objects[i] = raw
	}
	down, err := converterTo(converters, v1alpha1APIVersion)
	require.NoError(t, err)
	serial, err := down.convertRun(context.Background(), objects, 0)
	require.NoError(t, err)
	parallel := down.convertParallel(context.Background(), objects, 4)
	require.NoError(t, parallel.err)
	assert.Greater(t, len(parallel.runs), 4, "the objects are spread over the workers")
	require.Equal(t, string(serial), string(bytes.Join(parallel.runs, []byte(","))))

	var alphas []v1alpha1.APIGateway
	require.NoError(t, json.Unmarshal([]byte("["+string(serial)+"]"), &alphas))
	require.Len(t, alphas, len(objects))
	for i := range alphas {
		assert.Equal(t, fmt.Sprintf("gw-%04d", i), alphas[i].Name)
		assert.Equal(t, i%2 == 0, alphas[i].Annotations[DataAnnotation] == "", alphas[i].Name)
	}

	// And through the handler, which takes the parallel path from
	// parallelThreshold objects on.
	texts := make([]string, len(objects))
	for i, o := range objects {
		texts[i] = string(o)
	}
	code, resp := post(t, NewWebhookHandler(), review("example.com/v1alpha1", texts...))
	require.Equal(t, http.StatusOK, code)
	got := requireSuccess(t, resp, "example.com/v1alpha1", len(objects))
	for i := range got {
		want, err := json.Marshal(alphas[i])
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got[i].Raw), "object %d", i)
	}
}
