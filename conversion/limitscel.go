package conversion

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The v1alpha1 size bound as CEL, for the limits ValidatingAdmissionPolicy
// (manifests/policy/limits.yaml), generated from the v1 schema by `make
// manifests`: an upper bound of the JSON that v1OnlyJSON writes, read off
// the object as the API server holds it. It follows the schema, not a list
// of fields, so a field v1 gains later is counted without a change here,
// as v1OnlyJSON keeps it without one.
//
// What the bound counts, for each value present:
//   - a string: its bytes as written when it is printable ASCII without '"'
//     or '\' (JSON writes those unchanged), else six per byte (\u00XX, the
//     longest escape), and its quotes;
//   - an integer 20 bytes, a number 32, a boolean 5, an int-or-string 40
//     (the API's only ones are resource quantities, whose canonical form is
//     shorter);
//   - an object's or a list's brackets, and each member's key, quotes,
//     colon and comma; a required member the object lacks as null (the Go
//     field has no omitempty).

// carried are what v1alpha1 holds itself, which v1OnlyJSON leaves out:
// spec's image and replicas, and each route's backendService. A route
// whose every other member is also carried (host, path, and pathType
// Prefix) is plain: when all are, the routes are left out too.
var (
	carriedSpec  = []string{"image", "replicas"}
	carriedRoute = []string{"host", "path", "pathType", "backendService"}
)

// printable matches a string JSON writes as it is.
const printable = `'^[ !#-\\[\\]-~]*$'`

// LimitsVariable is one of the limits policy's variables.
type LimitsVariable struct{ Name, Expression string }

// LimitsSpecVariables are the policy's variables for spec, one per v1
// member v1OnlyJSON keeps, from the v1 schema of spec, and v1Only, their
// sum.
func LimitsSpecVariables(spec *apiextensionsv1.JSONSchemaProps) ([]LimitsVariable, error) {
	var vars []LimitsVariable
	names := make([]string, 0, len(spec.Properties))
	for name := range spec.Properties {
		if !slices.Contains(carriedSpec, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var sum []string
	for _, name := range names {
		prop := spec.Properties[name]
		value := "object.spec." + name
		var expr string
		if name == "routes" {
			e, err := routesBound(value, &prop)
			if err != nil {
				return nil, err
			}
			expr = e
		} else {
			b, err := jsonBound(value, &prop, 0)
			if err != nil {
				return nil, fmt.Errorf("spec.%s: %w", name, err)
			}
			expr = fmt.Sprintf("!has(%s) ? 0 : %d + %s", value, memberBytes(name), b)
		}
		vars = append(vars, LimitsVariable{Name: name, Expression: expr})
		sum = append(sum, "variables."+name)
	}
	vars = append(vars, LimitsVariable{Name: "v1Only", Expression: strings.Join(sum, " + ")})
	return vars, nil
}

// routesBound bounds the routes member: nothing when every route is plain,
// else each route without its backendService.
func routesBound(value string, routes *apiextensionsv1.JSONSchemaProps) (string, error) {
	if routes.Items == nil || routes.Items.Schema == nil {
		return "", fmt.Errorf("spec.routes: no item schema")
	}
	route := routes.Items.Schema
	plain := []string{"has(r.pathType) && r.pathType == 'Prefix'"}
	names := sortedKeys(route.Properties)
	members := make([]string, 0, len(names))
	for _, name := range names {
		if !slices.Contains(carriedRoute, name) {
			plain = append(plain, "!has(r."+name+")")
		}
		if name == "backendService" {
			continue
		}
		prop := route.Properties[name]
		b, err := jsonBound("r."+name, &prop, 1)
		if err != nil {
			return "", fmt.Errorf("spec.routes[].%s: %w", name, err)
		}
		members = append(members, fmt.Sprintf("(has(r.%s) ? %d + %s : 0)", name, memberBytes(name), b))
	}
	return fmt.Sprintf("!has(%[1]s) || %[1]s.all(r, %[2]s) ? 0 :\n%[3]d + %[1]s.map(r, 3 + %[4]s).sum()",
		value, strings.Join(plain, " && "), memberBytes("routes")+2, strings.Join(members, " + ")), nil
}

// jsonBound is a CEL expression bounding the JSON of value, present and
// not null, of schema s; depth numbers the comprehension variables.
func jsonBound(value string, s *apiextensionsv1.JSONSchemaProps, depth int) (string, error) {
	if s.XIntOrString {
		return "40", nil
	}
	switch s.Type {
	case "string":
		return fmt.Sprintf("(%[1]s.matches(%[2]s) ? size(%[1]s) : 6 * size(bytes(%[1]s))) + 2", value, printable), nil
	case "integer":
		return "20", nil
	case "number":
		return "32", nil
	case "boolean":
		return "5", nil
	case "array":
		if s.Items == nil || s.Items.Schema == nil {
			return "", fmt.Errorf("a list without an item schema")
		}
		e := "e" + strconv.Itoa(depth)
		item, err := jsonBound(e, s.Items.Schema, depth+1)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("2 + %s.map(%s, 1 + %s).sum()", value, e, item), nil
	case "object":
		return objectBound(value, s, depth)
	}
	return "", fmt.Errorf("type %q has no bound", s.Type)
}

// objectBound bounds an object: its members, or a map's entries.
func objectBound(value string, s *apiextensionsv1.JSONSchemaProps, depth int) (string, error) {
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		k := "k" + strconv.Itoa(depth)
		key, err := jsonBound(k, &apiextensionsv1.JSONSchemaProps{Type: "string"}, depth+1)
		if err != nil {
			return "", err
		}
		entry, err := jsonBound(value+"["+k+"]", s.AdditionalProperties.Schema, depth+1)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("2 + %s.map(%s, 2 + %s + %s).sum()", value, k, key, entry), nil
	}
	if len(s.Properties) == 0 {
		return "", fmt.Errorf("an object without a schema of its members")
	}
	terms := []string{"2"}
	for _, name := range sortedKeys(s.Properties) {
		prop := s.Properties[name]
		b, err := jsonBound(value+"."+name, &prop, depth)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		// A required member is encoded even when the object lacks it (a
		// Go field without omitempty), as null.
		absent := 0
		if slices.Contains(s.Required, name) {
			absent = memberBytes(name) + len("null")
		}
		terms = append(terms, fmt.Sprintf("(has(%s.%s) ? %d + %s : %d)", value, name, memberBytes(name), b, absent))
	}
	return "(" + strings.Join(terms, " + ") + ")", nil
}

// memberBytes is what a member takes besides its value: its key in
// quotes, the colon and a comma.
func memberBytes(key string) int { return len(key) + 4 }

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
