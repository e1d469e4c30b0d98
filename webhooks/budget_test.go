package webhooks

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/testenv"
)

// hostileReview is an AdmissionReview, for CREATE, of object (raw JSON),
// with userInfo as given (raw JSON).
func hostileReview(object, userInfo string) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-1",` +
		`"kind":{"group":"example.com","version":"v1","kind":"APIGateway"},` +
		`"resource":{"group":"example.com","version":"v1","resource":"apigateways"},` +
		`"name":"gw","namespace":"ns","operation":"CREATE","userInfo":` + userInfo + `,"object":` + object + `}}`)
}

// elements is n copies of elem, comma-separated.
func elements(elem string, n int) string {
	return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
}

// admissionReviews are reviews of about size bytes that a hostile client
// of the admission webhooks sends: elements of two or three bytes, each
// of which decodes into a Go value a hundred times its size, in the object
// or in the review around it, and one legitimate review of the same size.
func admissionReviews(t *testing.T, size int) map[string][]byte {
	const head = `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"ns"`
	const user = `{"username":"u"}`
	n := size / 3
	legit := validGateway()
	legit.Annotations = map[string]string{"example.com/large": strings.Repeat("x", size)}
	legitBody, err := testenv.AdmissionReview("uid-1", legit)
	require.NoError(t, err)
	return map[string][]byte{
		"routes of {}":         hostileReview(head+`},"spec":{"routes":[`+elements("{}", n)+`]}}`, user),
		"managedFields of {}":  hostileReview(head+`,"managedFields":[`+elements("{}", n)+`]},"spec":{}}`, user),
		"tls hosts of empty":   hostileReview(head+`},"spec":{"tls":[{"hosts":[`+elements(`""`, n)+`]}]}}`, user),
		"userInfo groups":      hostileReview(head+`},"spec":{}}`, `{"username":"u","groups":[`+elements(`""`, n)+`]}`),
		"a large legit object": legitBody,
	}
}

// serveAdmission serves body to h as the webhook server does (behind a
// budget of limit bytes, charged what the body decodes into) and returns
// the status, the heap's peak growth, and the most the budget held.
func serveAdmission(t *testing.T, h http.Handler, limit int64, body []byte) (code int, grew uint64, charged int64) {
	t.Helper()
	budget, err := inflight.New(limit)
	require.NoError(t, err)
	wrapped := budget.Wrap(chargeDecoded(h), admissionCopies, inflight.Admission)
	w := &testenv.DiscardResponse{}
	grew = testenv.HeapGrowth(10, func(sample func()) {
		w.OnWrite = sample
		r := httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		wrapped.ServeHTTP(w, r)
	})
	now, peak := budget.Holding()
	require.Zero(t, now, "the request gave back all it held")
	return w.Code, grew, peak
}

// TestAdmissionHoldsNoMoreThanCharged holds admissionCopies and the charge
// for what a review decodes into to measurements: whatever its shape, an
// admission review through either webhook never holds more than the
// request was charged. Without the charge, a 3 MiB review of "{}" routes
// held 186 MiB while it was charged 15 MiB.
func TestAdmissionHoldsNoMoreThanCharged(t *testing.T) {
	handlers := map[string]http.Handler{
		"validating": validatingWebhook(testFinder(t)),
		"mutating":   mutatingWebhook(fakeReader(t, nil, defaultNamespace(nil))),
	}
	for name, body := range admissionReviews(t, 1<<19) {
		for hName, h := range handlers {
			t.Run(hName+"/"+name, func(t *testing.T) {
				code, grew, charged := serveAdmission(t, h, 4<<30, body)
				t.Logf("%.1f MiB review: %d, held %.1f MiB at the peak, charged %.1f MiB",
					float64(len(body))/(1<<20), code, float64(grew)/(1<<20), float64(charged)/(1<<20))
				assert.Equal(t, http.StatusOK, code)
				assert.LessOrEqual(t, int64(grew), charged)
			})
		}
	}
}

// TestAdmissionRefusesWhatWouldNotFit: under the budget a 256 MiB process
// has, a 3 MiB review of "{}" routes is refused with 413 before anything
// decodes it, and a legitimate review of the same size is answered.
func TestAdmissionRefusesWhatWouldNotFit(t *testing.T) {
	reviews := admissionReviews(t, 3<<20)
	h := validatingWebhook(testFinder(t))
	code, grew, _ := serveAdmission(t, h, 64<<20, reviews["routes of {}"])
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Less(t, grew, uint64(64<<20), "held %d bytes", grew)

	code, _, _ = serveAdmission(t, h, 64<<20, reviews["a large legit object"])
	assert.Equal(t, http.StatusOK, code, "a legitimate review of 3 MiB")
}
