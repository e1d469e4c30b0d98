package validation

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/crd"
)

// v1Schema is the v1 schema of the CRD the cluster gets.
func v1Schema(t *testing.T) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	def := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(crd.APIGateways, def))
	for _, v := range def.Spec.Versions {
		if v.Name == "v1" {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatal("the CRD has no v1 schema")
	return nil
}

// schemaLimit is the maxItems or maxLength of the schema node at path
// (property names; "[]" steps into a list's items).
func schemaLimit(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) int {
	t.Helper()
	for step := range strings.SplitSeq(path, ".") {
		if step == "[]" {
			require.NotNil(t, s.Items, path)
			s = s.Items.Schema
			continue
		}
		p, ok := s.Properties[step]
		require.True(t, ok, "no %s in the schema at %s", step, path)
		s = &p
	}
	switch {
	case s.MaxItems != nil:
		return int(*s.MaxItems)
	case s.MaxLength != nil:
		return int(*s.MaxLength)
	}
	t.Fatalf("the schema sets no maxItems or maxLength at %s", path)
	return 0
}

// TestWithinSizeLimits holds WithinSizeLimits to the CRD's own limits: a
// spec with one field at the schema's limit is within them, one past it
// is not.
func TestWithinSizeLimits(t *testing.T) {
	schema := v1Schema(t)
	str := func(n int) string { return strings.Repeat("a", n) }
	parents := func(s *v1.APIGatewaySpec) *v1.HTTPRouteExposure {
		s.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{
			ParentRefs: []v1.ParentGatewayReference{{Name: "public"}}}}
		return s.Exposure.HTTPRoute
	}
	tests := map[string]func(s *v1.APIGatewaySpec, n int){
		"spec.image":          func(s *v1.APIGatewaySpec, n int) { s.Image = v1.Image(str(n)) },
		"spec.routes":         func(s *v1.APIGatewaySpec, n int) { s.Routes = make([]v1.Route, n) },
		"spec.routes.[].host": func(s *v1.APIGatewaySpec, n int) { s.Routes[0].Host = v1.Hostname(str(n)) },
		"spec.routes.[].path": func(s *v1.APIGatewaySpec, n int) { s.Routes[0].Path = v1.HTTPPath("/" + str(n-1)) },
		"spec.routes.[].backendService.name": func(s *v1.APIGatewaySpec, n int) {
			s.Routes[0].BackendService.Name = v1.ServiceName(str(n))
		},
		"spec.tls":               func(s *v1.APIGatewaySpec, n int) { s.TLS = make([]v1.GatewayTLS, n) },
		"spec.tls.[].hosts":      func(s *v1.APIGatewaySpec, n int) { s.TLS = []v1.GatewayTLS{{Hosts: make([]string, n)}} },
		"spec.tls.[].hosts.[]":   func(s *v1.APIGatewaySpec, n int) { s.TLS = []v1.GatewayTLS{{Hosts: []string{str(n)}}} },
		"spec.tls.[].secretName": func(s *v1.APIGatewaySpec, n int) { s.TLS = []v1.GatewayTLS{{SecretName: str(n)}} },
		"spec.ingressClassName":  func(s *v1.APIGatewaySpec, n int) { s.IngressClassName = ptr.To(str(n)) },
		"spec.exposure.httpRoute.parentRefs": func(s *v1.APIGatewaySpec, n int) {
			parents(s).ParentRefs = make([]v1.ParentGatewayReference, n)
		},
		"spec.exposure.httpRoute.parentRefs.[].name": func(s *v1.APIGatewaySpec, n int) {
			parents(s).ParentRefs[0].Name = str(n)
		},
		"spec.exposure.httpRoute.parentRefs.[].namespace": func(s *v1.APIGatewaySpec, n int) {
			parents(s).ParentRefs[0].Namespace = ptr.To(str(n))
		},
		"spec.exposure.httpRoute.parentRefs.[].sectionName": func(s *v1.APIGatewaySpec, n int) {
			parents(s).ParentRefs[0].SectionName = ptr.To(str(n))
		},
		"spec.delegations": func(s *v1.APIGatewaySpec, n int) { s.Delegations = make([]v1.HostDelegation, n) },
		"spec.delegations.[].pathPrefixes": func(s *v1.APIGatewaySpec, n int) {
			s.Delegations = []v1.HostDelegation{{PathPrefixes: make([]v1.HTTPPath, n)}}
		},
		"spec.delegations.[].namespace": func(s *v1.APIGatewaySpec, n int) {
			s.Delegations = []v1.HostDelegation{{Namespace: str(n)}}
		},
		"spec.routes.[].additionalBackends": func(s *v1.APIGatewaySpec, n int) {
			s.Routes[0].AdditionalBackends = make([]v1.WeightedBackend, n)
			for i := range n {
				s.Routes[0].AdditionalBackends[i] = v1.WeightedBackend{Name: "b", Port: 80}
			}
		},
		"spec.routes.[].requestHeaders.set": func(s *v1.APIGatewaySpec, n int) {
			s.Routes[0].RequestHeaders = &v1.HeaderModifier{Set: make([]v1.HTTPHeader, n)}
		},
		"spec.routes.[].responseHeaders.add.[].value": func(s *v1.APIGatewaySpec, n int) {
			s.Routes[0].ResponseHeaders = &v1.HeaderModifier{Add: []v1.HTTPHeader{{Name: "x", Value: v1.HTTPHeaderValue(str(n))}}}
		},
	}
	for path, set := range tests {
		t.Run(path, func(t *testing.T) {
			limit := schemaLimit(t, schema, path)
			at := validGateway().Spec
			set(&at, limit)
			assert.True(t, WithinSizeLimits(&at), "%d, the schema's limit", limit)
			over := validGateway().Spec
			set(&over, limit+1)
			assert.False(t, WithinSizeLimits(&over), "%d, past the schema's limit", limit+1)
		})
	}
	assert.True(t, WithinSizeLimits(&validGateway().Spec))

	for name, set := range map[string]func(*v1.APIGatewaySpec){
		"a pathType the schema does not know": func(s *v1.APIGatewaySpec) { s.Routes[0].PathType = "Regex" },
		"an exposure type it does not know":   func(s *v1.APIGatewaySpec) { s.Exposure = &v1.Exposure{Type: "LoadBalancer"} },
	} {
		spec := validGateway().Spec
		set(&spec)
		assert.False(t, WithinSizeLimits(&spec), name)
	}
}

// BenchmarkWithinSizeLimits is the route index's cost per event for a
// 100-route gateway.
func BenchmarkWithinSizeLimits(b *testing.B) {
	spec := validGateway().Spec
	spec.Routes = slices.Repeat(spec.Routes[:1], 100)
	for b.Loop() {
		if !WithinSizeLimits(&spec) {
			b.Fatal("a valid spec is past the limits")
		}
	}
}

// TestWithinSizeLimitsReadsSizesOnly: the conversion annotation holds only
// what v1alpha1 lacks, so a route there has no backend and its numbers are
// zero; such a spec is within the limits.
func TestWithinSizeLimitsReadsSizesOnly(t *testing.T) {
	spec := v1.APIGatewaySpec{Routes: []v1.Route{{Host: "a.example.com", PathType: v1.PathTypeExact,
		AdditionalBackends: []v1.WeightedBackend{{Name: "b"}}, Timeouts: &v1.RouteTimeouts{ReadSeconds: ptr.To(int32(0))}}}}
	assert.True(t, WithinSizeLimits(&spec))
}
