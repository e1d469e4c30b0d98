package tracing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Tracing is on only when a collector is named, by the flag or by
// OpenTelemetry's own variables.
func TestEnabled(t *testing.T) {
	for name, tc := range map[string]struct {
		flag string
		env  map[string]string
		want bool
	}{
		"nothing":                 {want: false},
		"the flag":                {flag: "collector:4317", want: true},
		"the endpoint variable":   {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, want: true},
		"the traces' variable":    {env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317"}, want: true},
		"an unrelated variable":   {env: map[string]string{"OTEL_SERVICE_NAME": "x"}, want: false},
		"the flag and a variable": {flag: "collector:4317", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			assert.Equal(t, tc.want, Enabled(tc.flag))
		})
	}
}

// Off, Setup installs nothing: the global provider stays the no-op one.
func TestSetupOffInstallsNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	stop, err := Setup(t.Context(), "")
	require.NoError(t, err)
	require.NoError(t, stop(t.Context()))
	_, sdk := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	assert.False(t, sdk, "a tracer provider was installed with tracing off")
	_, span := Tracer().Start(t.Context(), "x")
	assert.False(t, span.IsRecording(), "spans are recorded with tracing off")
}
