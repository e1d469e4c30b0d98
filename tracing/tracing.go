// Package tracing turns on OpenTelemetry traces for the operator, exported
// over OTLP/gRPC. It is off unless an endpoint is given (--otlp-endpoint or
// the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// variables): then the global tracer provider stays OpenTelemetry's no-op
// one, and the spans the webhooks and the reconciler start cost next to
// nothing.
//
// With it on, the webhook server continues the trace the kube-apiserver
// sends in the traceparent header (W3C trace context), so one `kubectl
// apply` gives one trace holding the API server's spans and the webhooks'.
package tracing

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName names the operator's spans' service, unless OTEL_SERVICE_NAME
// says otherwise.
const ServiceName = "apigateway-operator"

// Tracer is the operator's tracer, from the global provider: the no-op one
// until Setup installs another.
func Tracer() trace.Tracer { return otel.Tracer("example.com/apigateway-operator") }

// Enabled reports whether endpoint, or the environment, names a collector.
func Enabled(endpoint string) bool {
	return endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs a tracer provider exporting to endpoint (host:port, or a
// URL: http:// for a collector without TLS) and the W3C trace-context
// propagator, and returns the function that flushes and stops it. When
// Enabled is false it installs nothing and returns a no-op.
func Setup(ctx context.Context, endpoint string) (func(context.Context) error, error) {
	if !Enabled(endpoint) {
		return func(context.Context) error { return nil }, nil
	}
	var opts []otlptracegrpc.Option
	if endpoint != "" {
		opts = append(opts, endpointOption(endpoint))
	}
	exporter, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--otlp-endpoint %q: %w", endpoint, err)
	}
	// The service name, which OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
	// read after it, may replace.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(ServiceName)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("describing the operator for its traces: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return provider.Shutdown, nil
}

// endpointOption reads --otlp-endpoint: a URL sets the scheme (http:
// without TLS), a bare host:port uses TLS as the OTLP default.
func endpointOption(endpoint string) otlptracegrpc.Option {
	for _, scheme := range []string{"http://", "https://"} {
		if len(endpoint) > len(scheme) && endpoint[:len(scheme)] == scheme {
			return otlptracegrpc.WithEndpointURL(endpoint)
		}
	}
	return otlptracegrpc.WithEndpoint(endpoint)
}
