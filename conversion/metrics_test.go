package conversion

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// TestConversionMetrics sends ConversionReviews through the handler the
// webhook server runs and checks what the converter counted.
func TestConversionMetrics(t *testing.T) {
	h := newHandler(t)
	alpha := `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"gw","namespace":"default"},` +
		`"spec":{"image":"nginx:1.27","replicas":2,"routes":[{"host":"api.example.com","prefix":"/users/","serviceName":"svc","servicePort":80}]}}`
	hub := `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"gw","namespace":"default"},` +
		`"spec":{"image":"nginx:1.27","replicas":2,"routes":[{"host":"api.example.com","path":"/","pathType":"Exact","backendService":{"name":"svc","port":80}}]}}`

	up := conversions.WithLabelValues("v1alpha1", "v1", "success")
	down := conversions.WithLabelValues("v1", "v1alpha1", "success")
	upBefore, downBefore := testutil.ToFloat64(up), testutil.ToFloat64(down)
	upTimed := sampleCount(t, conversionDuration.WithLabelValues("v1alpha1", "v1"))

	code, _ := post(t, h, review("example.com/v1", alpha, alpha))
	require.Equal(t, http.StatusOK, code)
	code, _ = post(t, h, review("example.com/v1alpha1", hub))
	require.Equal(t, http.StatusOK, code)

	assert.Equal(t, 2.0, testutil.ToFloat64(up)-upBefore, "one count per object")
	assert.Equal(t, 1.0, testutil.ToFloat64(down)-downBefore)
	assert.Equal(t, upTimed+2, sampleCount(t, conversionDuration.WithLabelValues("v1alpha1", "v1")))
}

// failingConverter fails every conversion.
type failingConverter struct{}

func (failingConverter) ConvertObject(context.Context, runtime.Object, runtime.Object) error {
	return errors.New("boom")
}

func TestConversionMetricsCountErrors(t *testing.T) {
	failed := conversions.WithLabelValues("v1", "v1alpha1", "error")
	before := testutil.ToFloat64(failed)
	err := countingConverter{failingConverter{}}.ConvertObject(t.Context(), &v1.APIGateway{}, &v1alpha1.APIGateway{})
	assert.EqualError(t, err, "boom", "the error is returned unchanged")
	assert.Equal(t, 1.0, testutil.ToFloat64(failed)-before)
}

func TestVersionOf(t *testing.T) {
	tests := map[string]struct {
		obj  runtime.Object
		want string
	}{
		"hub":   {obj: &v1.APIGateway{}, want: "v1"},
		"spoke": {obj: &v1alpha1.APIGateway{}, want: "v1alpha1"},
		"other": {obj: &v1.APIGatewayList{}, want: "other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, versionOf(tc.obj))
		})
	}
}

// sampleCount is how many observations a histogram holds.
func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, o.(prometheus.Metric).Write(m))
	return m.GetHistogram().GetSampleCount()
}
