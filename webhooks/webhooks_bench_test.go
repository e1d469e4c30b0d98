package webhooks

import (
	"fmt"
	"testing"

	v1 "example.com/apigateway-operator/api/v1"
)

// benchGateway is a valid gateway with n routes on two hosts, left for
// Default to fill in (no image, no replicas, no path types).
func benchGateway(n int) *v1.APIGateway {
	gw := validGateway()
	gw.Spec.Image, gw.Spec.Replicas, gw.Spec.TLS = "", nil, nil
	gw.Spec.Routes = nil
	for i := range n {
		r := route(fmt.Sprintf("/svc%d/", i), fmt.Sprintf("svc-%d", i), 8080)
		r.Host = fmt.Sprintf("API%d.Example.com", i%2)
		r.PathType = ""
		gw.Spec.Routes = append(gw.Spec.Routes, r)
	}
	return gw
}

// BenchmarkDefault is the mutating webhook's work on a 10-route gateway
// (copying it, as the webhook decodes a fresh one per request).
func BenchmarkDefault(b *testing.B) {
	gw := benchGateway(10)
	b.ReportAllocs()
	for b.Loop() {
		Default(gw.DeepCopy(), testDefaults)
	}
}

// BenchmarkValidate is the validating webhook's work on a defaulted
// 10-route create, with another gateway serving one of its hosts and paths
// and every backend Service known.
func BenchmarkValidate(b *testing.B) {
	gw := benchGateway(10)
	Default(gw, testDefaults)
	other := benchGateway(1)
	other.Name = "other"
	Default(other, testDefaults)
	ports := map[string][]int32{}
	for _, r := range gw.Spec.Routes {
		ports[r.BackendService.Name] = []int32{8080}
	}
	c := Context{Others: []v1.APIGateway{*other}, ServicePorts: ports}
	if errs, _ := Validate(nil, gw, c); len(errs) == 0 {
		b.Fatal("the benchmark gateway conflicts with no other: it must, to exercise the check")
	}
	c.Others[0].Spec.Routes[0].Path = "/elsewhere/"
	if errs, _ := Validate(nil, gw, c); len(errs) > 0 {
		b.Fatalf("the benchmark gateway is invalid: %v", errs)
	}
	b.ReportAllocs()
	for b.Loop() {
		Validate(nil, gw, c)
	}
}

// BenchmarkHostPathKeys is the field index's work per gateway.
func BenchmarkHostPathKeys(b *testing.B) {
	gw := benchGateway(10)
	Default(gw, testDefaults)
	b.ReportAllocs()
	for b.Loop() {
		HostPathKeys(gw)
	}
}
