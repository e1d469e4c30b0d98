package conversion

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

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
		Help: "How long converting one APIGateway took, decoding and encoding included, by source and target version.",
		// Decoding, converting and encoding a gateway takes microseconds,
		// and more only under CPU starvation.
		Buckets: prometheus.ExponentialBuckets(5e-6, 4, 8),
	}, []string{"from", "to"})
)

func init() {
	metrics.Registry.MustRegister(conversions, conversionDuration)
}

// directionMetrics are the metrics of one direction of conversion, with
// their labels bound once: a LIST converts thousands of objects, and a
// label lookup per object would cost more than the counting.
type directionMetrics struct {
	success, failure prometheus.Counter
	duration         prometheus.Observer
}

func newDirectionMetrics(from, to string) *directionMetrics {
	return &directionMetrics{
		success:  conversions.WithLabelValues(from, to, "success"),
		failure:  conversions.WithLabelValues(from, to, "error"),
		duration: conversionDuration.WithLabelValues(from, to),
	}
}

var (
	downMetrics = newDirectionMetrics(v1.GroupVersion.Version, v1alpha1.GroupVersion.Version)
	upMetrics   = newDirectionMetrics(v1alpha1.GroupVersion.Version, v1.GroupVersion.Version)
)
