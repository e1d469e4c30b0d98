package render

import (
	"testing"

	v1 "example.com/apigateway-operator/api/v1"
)

// BenchmarkRenderConfig renders a gateway's nginx configuration: 10 routes
// without traffic settings, and 100 routes with every one.
func BenchmarkRenderConfig(b *testing.B) {
	for name, gw := range map[string]*v1.APIGateway{"10 routes": benchGateway(), "100 routes, every setting": benchTrafficGateway()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Config(gw, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderedSizeBound is what admission pays instead of a render
// (ValidateRenderedSize) for a gateway far below MaxConfigBytes.
func BenchmarkRenderedSizeBound(b *testing.B) {
	gw := benchTrafficGateway()
	b.ReportAllocs()
	for b.Loop() {
		if Resolve(gw, Options{}).sizeBound() > MaxConfigBytes {
			b.Fatal("the 100-route gateway's bound is over MaxConfigBytes")
		}
	}
}
