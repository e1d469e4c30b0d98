package failure

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every endpoint of the real TLS server gets malformed, truncated,
// wrong-kind and oversized bodies on one keep-alive client: each gets a
// clear 4xx or a denial, and the next good request on the same client is
// answered. webhooks/handlers_test.go and conversion/converter_test.go
// cover the handlers' messages one by one over plain HTTP; this covers the
// server as deployed, the conversion endpoint's wrong kinds and sizes, and
// recovery between bad requests.
func TestBadBodiesOnEveryEndpoint(t *testing.T) {
	srv := startWebhookServer(t, nil)
	goodAdmission := admissionReview(t, "good", gateway("default", "good"))
	v1Object, err := json.Marshal(gatewayObject("default", "conv"))
	require.NoError(t, err)
	goodConversion := conversionReview(t, "good", "example.com/v1alpha1", v1Object)
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"}}`
	// Larger than controller-runtime's 7 MiB admission limit.
	huge := `{"x":"` + strings.Repeat("a", 8<<20) + `"}`

	// want is how a bad body must be answered: denied with code for the
	// admission endpoints (or, plain, answered with HTTP code before it
	// is read as a review), or HTTP code with a message / a failed
	// ConversionReview for the conversion endpoint.
	type want struct {
		code      int
		plain     bool
		failedCRV bool
	}
	// An admission body of 8 MiB does not fit in what one request may
	// hold under the server's budget (64 MiB, of which an admission
	// request holds 6 copies of its body and what it decodes into): the
	// budget refuses it before controller-runtime reads it.
	tooLarge := want{code: http.StatusRequestEntityTooLarge, plain: true}
	// The conversion endpoint checks the review's kind.
	notAConversionReview := want{code: 400}
	tests := map[string]struct {
		body                  string
		mutate, validate, cnv want
	}{
		"malformed JSON": {body: `{"apiVersion":`,
			mutate: want{code: 400}, validate: want{code: 400}, cnv: want{code: 400}},
		"truncated review": {body: string(goodAdmission[:len(goodAdmission)/2]),
			mutate: want{code: 400}, validate: want{code: 400}, cnv: want{code: 400}},
		"truncated conversion review": {body: string(goodConversion[:len(goodConversion)/2]),
			mutate: want{code: 400}, validate: want{code: 400}, cnv: want{code: 400}},
		"a ConversionReview to the admission endpoints": {body: string(goodConversion),
			mutate: want{code: 400}, validate: want{code: 400}, cnv: want{code: 200}}, // it is the good one
		"an AdmissionReview to the conversion endpoint": {body: string(goodAdmission),
			mutate: want{code: 200}, validate: want{code: 200}, cnv: notAConversionReview},
		"a review of a Pod": {body: strings.Replace(string(goodAdmission), string(mustRawObject(t, goodAdmission)), pod, 1),
			mutate: want{code: 400}, validate: want{code: 400}, cnv: notAConversionReview},
		"a Pod to convert": {body: string(conversionReview(t, "pod", "example.com/v1alpha1", []byte(pod))),
			mutate: want{code: 400}, validate: want{code: 400}, cnv: want{code: 200, failedCRV: true}},
		"oversized": {body: huge,
			mutate: tooLarge, validate: tooLarge, cnv: want{code: 400}},
		"oversized object to convert": {body: string(conversionReview(t, "big", "example.com/v1alpha1", []byte(huge))),
			mutate: tooLarge, validate: tooLarge, cnv: want{code: 200, failedCRV: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for path, w := range map[string]want{mutatePath: tc.mutate, validatePath: tc.validate} {
				if w.plain {
					_, err := srv.admit(path, []byte(tc.body))
					var httpErr *httpError
					if assert.ErrorAs(t, err, &httpErr, path) {
						assert.Equal(t, w.code, httpErr.code, "%s: %s", path, httpErr.body)
					}
				} else {
					assertAdmissionAnswer(t, srv, path, []byte(tc.body), w.code)
				}
				resp, err := srv.admit(path, goodAdmission)
				require.NoError(t, err, "%s stopped answering", path)
				assert.True(t, resp.Allowed, "%s: %+v", path, resp.Result)
			}
			assertConversionAnswer(t, srv, []byte(tc.body), tc.cnv.code, tc.cnv.failedCRV)
			assert.Equal(t, 1, assertConversionAnswer(t, srv, goodConversion, http.StatusOK, false))
		})
	}
}

// assertAdmissionAnswer checks a bad body to an admission endpoint: code
// 200 means a well-formed review that must still be allowed (a review for
// another endpoint that happens to decode); otherwise a denial with code.
func assertAdmissionAnswer(t *testing.T, srv *webhookServer, path string, body []byte, code int) {
	t.Helper()
	resp, err := srv.admit(path, body)
	require.NoError(t, err, "%s: controller-runtime answers bad reviews in a review", path)
	if code == http.StatusOK {
		return
	}
	assert.False(t, resp.Allowed, path)
	if assert.NotNil(t, resp.Result, path) {
		assert.Equal(t, int32(code), resp.Result.Code, "%s: %s", path, resp.Result.Message)
		assert.NotEmpty(t, resp.Result.Message, path)
	}
}

// assertConversionAnswer checks the conversion endpoint's HTTP code and,
// for a 200, whether the ConversionReview reports a failure; it returns
// how many objects were converted.
func assertConversionAnswer(t *testing.T, srv *webhookServer, body []byte, code int, failed bool) int {
	t.Helper()
	got, out, err := srv.post(convertPath, body)
	require.NoError(t, err)
	require.Equal(t, code, got, "convert: %.200s", out)
	if code != http.StatusOK {
		assert.NotEmpty(t, strings.TrimSpace(string(out)), "convert: a %d must say why", code)
		return 0
	}
	review := &apiextensionsv1.ConversionReview{}
	require.NoError(t, json.Unmarshal(out, review))
	require.NotNil(t, review.Response)
	if failed {
		assert.Equal(t, metav1.StatusFailure, review.Response.Result.Status)
		assert.NotEmpty(t, review.Response.Result.Message)
		assert.Empty(t, review.Response.ConvertedObjects)
		return 0
	}
	assert.Equal(t, metav1.StatusSuccess, review.Response.Result.Status, review.Response.Result.Message)
	return len(review.Response.ConvertedObjects)
}
