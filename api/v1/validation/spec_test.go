package validation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
		want []string // "field: type (rule)" of each error
	}{
		"none set":             {},
		"16 tls entries":       {spec: v1.APIGatewaySpec{TLS: tls(16)}},
		"17 tls entries":       {spec: v1.APIGatewaySpec{TLS: tls(17)}, want: []string{"spec.tls: Too many (tls)"}},
		"101 hosts in a entry": {spec: v1.APIGatewaySpec{TLS: []v1.GatewayTLS{{Hosts: make([]string, 101), SecretName: "s"}}}, want: []string{"spec.tls[0].hosts: Too many (tls.hosts)"}},
		"101 routes":           {spec: v1.APIGatewaySpec{Routes: make([]v1.Route, 101)}, want: []string{"spec.routes: Too many (routes)"}},
		"class nginx":          {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("nginx")}},
		"class with a dot":     {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("internal.example.com")}},
		"class upper case":     {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("Nginx")}, want: []string{"spec.ingressClassName: Invalid value (ingressClassName)"}},
		"class with a space":   {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("a b")}, want: []string{"spec.ingressClassName: Invalid value (ingressClassName)"}},
		"class empty":          {spec: v1.APIGatewaySpec{IngressClassName: ptr.To("")}, want: []string{"spec.ingressClassName: Invalid value (ingressClassName)"}},
		"class too long":       {spec: v1.APIGatewaySpec{IngressClassName: ptr.To(strings.Repeat("a", 254))}, want: []string{"spec.ingressClassName: Too long (ingressClassName)"}},
		"resources fine": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("100m"), "example.com/gpu": q("1")},
			Limits:   corev1.ResourceList{"cpu": q("1")}}}},
		"negative request": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"memory": q("-1Mi")}}}, want: []string{"spec.resources.requests[memory]: Invalid value (resources)"}},
		"request over limit": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("2")}, Limits: corev1.ResourceList{"cpu": q("1")}}}, want: []string{"spec.resources.requests[cpu]: Invalid value (resources)"}},
		"bad resource name": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"cpu cores": q("1")}}}, want: []string{"spec.resources.limits[cpu cores]: Invalid value (resources)"}},
		"Reload":               {spec: v1.APIGatewaySpec{ConfigUpdateStrategy: v1.ConfigUpdateReload}},
		"Rollout":              {spec: v1.APIGatewaySpec{ConfigUpdateStrategy: v1.ConfigUpdateRollout}},
		"an unknown strategy":  {spec: v1.APIGatewaySpec{ConfigUpdateStrategy: "Restart"}, want: []string{"spec.configUpdateStrategy: Unsupported value (configUpdateStrategy)"}},
		"access log JSON":      {spec: v1.APIGatewaySpec{AccessLog: &v1.AccessLog{Format: v1.AccessLogJSON}}},
		"access log no format": {spec: v1.APIGatewaySpec{AccessLog: &v1.AccessLog{}}, want: []string{"spec.accessLog.format: Required value (accessLog)"}},
		"access log text":      {spec: v1.APIGatewaySpec{AccessLog: &v1.AccessLog{Format: "Text"}}, want: []string{"spec.accessLog.format: Unsupported value (accessLog)"}},
		"duplicate claim": {spec: v1.APIGatewaySpec{Resources: &corev1.ResourceRequirements{
			Claims: []corev1.ResourceClaim{{Name: "gpu"}, {Name: "gpu"}}}}, want: []string{"spec.resources.claims[1].name: Duplicate value (resources)"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := field.NewPath("spec")
			errs := ValidateCounts(&tc.spec, spec)
			errs = append(errs, validateIngressClassName(tc.spec.IngressClassName, spec.Child("ingressClassName"))...)
			errs = append(errs, validateResources(tc.spec.Resources, spec.Child("resources"))...)
			errs = append(errs, validateConfigUpdateStrategy(tc.spec.ConfigUpdateStrategy, spec.Child("configUpdateStrategy"))...)
			errs = append(errs, validateAccessLog(tc.spec.AccessLog, spec.Child("accessLog"))...)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Field + ": " + e.Type.String() + " (" + e.Origin + ")"
			}
			assert.ElementsMatch(t, tc.want, got, "%v", errs)
		})
	}
}

// TestValidateStopsAtTooMany: a list beyond its limit is the one error
// reported, however many of its elements are invalid too: a million of
// them must not cost a million errors.
func TestValidateStopsAtTooMany(t *testing.T) {
	gw := validGateway()
	gw.Spec.TLS = []v1.GatewayTLS{{Hosts: make([]string, 100_000)}}
	gw.Spec.Routes = append(gw.Spec.Routes, make([]v1.Route, 100_000)...)
	errs := Validate(nil, gw)
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Field + ": " + e.Type.String()
	}
	assert.Equal(t, []string{"spec.routes: Too many", "spec.tls[0].hosts: Too many"}, got)
}
