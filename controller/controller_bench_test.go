package controller

import (
	"testing"

	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/render/rendertest"
)

// BenchmarkDesiredChildren builds all four children of a 10-route gateway
// as a reconcile does: render, hash, then one apply configuration each.
func BenchmarkDesiredChildren(b *testing.B) {
	gw := rendertest.Bench()
	b.ReportAllocs()
	for b.Loop() {
		config, err := render.Config(gw, render.Options{})
		if err != nil {
			b.Fatal(err)
		}
		_ = desiredConfigMap(gw, config)
		_ = desiredDeployment(gw, deploymentParams{Image: testImage, ConfigHash: configHash(config), ReloaderImage: testReloaderImage})
		_ = desiredService(gw)
		_ = desiredIngress(gw)
	}
}
