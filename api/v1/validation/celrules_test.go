package validation

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservercel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/crd"
)

// TestPathParityOverUnicode holds the CRD's rules on a path to package
// validation's for every Unicode code point, percent-encoded as UTF-8:
// the schema lists as encoded bytes the control and whitespace characters
// the package finds with unicode.IsControl and unicode.IsSpace, and only
// checking every code point shows the list complete. The path's rules run
// in the API server's own CEL validator, in process (the table above sends
// its cases through a real API server; a million of them would take
// minutes). Code points go in chunks as long as a path may be, and a chunk
// a layer refuses is split until each refusal is pinned to one code point.
func TestPathParityOverUnicode(t *testing.T) {
	schema := crdPathSchema(t)
	celRefuses := func(path string) bool {
		errs, _ := schema.validator.Validate(t.Context(), field.NewPath("path"), schema.structural, path, nil, celconfig.RuntimeCELCostBudget)
		return len(errs) > 0
	}
	pkgRefuses := func(path string) bool {
		r := v1.Route{Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "s", Port: 80}}
		return len(ValidateRoute(&r, field.NewPath("spec", "routes"), 0)) > 0
	}
	refused := 0
	var check func(lo, hi rune)
	check = func(lo, hi rune) {
		path := encodedPath(lo, hi)
		cel, pkg := celRefuses(path), pkgRefuses(path)
		switch {
		case !cel && !pkg:
			return
		case hi-lo == 1:
			require.Equal(t, pkg, cel, "U+%04X (%s): the package refuses it: %v; the schema: %v", lo, path, pkg, cel)
			refused++
			return
		}
		mid := lo + (hi-lo)/2
		check(lo, mid)
		check(mid, hi)
	}
	const chunk = 80 // 80 four-byte code points, 12 characters each, fit in 1024
	for lo := rune(utf8.RuneSelf); lo <= unicode.MaxRune; lo += chunk {
		hi := min(lo+chunk, unicode.MaxRune+1)
		if lo < 0xE000 && hi > 0xD800 {
			// Surrogates have no UTF-8 form; their ranges go alone.
			check(lo, max(lo, 0xD800))
			check(min(hi, 0xE000), hi)
			continue
		}
		check(lo, hi)
	}
	// The C1 controls and the 19 non-ASCII White_Space characters.
	assert.Equal(t, 32+19-1, refused, "U+0085 is both")
}

// encodedPath is "/" and the code points lo to hi-1, surrogates left out,
// each percent-encoded as UTF-8.
func encodedPath(lo, hi rune) string {
	var b strings.Builder
	b.WriteByte('/')
	for r := lo; r < hi; r++ {
		if 0xD800 <= r && r < 0xE000 {
			continue
		}
		for _, c := range []byte(string(r)) {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// pathSchema is the v1 CRD's schema of a route's path, with its CEL rules
// compiled as the API server compiles them.
type pathSchema struct {
	structural *structuralschema.Structural
	validator  *apiservercel.Validator
}

func crdPathSchema(t *testing.T) pathSchema {
	t.Helper()
	props := crdSchema(t, "v1").Properties["spec"].Properties["routes"].Items.Schema.Properties["path"]
	var internal apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&props, &internal, nil))
	s, err := structuralschema.NewStructural(&internal)
	require.NoError(t, err)
	v := apiservercel.NewValidator(s, false, celconfig.PerCallLimit)
	require.NotNil(t, v, "the path schema has no CEL rules")
	return pathSchema{structural: s, validator: v}
}

// TestV1alpha1SchemaRepeatsV1Rules: a write through v1alpha1 meets the
// v1alpha1 schema only, before conversion, so while the webhook is down
// its rules on names, hosts, prefixes and Service names are all that
// guards the proxy configuration. They must be the v1 rules the table
// above holds to the package, word for word.
func TestV1alpha1SchemaRepeatsV1Rules(t *testing.T) {
	v1Schema, v1alpha1Schema := crdSchema(t, "v1"), crdSchema(t, "v1alpha1")
	route := func(s *apiextensionsv1.JSONSchemaProps) map[string]apiextensionsv1.JSONSchemaProps {
		return s.Properties["spec"].Properties["routes"].Items.Schema.Properties
	}
	v1Route, v1alpha1Route := route(v1Schema), route(v1alpha1Schema)
	assert.Equal(t, v1Schema.XValidations, v1alpha1Schema.XValidations, "the name rule")
	assert.Equal(t, v1Route["host"].XValidations, v1alpha1Route["host"].XValidations, "host")
	assert.Equal(t, v1Route["path"].XValidations, v1alpha1Route["prefix"].XValidations, "path and prefix")
	assert.Equal(t, v1Route["backendService"].Properties["name"].XValidations, v1alpha1Route["serviceName"].XValidations, "Service name")
}

// crdSchema is the schema of version of the CRD the binaries embed.
func crdSchema(t *testing.T, version string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	def := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(crd.APIGateways, def))
	i := slices.IndexFunc(def.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	require.GreaterOrEqual(t, i, 0, "no version %s", version)
	return def.Spec.Versions[i].Schema.OpenAPIV3Schema
}
