package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"example.com/apigateway-operator/manifests/crd"
)

// TestCompileRules: the embedded CRD states every bound, pattern, enum and
// list the rules read, and a CRD that lacks one is refused naming the
// field, so a marker removed from api/v1 fails here (and the binary at its
// first validation) instead of leaving a rule without its bound.
func TestCompileRules(t *testing.T) {
	err := compileRules(crd.APIGateways)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		change func(spec *apiextensionsv1.JSONSchemaProps)
		want   string
	}{
		"a list without maxItems": {func(spec *apiextensionsv1.JSONSchemaProps) {
			routes := spec.Properties["routes"]
			routes.MaxItems = nil
			spec.Properties["routes"] = routes
		}, "spec.routes: no maxItems"},
		"a number without maximum": {func(spec *apiextensionsv1.JSONSchemaProps) {
			replicas := spec.Properties["replicas"]
			replicas.Maximum = nil
			spec.Properties["replicas"] = replicas
		}, "spec.replicas: no minimum and maximum"},
		"an enum gone": {func(spec *apiextensionsv1.JSONSchemaProps) {
			s := spec.Properties["configUpdateStrategy"]
			s.Enum = nil
			spec.Properties["configUpdateStrategy"] = s
		}, "spec.configUpdateStrategy: no enum"},
		"a field gone": {func(spec *apiextensionsv1.JSONSchemaProps) {
			delete(spec.Properties, "image")
		}, "spec.image: no property image"},
	} {
		t.Run(name, func(t *testing.T) {
			err := compileRules(withV1Spec(t, tc.change))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// withV1Spec is the embedded CRD with change made to its v1 spec schema.
func withV1Spec(t *testing.T, change func(*apiextensionsv1.JSONSchemaProps)) []byte {
	t.Helper()
	def := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(crd.APIGateways, def))
	for i, v := range def.Spec.Versions {
		if v.Name == "v1" {
			spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
			change(&spec)
			def.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}
	}
	out, err := yaml.Marshal(def)
	require.NoError(t, err)
	return out
}

// compileRules reads the rules from a CRD's YAML, as the embedded one is
// read.
func compileRules(crdYAML []byte) error {
	spec, err := v1SpecSchema(crdYAML)
	if err != nil {
		return err
	}
	_, err = rulesOf(spec)
	return err
}
