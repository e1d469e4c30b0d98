package conversion

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// The conversion metrics, served with controller-runtime's on the metrics
// endpoint. from and to are API versions from a fixed set.
var (
	conversions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apigateway_conversions_total",
		Help: "APIGateway conversions, by source and target version and result (success, error).",
	}, []string{"from", "to", "result"})
	conversionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "apigateway_conversion_duration_seconds",
		Help: "How long converting one APIGateway took, by source and target version.",
		// A conversion is a copy of a few fields: microseconds, and more
		// only under CPU starvation.
		Buckets: prometheus.ExponentialBuckets(25e-6, 4, 8),
	}, []string{"from", "to"})
)

func init() {
	metrics.Registry.MustRegister(conversions, conversionDuration)
}

// countingConverter times and counts the conversions of the converter it
// wraps; the API server sends one object at a time per call.
type countingConverter struct {
	crconversion.Converter
}

// ConvertObject implements crconversion.Converter.
func (c countingConverter) ConvertObject(ctx context.Context, src, dst runtime.Object) error {
	start := time.Now()
	err := c.Converter.ConvertObject(ctx, src, dst)
	from, to := versionOf(src), versionOf(dst)
	conversionDuration.WithLabelValues(from, to).Observe(time.Since(start).Seconds())
	result := "success"
	if err != nil {
		result = "error"
	}
	conversions.WithLabelValues(from, to, result).Inc()
	return err
}

// versionOf is the APIGateway version of obj by its Go type, so the label
// never depends on what a request claims.
func versionOf(obj runtime.Object) string {
	switch obj.(type) {
	case *v1.APIGateway:
		return v1.GroupVersion.Version
	case *v1alpha1.APIGateway:
		return v1alpha1.GroupVersion.Version
	}
	return "other"
}
