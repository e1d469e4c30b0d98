package conversion

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/testenv"
)

// largeReview is a ConversionReview of about size bytes: copies of the
// 10-route gateway of BenchmarkConvertReview1000, to v1alpha1, so that
// every converted object carries the preserving annotation and the
// response is larger than the request.
func largeReview(t testing.TB, size int) []byte {
	t.Helper()
	raw, err := json.Marshal(benchGateway())
	require.NoError(t, err)
	objects := make([]string, size/(len(raw)+1))
	for i := range objects {
		objects[i] = string(raw)
	}
	return []byte(review(v1alpha1.GroupVersion.String(), objects...))
}

// heapGrowth is what one request to the handler adds to the heap at its
// peak, with GOGC at gcPercent (see testenv.HeapGrowth), and the size of
// its response.
func heapGrowth(t testing.TB, h http.Handler, body []byte, gcPercent int) (growth uint64, response int) {
	t.Helper()
	w := &testenv.DiscardResponse{}
	growth = testenv.HeapGrowth(gcPercent, func(sample func()) {
		w.OnWrite = sample
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	})
	require.Equal(t, http.StatusOK, w.Code)
	return growth, w.Size
}

// TestConvertHeldMemory holds the handler to HeldPerRequestByte: one large
// review holds its body, the response being assembled and a little per
// object being converted, and no copy of the whole review besides.
func TestConvertHeldMemory(t *testing.T) {
	body := largeReview(t, 8<<20)
	held, response := heapGrowth(t, NewWebhookHandler(), body, 10)
	ratio := float64(held) / float64(len(body))
	t.Logf("an %.1f MiB review (response %.1f MiB) held %.1f MiB at the peak: %.2f times its size",
		mib(len(body)), mib(response), mib(int(held)), ratio)
	assert.LessOrEqual(t, ratio, float64(HeldPerRequestByte))
}

// BenchmarkConvertHeap32MiB reports the heap growth of one 32 MiB review,
// the figure docs/benchmarks.md quotes: with GOGC=10 (close to the bytes
// held alive) and with the default GOGC=100.
func BenchmarkConvertHeap32MiB(b *testing.B) {
	body := largeReview(b, 32<<20)
	h := NewWebhookHandler()
	var held, heap uint64
	var response int
	for b.Loop() {
		held, response = heapGrowth(b, h, body, 10)
		heap, _ = heapGrowth(b, h, body, 100)
	}
	b.ReportMetric(mib(int(held)), "MiB-held(GOGC=10)")
	b.ReportMetric(mib(int(heap)), "MiB-heap(GOGC=100)")
	b.ReportMetric(mib(len(body)), "MiB-request")
	b.ReportMetric(mib(response), "MiB-response")
}

func mib(n int) float64 { return float64(n) / (1 << 20) }
