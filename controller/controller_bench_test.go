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

// BenchmarkRenderConfig renders a 10-route gateway's nginx configuration.
func BenchmarkRenderConfig(b *testing.B) {
	gw := benchGateway()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := renderConfig(gw, renderOptions{}); err != nil {
			b.Fatal(err)
		}
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
