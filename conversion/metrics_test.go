package conversion

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// counts is a snapshot of the conversion counters of both directions.
type counts struct {
	upSuccess, upError, downSuccess, downError float64
	upTimed, downTimed                         uint64
}

func snapshot(t *testing.T) counts {
	t.Helper()
	return counts{
		upSuccess:   testutil.ToFloat64(conversions.WithLabelValues("v1alpha1", "v1", "success")),
		upError:     testutil.ToFloat64(conversions.WithLabelValues("v1alpha1", "v1", "error")),
		downSuccess: testutil.ToFloat64(conversions.WithLabelValues("v1", "v1alpha1", "success")),
		downError:   testutil.ToFloat64(conversions.WithLabelValues("v1", "v1alpha1", "error")),
		upTimed:     sampleCount(t, conversionDuration.WithLabelValues("v1alpha1", "v1")),
		downTimed:   sampleCount(t, conversionDuration.WithLabelValues("v1", "v1alpha1")),
	}
}

// TestConversionMetrics sends ConversionReviews through the handler and
// checks what it counted: one count and one timing per converted object,
// under the labels of its direction; a failed object counts as an error;
// what is not a conversion (an object in the desired version, an object
// of another kind) is not counted.
func TestConversionMetrics(t *testing.T) {
	h := NewWebhookHandler()
	alpha := `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"gw","namespace":"default"},` +
		`"spec":{"image":"nginx:1.27","replicas":2,"routes":[{"host":"api.example.com","prefix":"/users/","serviceName":"svc","servicePort":80}]}}`
	hub := `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"default"},` +
		`"spec":{"image":"nginx:1.27","replicas":2,"routes":[{"host":"api.example.com","path":"/","pathType":"Exact","backendService":{"name":"svc","port":80}}]}}`
	badHub := `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"bad"},"spec":{"replicas":"two"}}`
	secret := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`

	tests := map[string]struct {
		body   string
		result string
		want   counts
	}{
		"up":               {body: review("example.com/v1", alpha, alpha), result: metav1.StatusSuccess, want: counts{upSuccess: 2, upTimed: 2}},
		"down":             {body: review("example.com/v1alpha1", hub), result: metav1.StatusSuccess, want: counts{downSuccess: 1, downTimed: 1}},
		"same version":     {body: review("example.com/v1", hub), result: metav1.StatusSuccess},
		"undecodable":      {body: review("example.com/v1alpha1", hub, badHub), result: metav1.StatusFailure, want: counts{downSuccess: 1, downTimed: 1, downError: 1}},
		"another kind":     {body: review("example.com/v1alpha1", secret), result: metav1.StatusFailure},
		"unknown version":  {body: review("example.com/v3", hub), result: metav1.StatusFailure},
		"parallel":         {body: review("example.com/v1", repeat(alpha, 100)...), result: metav1.StatusSuccess, want: counts{upSuccess: 100, upTimed: 100}},
		"malformed review": {body: `{"request":`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := snapshot(t)
			code, resp := post(t, h, tc.body)
			if tc.result == "" {
				assert.Equal(t, http.StatusBadRequest, code)
			} else {
				require.Equal(t, http.StatusOK, code)
				require.Equal(t, tc.result, resp.Response.Result.Status, resp.Response.Result.Message)
			}
			after := snapshot(t)
			assert.Equal(t, tc.want, counts{
				upSuccess: after.upSuccess - before.upSuccess, upError: after.upError - before.upError,
				downSuccess: after.downSuccess - before.downSuccess, downError: after.downError - before.downError,
				upTimed: after.upTimed - before.upTimed, downTimed: after.downTimed - before.downTimed,
			})
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// sampleCount is how many observations a histogram holds.
func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, o.(prometheus.Metric).Write(m))
	return m.GetHistogram().GetSampleCount()
}
