package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// benchGateway is a valid gateway with n routes on two hosts, left for
// Default to fill in (no image, no replicas, no path types).
func benchGateway(n int) *v1.APIGateway {
	gw := validGateway()
	gw.Spec.Image, gw.Spec.Replicas, gw.Spec.TLS = "", nil, nil
	gw.Spec.Routes = nil
	for i := range n {
		r := route(fmt.Sprintf("/svc%d/", i), fmt.Sprintf("svc-%d", i), 8080)
		r.Host = v1.Hostname(fmt.Sprintf("API%d.Example.com", i%2))
		r.PathType = ""
		gw.Spec.Routes = append(gw.Spec.Routes, r)
	}
	return gw
}

// BenchmarkDefault is the defaults table's work on a 10-route gateway as
// the mutating webhook decodes it (defaults.Patch).
func BenchmarkDefault(b *testing.B) {
	raw, err := json.Marshal(benchGateway(10))
	if err != nil {
		b.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		b.Fatal(err)
	}
	params := testDefaults.Params(nil)
	b.ReportAllocs()
	for b.Loop() {
		defaults.Patch(obj, params)
	}
}

// defaulted is gw as the defaults table makes it.
func defaulted(gw *v1.APIGateway) *v1.APIGateway {
	out, err := defaults.Defaulted(gw, testDefaults.Params(nil))
	if err != nil {
		panic(err)
	}
	return out
}

// benchTrafficGateway is benchGateway(100) with every traffic setting on
// every route (validationtest.EverySetting), as BenchmarkRenderConfig
// renders it.
func benchTrafficGateway() *v1.APIGateway {
	gw := benchGateway(100)
	for i := range gw.Spec.Routes {
		gw.Spec.Routes[i] = validationtest.EverySetting(gw.Spec.Routes[i])
	}
	return gw
}

// benchGateways are BenchmarkValidate's and BenchmarkValidatingHandler's
// creates, left for Default to fill in.
var benchGateways = []struct {
	name string
	gw   func() *v1.APIGateway
}{
	{"10 routes", func() *v1.APIGateway { return benchGateway(10) }},
	{"100 routes, every setting", benchTrafficGateway},
}

// BenchmarkValidate is the validating webhook's work on a defaulted
// create, with another gateway serving one of its hosts and paths and
// every backend Service known.
func BenchmarkValidate(b *testing.B) {
	for _, bc := range benchGateways {
		b.Run(bc.name, func(b *testing.B) {
			gw := defaulted(bc.gw())
			other := defaulted(benchGateway(1))
			other.Name = "other"
			ports := map[string][]int32{}
			for _, r := range gw.Spec.Routes {
				ports[string(r.BackendService.Name)] = []int32{8080}
			}
			related := admit.RelatedObjects{Gateways: []v1.APIGateway{*other}, ServicePorts: ports}
			if errs, _ := admit.Validate(nil, gw, related); len(errs) == 0 {
				b.Fatal("the benchmark gateway conflicts with no other: it must, to exercise the check")
			}
			related.Gateways[0].Spec.Routes[0].Path = "/elsewhere/"
			if errs, _ := admit.Validate(nil, gw, related); len(errs) > 0 {
				b.Fatalf("the benchmark gateway is invalid: %v", errs)
			}
			b.ReportAllocs()
			for b.Loop() {
				admit.Validate(nil, gw, related)
			}
		})
	}
}

// BenchmarkRouteKeys is the route index's work per gateway.
func BenchmarkRouteKeys(b *testing.B) {
	gw := defaulted(benchGateway(10))
	b.ReportAllocs()
	for b.Loop() {
		validation.RouteKeys(gw)
	}
}

// namespaceStub is a Namespace cache that knows every namespace, without
// an annotation, at the cost of a map read.
type namespaceStub struct{ client.Reader }

func (namespaceStub) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return nil
}

// benchRequest is a create of gw as the API server sends it to the
// webhooks; defaulted selects the validating webhook's copy.
func benchRequest(b *testing.B, gw *v1.APIGateway, complete bool) admission.Request {
	if complete {
		gw = defaulted(gw)
	}
	gw.APIVersion, gw.Kind, gw.Namespace = v1.GroupVersion.String(), apiGatewayKind, "default"
	raw, err := json.Marshal(gw)
	if err != nil {
		b.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u", Operation: admissionv1.Create, Namespace: "default", Name: gw.Name,
		Object: runtime.RawExtension{Raw: raw},
	}}
}

// BenchmarkMutatingHandler is the mutating webhook's whole work on one
// request, from the raw object to the patch.
func BenchmarkMutatingHandler(b *testing.B) {
	h := mutatingHandler{&Defaulter{Namespaces: namespaceStub{}, Operator: testDefaults}}
	req := benchRequest(b, benchGateway(10), false)
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(b.Context(), req); !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("%+v", resp.Result)
		}
	}
}

// BenchmarkValidatingHandler is the validating webhook's whole work on one
// request, with an index of 10,000 other gateways.
func BenchmarkValidatingHandler(b *testing.B) {
	var others []*v1.APIGateway
	for i := range 10000 {
		gw := defaulted(benchGateway(1))
		gw.Name, gw.Spec.Routes[0].Path = fmt.Sprintf("gw-%d", i), v1.HTTPPath(fmt.Sprintf("/other-%d/", i))
		others = append(others, gw)
	}
	h := validatingHandler{&Validator{Gateways: testFinder(b, others...)}}
	for _, bc := range benchGateways {
		b.Run(bc.name, func(b *testing.B) {
			req := benchRequest(b, bc.gw(), true)
			b.ReportAllocs()
			for b.Loop() {
				if resp := h.Handle(b.Context(), req); !resp.Allowed {
					b.Fatalf("%+v", resp.Result)
				}
			}
		})
	}
}
