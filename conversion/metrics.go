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
		Name:    "apigateway_conversion_duration_seconds",
		Help:    "How long converting one APIGateway took, decoding and encoding included, by source and target version.",
		Buckets: durationBuckets,
	}, []string{"from", "to"})
)

// durationBuckets: decoding, converting and encoding a gateway takes
// microseconds (5 µs to 82 ms, by fours), and more only under CPU
// starvation or a stop-the-world pause. The coarse tail past that reaches
// beyond the 5 s admission timeout and to the 30 s the API server waits for
// a conversion webhook, so that a starved replica shows as such instead of
// in the +Inf bucket.
var durationBuckets = append(prometheus.ExponentialBuckets(5e-6, 4, 8), 0.25, 1, 2.5, 5, 10, 30)

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
