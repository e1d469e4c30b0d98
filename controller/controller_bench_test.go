package controller

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// benchGateway is a 10-route gateway on two hosts, half Exact routes.
func benchGateway() *v1.APIGateway {
	var routes []v1.Route
	for i := range 10 {
		pt := v1.PathTypePrefix
		if i%2 == 0 {
			pt = v1.PathTypeExact
		}
		routes = append(routes, route(fmt.Sprintf("api%d.example.com", i%2), fmt.Sprintf("/svc%d/", i), pt, fmt.Sprintf("svc-%d", i), 8080))
	}
	gw := gateway("bench", routes...)
	gw.Spec.Image, gw.Spec.Replicas = "nginx:1.27", ptr.To[int32](2)
	return gw
}

// benchTrafficGateway is a 100-route gateway on ten hosts, every route
// with every traffic setting (everySetting: a weighted canary, timeouts, a
// rewrite, three request and three response header changes, a body limit
// and a rate limit).
func benchTrafficGateway() *v1.APIGateway {
	routes := make([]v1.Route, 100)
	for i := range routes {
		routes[i] = everySetting(route(fmt.Sprintf("api%d.example.com", i%10), fmt.Sprintf("/svc%d/", i), v1.PathTypePrefix, fmt.Sprintf("svc-%d", i), 8080))
	}
	return gateway("bench-traffic", routes...)
}

// BenchmarkRenderConfig renders a gateway's nginx configuration: 10 routes
// without traffic settings, and 100 routes with every one.
func BenchmarkRenderConfig(b *testing.B) {
	for name, gw := range map[string]*v1.APIGateway{"10 routes": benchGateway(), "100 routes, every setting": benchTrafficGateway()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := renderConfig(gw, renderOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDesiredChildren builds all four children of a 10-route gateway
// as a reconcile does: render, hash, then one apply configuration each.
func BenchmarkDesiredChildren(b *testing.B) {
	gw := benchGateway()
	b.ReportAllocs()
	for b.Loop() {
		config, err := renderConfig(gw, renderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		_ = desiredConfigMap(gw, config)
		_ = desiredDeployment(gw, deploymentParams{Image: testImage, ConfigHash: configHash(config), ReloaderImage: testReloaderImage})
		_ = desiredService(gw)
		_ = desiredIngress(gw)
	}
}

// BenchmarkRenderedSizeBound is what admission pays instead of a render
// (ValidateRenderedSize) for a gateway far below MaxConfigBytes.
func BenchmarkRenderedSizeBound(b *testing.B) {
	gw := benchTrafficGateway()
	b.ReportAllocs()
	for b.Loop() {
		if renderedSizeBound(gw) > MaxConfigBytes {
			b.Fatal("the 100-route gateway's bound is over MaxConfigBytes")
		}
	}
}
