package webhooks

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestValidateSpecFields(t *testing.T) {
	tls := func(n int) []v1.GatewayTLS {
		out := make([]v1.GatewayTLS, n)
		for i := range out {
			out[i] = v1.GatewayTLS{Hosts: []string{"a.example.com"}, SecretName: "s"}
		}
		return out
	}
	q := resource.MustParse
	tests := map[string]struct {
		spec v1.APIGatewaySpec
		want []string // "field: type" of each error
	}{
		"none set":             {},
		"16 tls entries":       {spec: v1.APIGatewaySpec{TLS: tls(16)}},
		"17 tls entries":       {spec: v1.APIGatewaySpec{TLS: tls(17)}, want: []string{"spec.tls: Too many"}},
		"101 hosts in a entry": {spec: v1.APIGatewaySpec{TLS: []v1.GatewayTLS{{Hosts: make([]string, 101), SecretName: "s"}}}, want: []string{"spec.tls[0].hosts: Too many"}},
		"class nginx":          {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("nginx")}},
		"class with a dot":     {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("internal.example.com")}},
		"class upper case":     {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("Nginx")}, want: []string{"spec.ingressClassName: Invalid value"}},
		"class with a space":   {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("a b")}, want: []string{"spec.ingressClassName: Invalid value"}},
		"class empty":          {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("")}, want: []string{"spec.ingressClassName: Invalid value"}},
		"class too long":       {spec: v1.APIGatewaySpec{IngressClassName: ptr.To(strings.Repeat("a", 254))}, want: []string{"spec.ingressClassName: Too long"}},
		"resources fine": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("100m"), "example.com/gpu": q("1")},
			Limits:   corev1.ResourceList{"cpu": q("1")}}}},
		"negative request": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"memory": q("-1Mi")}}}, want: []string{"spec.resources.requests[memory]: Invalid value"}},
		"request over limit": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("2")}, Limits: corev1.ResourceList{"cpu": q("1")}}}, want: []string{"spec.resources.requests[cpu]: Invalid value"}},
		"bad resource name": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"cpu cores": q("1")}}}, want: []string{"spec.resources.limits[cpu cores]: Invalid value"}},
		"duplicate claim": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Claims: []corev1.ResourceClaim{{Name: "gpu"}, {Name: "gpu"}}}}, want: []string{"spec.resources.claims[1].name: Duplicate value"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := validateSpecFields(&tc.spec, field.NewPath("spec"))
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Field + ": " + e.Type.String()
			}
			assert.ElementsMatch(t, tc.want, got, "%v", errs)
		})
	}
}

// TestValidateRefusesAnObjectV1alpha1CannotCarry: Validate reports, at
// spec, a gateway whose v1alpha1 form would need more annotation bytes
// than conversion.MaxV1alpha1AnnotationBytes; one that fits passes.
func TestValidateRefusesAnObjectV1alpha1CannotCarry(t *testing.T) {
	gw := validGateway()
	gw.Spec.Routes = nil
	for i := range 100 {
		path := "/" + strings.Repeat("a&", 500) + strconv.Itoa(i)
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: "api.example.com", Path: path, PathType: v1.PathTypeExact,
			BackendService: v1.BackendService{Name: "svc", Port: 80}})
	}
	errs, _ := Validate(nil, gw, Context{})
	assert.Empty(t, errs, "100 long Exact routes fit once '&' takes one byte")

	gw.Annotations = map[string]string{"note": strings.Repeat("x", 150<<10)}
	errs, _ = Validate(nil, gw, Context{})
	require.Len(t, errs, 1)
	assert.Equal(t, "spec", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "too large to be read through v1alpha1")
}
