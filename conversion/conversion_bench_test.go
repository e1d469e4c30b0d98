package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/internal/testenv"
)

// benchGateway is a 10-route hub object with hub-only fields set (Exact
// routes, TLS), so converting it down writes the preserving annotation.
func benchGateway() *v1.APIGateway {
	gw := &v1.APIGateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "ns", UID: "u", Generation: 2},
		Spec: v1.APIGatewaySpec{
			Image: "nginx:1.27", Replicas: ptr.To[int32](2),
			TLS: []v1.GatewayTLS{{Hosts: []string{"api.example.com"}, SecretName: "api-tls"}},
		},
	}
	for i := range 10 {
		pt := v1.PathTypePrefix
		if i%3 == 0 {
			pt = v1.PathTypeExact
		}
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: "api.example.com", Path: fmt.Sprintf("/svc%d/", i), PathType: pt,
			BackendService: v1.BackendService{Name: fmt.Sprintf("svc-%d", i), Port: 8080}})
	}
	return gw
}

// BenchmarkV1ToV1alpha1 converts a 10-route hub object down.
func BenchmarkV1ToV1alpha1(b *testing.B) {
	src := benchGateway()
	b.ReportAllocs()
	for b.Loop() {
		if err := V1ToV1alpha1(src, &v1alpha1.APIGateway{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkV1alpha1ToV1 converts it back up, restoring from the annotation.
func BenchmarkV1alpha1ToV1(b *testing.B) {
	src := &v1alpha1.APIGateway{}
	if err := V1ToV1alpha1(benchGateway(), src); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		V1alpha1ToV1(src, &v1.APIGateway{})
	}
}

// BenchmarkConversionReview is one ConversionReview of 100 objects through
// controller-runtime's handler: decoding, converting, encoding. ns/op over
// 100 is the per-object cost a LIST through the webhook pays.
func BenchmarkConversionReview(b *testing.B) {
	scheme := testenv.NewScheme()
	converter, err := NewConverter(scheme)
	if err != nil {
		b.Fatal(err)
	}
	registry := crconversion.NewRegistry()
	if err := registry.RegisterConverter(v1.GroupVersion.WithKind("APIGateway").GroupKind(), converter); err != nil {
		b.Fatal(err)
	}
	h := crconversion.NewWebhookHandler(scheme, registry)
	raw, err := json.Marshal(benchGateway())
	if err != nil {
		b.Fatal(err)
	}
	objects := make([]string, 100)
	for i := range objects {
		objects[i] = string(raw)
	}
	body := review("example.com/v1alpha1", objects...)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewBufferString(body)))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"Success"`) {
			b.Fatalf("conversion failed: %d %.300s", rec.Code, rec.Body.String())
		}
	}
}
