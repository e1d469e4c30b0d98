package conversion

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
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
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: "api.example.com", Path: v1.HTTPPath(fmt.Sprintf("/svc%d/", i)), PathType: pt,
			BackendService: v1.BackendService{Name: v1.ServiceName(fmt.Sprintf("svc-%d", i)), Port: 8080}})
	}
	return gw
}

// listGateway is a gateway as B3 lists it: one Prefix route, nothing
// v1alpha1 cannot carry, and the metadata the API server keeps, managed
// fields included.
func listGateway() *v1.APIGateway {
	created := metav1.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	return &v1.APIGateway{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "gw-00042", Namespace: "big", UID: "5e0f4b9c-7d8e-4a43-9c3f-0f2c0c8e5a42",
			ResourceVersion: "123456", Generation: 1, CreationTimestamp: created,
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: v1.GroupVersion.String(),
				Time: &created, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{".":{},` +
					`"f:image":{},"f:replicas":{},"f:routes":{}}}`),
			}},
		},
		Spec: v1.APIGatewaySpec{
			Image: "registry.example.com/gateway:1.0", Replicas: ptr.To[int32](1),
			Routes: []v1.Route{{Host: "api.example.com", Path: "/big-42-0/", PathType: v1.PathTypePrefix,
				BackendService: v1.BackendService{Name: "svc-0", Port: 8080}}},
		},
	}
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

// BenchmarkConvertReview1000 is one ConversionReview of 1,000 10-route v1
// gateways to v1alpha1 through the handler, as a LIST through v1alpha1
// sends it: reading, decoding, converting on all CPUs, encoding, writing.
// µs/object is the wall time per object such a LIST pays.
func BenchmarkConvertReview1000(b *testing.B) {
	benchmarkReview(b, v1alpha1.GroupVersion.String(), benchGateway())
}

// BenchmarkConvertReview1000Up converts 1,000 of the same gateways, as
// v1alpha1 objects with the preserving annotation, back to v1.
func BenchmarkConvertReview1000Up(b *testing.B) {
	alpha := &v1alpha1.APIGateway{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "APIGateway"}}
	if err := V1ToV1alpha1(benchGateway(), alpha); err != nil {
		b.Fatal(err)
	}
	benchmarkReview(b, v1.GroupVersion.String(), alpha)
}

// BenchmarkConvertReview1000List converts 1,000 gateways like B3's (see
// listGateway) to v1alpha1.
func BenchmarkConvertReview1000List(b *testing.B) {
	benchmarkReview(b, v1alpha1.GroupVersion.String(), listGateway())
}

func benchmarkReview(b *testing.B, desired string, obj any) {
	const n = 1000
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	objects := make([]string, n)
	for i := range objects {
		objects[i] = string(raw)
	}
	body := review(desired, objects...)
	h := NewWebhookHandler()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(body)))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"Success"`) {
			b.Fatalf("conversion failed: %d %.300s", rec.Code, rec.Body.String())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N)/n, "µs/object")
}
