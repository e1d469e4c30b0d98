package conversion

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/testenv"
)

// repeated is n copies of elem, comma-separated.
func repeated(elem string, n int) string {
	return strings.TrimSuffix(strings.Repeat(elem+",", n), ",")
}

// numbered is n elements made by elem from their index, comma-separated.
func numbered(elem func(int) string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = elem(i)
	}
	return strings.Join(parts, ",")
}

// copies is n copies of object.
func copies(object string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = object
	}
	return out
}

// expandingReviews are ConversionReviews of about size bytes whose JSON is
// mostly elements of two or three bytes, each of which decodes into a Go
// value a hundred times its size: what a hostile client of /convert sends
// to make a small request hold gigabytes. v1 and v1alpha1 objects decode
// into different types; the status, the metadata's lists and maps, and
// the review's own list of objects are as open as the spec's.
func expandingReviews(size int) map[string]string {
	const v1Head = `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"ns"`
	const alphaHead = `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"gw","namespace":"ns"`
	n := size / 3
	key := func(i int) string { return fmt.Sprintf(`"k%x":""`, i) }
	return map[string]string{
		"v1 routes of {}":           review(v1alpha1APIVersion, v1Head+`},"spec":{"routes":[`+repeated("{}", n)+`]}}`),
		"v1alpha1 routes of {}":     review(v1APIVersion, alphaHead+`},"spec":{"routes":[`+repeated("{}", n)+`]}}`),
		"v1 tls hosts of empty":     review(v1alpha1APIVersion, v1Head+`},"spec":{"tls":[{"hosts":[`+repeated(`""`, n)+`]}]}}`),
		"status conditions of {}":   review(v1alpha1APIVersion, v1Head+`},"status":{"conditions":[`+repeated("{}", n)+`]}}`),
		"managedFields of {}":       review(v1APIVersion, alphaHead+`,"managedFields":[`+repeated("{}", n)+`]}}`),
		"ownerReferences of {}":     review(v1alpha1APIVersion, v1Head+`,"ownerReferences":[`+repeated("{}", n)+`]}}`),
		"finalizers of empty":       review(v1APIVersion, alphaHead+`,"finalizers":[`+repeated(`""`, n)+`]}}`),
		"annotations":               review(v1alpha1APIVersion, v1Head+`,"annotations":{`+numbered(key, size/10)+`}}}`),
		"the review's objects, {}":  review(v1APIVersion, copies("{}", n)...),
		"many small v1 objects":     review(v1alpha1APIVersion, copies(v1Head+`},"spec":{"routes":[{},{},{}]}}`, size/100)...),
		"resource limits, numbered": review(v1alpha1APIVersion, v1Head+`},"spec":{"resources":{"limits":{`+numbered(func(i int) string { return fmt.Sprintf(`"r%x":1`, i) }, size/8)+`}}}}`),
	}
}

// serveWithin serves body to h behind a budget of limit bytes and returns
// the status, the heap's peak growth, and the most the budget held.
func serveWithin(t *testing.T, h http.Handler, limit int64, body []byte) (code int, grew uint64, charged int64) {
	t.Helper()
	budget, err := inflight.New(limit)
	require.NoError(t, err)
	wrapped := budget.Wrap(h, HeldPerRequestByte, inflight.Open)
	w := &testenv.DiscardResponse{}
	grew = testenv.HeapGrowth(10, func(sample func()) {
		w.OnWrite = sample
		wrapped.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	})
	now, peak := budget.Holding()
	require.Zero(t, now, "the request gave back all it held")
	return w.Code, grew, peak
}

// TestConvertHoldsNoMoreThanCharged: whatever the shape of the JSON, a
// review never holds more than the request was charged for. Without
// charging what objects decode into, a 1 MiB review of "{}" routes held
// some 300 MiB while it was charged 3 MiB.
func TestConvertHoldsNoMoreThanCharged(t *testing.T) {
	reviews := expandingReviews(1 << 19)
	reviews["a legitimate 8 MiB list"] = string(largeReview(t, 8<<20))
	for name, body := range reviews {
		t.Run(name, func(t *testing.T) {
			code, grew, charged := serveWithin(t, NewWebhookHandler(), 4<<30, []byte(body))
			t.Logf("%.1f MiB review: %d, held %.1f MiB at the peak, charged %.1f MiB",
				mib(len(body)), code, mib(int(grew)), mib(int(charged)))
			assert.Equal(t, http.StatusOK, code)
			assert.LessOrEqual(t, int64(grew), charged)
		})
	}
}

// TestConvertRefusesWhatWouldNotFit: under the budget a 256 MiB process
// has, a 4 MiB review of "{}" routes is refused with 413 before it
// decodes, where it held about 1.4 GiB, and a legitimate review of the
// same size is converted.
func TestConvertRefusesWhatWouldNotFit(t *testing.T) {
	hostile := expandingReviews(4 << 20)["v1 routes of {}"]
	code, grew, _ := serveWithin(t, NewWebhookHandler(), 64<<20, []byte(hostile))
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Less(t, grew, uint64(64<<20), "held %.1f MiB", mib(int(grew)))

	code, _, _ = serveWithin(t, NewWebhookHandler(), 64<<20, largeReview(t, 4<<20))
	assert.Equal(t, http.StatusOK, code)
}
