package validation

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/crd"
)

// WithinSizeLimits reports whether spec keeps the v1 schema's size limits:
// every list within its maxItems, every map within its maxProperties,
// every string within its maxLength and, where the schema lists values,
// one of them. The API server
// enforces these on every v1 write, but data can reach a v1 object without
// meeting the v1 schema: a write through v1alpha1 brings the v1-only
// fields back from the conversion annotation, which the v1alpha1 schema
// never looks inside. Conversion restores nothing beyond these limits, and
// the route index computes no keys for such an object: with them, a few
// kilobytes of annotation became 200,000 index keys.
//
// The limits are read from the CRD the cluster gets (manifests/crd), not
// restated here, so a field added with a marker is bounded here too.
// Sizes only: no integer ranges, required fields, patterns or CEL rules.
// The conversion annotation holds only what v1alpha1 lacks (a route there
// has no backend, so its port is 0), and an object within these limits may
// still be invalid, which is Validate's to say.
func WithinSizeLimits(spec *v1.APIGatewaySpec) bool {
	return specLimits()(reflect.ValueOf(spec).Elem())
}

// A limitCheck reports whether a value of one Go type keeps the limits of
// its schema node; nil when that node sets none, anywhere below it.
type limitCheck func(reflect.Value) bool

// specLimits is compiled once, on first use, from the embedded CRD (some
// milliseconds of YAML that the commands which never check a spec, such as
// the reloader in every gateway pod, do not pay at start): the walk of a
// 100-route spec then reflects over values only, never over types.
var specLimits = sync.OnceValue(func() limitCheck { return compileSpecLimits(embeddedSpec()) })

// embeddedSpec is the v1 spec's schema in the embedded CRD, decoded once
// for both of what is compiled from it (specLimits, rules).
var embeddedSpec = sync.OnceValue(func() *apiextensionsv1.JSONSchemaProps {
	spec, err := v1SpecSchema(crd.APIGateways)
	if err != nil {
		// The CRD is generated and embedded at build time: a binary whose
		// CRD does not parse must not start.
		panic(fmt.Sprintf("validation: the embedded CRD: %v", err))
	}
	return spec
})

func compileSpecLimits(spec *apiextensionsv1.JSONSchemaProps) limitCheck {
	check := compileLimits(reflect.TypeFor[v1.APIGatewaySpec](), spec, false)
	if check == nil {
		return func(reflect.Value) bool { return true }
	}
	return check
}

// v1SpecSchema is the schema of spec in the CRD's v1 version.
func v1SpecSchema(crdYAML []byte) (*apiextensionsv1.JSONSchemaProps, error) {
	def := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(crdYAML, def); err != nil {
		return nil, err
	}
	for _, ver := range def.Spec.Versions {
		if ver.Name != v1.GroupVersion.Version || ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
			continue
		}
		if spec, ok := ver.Schema.OpenAPIV3Schema.Properties["spec"]; ok {
			return &spec, nil
		}
	}
	return nil, fmt.Errorf("no %s schema with a spec", v1.GroupVersion.Version)
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// compileLimits builds the check of a Go type against its schema node;
// omitEmpty says the zero value is absent from the JSON (a string left
// empty for the API server to default meets no enum).
func compileLimits(t reflect.Type, s *apiextensionsv1.JSONSchemaProps, omitEmpty bool) limitCheck {
	switch {
	case s == nil:
		return nil
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		// A type with its own encoding (resource.Quantity): the schema
		// describes the encoding, not the Go value.
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return pointerLimits(compileLimits(t.Elem(), s, false))
	case reflect.String:
		return stringLimits(s, omitEmpty)
	case reflect.Slice:
		var items *apiextensionsv1.JSONSchemaProps
		if s.Items != nil {
			items = s.Items.Schema
		}
		return collectionLimits(s.MaxItems, compileLimits(t.Elem(), items, false))
	case reflect.Map:
		var values *apiextensionsv1.JSONSchemaProps
		if s.AdditionalProperties != nil {
			values = s.AdditionalProperties.Schema
		}
		return collectionLimits(s.MaxProperties, compileLimits(t.Elem(), values, false))
	case reflect.Struct:
		return structLimits(t, s)
	}
	return nil
}

func pointerLimits(elem limitCheck) limitCheck {
	if elem == nil {
		return nil
	}
	return func(v reflect.Value) bool { return v.IsNil() || elem(v.Elem()) }
}

func stringLimits(s *apiextensionsv1.JSONSchemaProps, omitEmpty bool) limitCheck {
	enum := make(map[string]bool, len(s.Enum))
	for _, e := range s.Enum {
		var value string
		if json.Unmarshal(e.Raw, &value) == nil {
			enum[value] = true
		}
	}
	if s.MaxLength == nil && len(enum) == 0 {
		return nil
	}
	return func(v reflect.Value) bool {
		str := v.String()
		if str == "" && omitEmpty {
			return true
		}
		// maxLength counts characters, as the API server does.
		if s.MaxLength != nil && int64(len(str)) > *s.MaxLength && int64(utf8.RuneCountInString(str)) > *s.MaxLength {
			return false
		}
		return len(enum) == 0 || enum[str]
	}
}

// collectionLimits checks a list's or a map's length, then each element.
func collectionLimits(maxLen *int64, elem limitCheck) limitCheck {
	if maxLen == nil && elem == nil {
		return nil
	}
	return func(v reflect.Value) bool {
		if maxLen != nil && int64(v.Len()) > *maxLen {
			return false
		}
		if elem == nil {
			return true
		}
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next(); {
				if !elem(it.Value()) {
					return false
				}
			}
			return true
		}
		for i := range v.Len() {
			if !elem(v.Index(i)) {
				return false
			}
		}
		return true
	}
}

func structLimits(t reflect.Type, s *apiextensionsv1.JSONSchemaProps) limitCheck {
	var fields []int
	var checks []limitCheck
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		var check limitCheck
		switch {
		case !f.IsExported() || name == "-":
			continue
		case strings.Contains(opts, "inline"):
			check = compileLimits(f.Type, s, false)
		default:
			p, ok := s.Properties[name]
			if !ok {
				continue
			}
			check = compileLimits(f.Type, &p, strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero"))
		}
		if check != nil {
			fields, checks = append(fields, i), append(checks, check)
		}
	}
	if len(checks) == 0 {
		return nil
	}
	return func(v reflect.Value) bool {
		for j, i := range fields {
			if !checks[j](v.Field(i)) {
				return false
			}
		}
		return true
	}
}
