package defaults

import (
	"fmt"
	"strconv"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
)

// The CEL of the defaults, generated from Table: the MutatingAdmissionPolicy's
// variables and JSON patch expression (PolicyVariables, PolicyPatch), and
// the mutating webhook's matchCondition (NeedsDefaults). They evaluate
// Table exactly as Patch does, element by element: the same operations, in
// the same order, for the same objects.

// Variable is one of the policy's variables.
type Variable struct{ Name, Expression string }

// PolicyVariables are the variables PolicyPatch reads: the namespace's
// image annotation and the image to fill in, whether the object has a
// spec, and each list Table walks at the top of spec (empty when missing
// or null).
func PolicyVariables() []Variable {
	vars := []Variable{
		{"namespaceImage", "namespaceObject != null && has(namespaceObject.metadata.annotations) && " +
			quote(annotationKey) + " in namespaceObject.metadata.annotations ? " +
			"namespaceObject.metadata.annotations[" + quote(annotationKey) + "].trim() : ''"},
		{"image", "variables.namespaceImage != '' ? variables.namespaceImage : " +
			"has(params.data) && " + quote(ParamImage) + " in params.data ? params.data." + ParamImage + " : ''"},
		{"spec", "has(object.spec) && object.spec != null"},
	}
	seen := map[string]bool{}
	for _, d := range Table {
		if len(d.Lists) == 0 || seen[d.Lists[0]] {
			continue
		}
		l := d.Lists[0]
		seen[l] = true
		vars = append(vars, Variable{l, fmt.Sprintf("variables.spec && has(object.spec.%[1]s) && object.spec.%[1]s != null ? object.spec.%[1]s : []", l)})
	}
	return vars
}

const annotationKey = v1.DefaultImageAnnotation

// PolicyPatch is the policy's JSONPatch expression: every Default's
// operations, in Table's order.
func PolicyPatch() string {
	parts := make([]string, len(Table))
	for i := range Table {
		parts[i] = Table[i].patchCEL()
	}
	return strings.Join(parts, " +\n")
}

// NeedsDefaults is the mutating webhook's matchCondition: true when some
// Default would change the object, whatever the parameters (the policy,
// which runs first where it is installed, fills in what they allow). It
// reads the object alone, as a webhook's matchConditions may.
func NeedsDefaults() string {
	parts := make([]string, len(Table))
	for i := range Table {
		parts[i] = Table[i].needsCEL()
	}
	return "has(object.spec) && object.spec != null && (" + strings.Join(parts, " || ") + ")"
}

// patchCEL is d's operations as a CEL list of JSONPatch.
func (d *Default) patchCEL() string {
	if len(d.Lists) == 0 {
		field := "object.spec." + d.Field
		return fmt.Sprintf("(variables.spec && %s ? [%s] : [])", d.condition(field), d.op(field, quote("/spec/"+d.Field)))
	}
	return d.listPatchCEL(0, "", "'/spec")
}

// listPatchCEL is d's operations in list depth (0: the list under spec),
// whose parent element is parent, at the JSON pointer path.
func (d *Default) listPatchCEL(depth int, parent, path string) string {
	list, idx, elem := d.Lists[depth], fmt.Sprintf("i%d", depth), fmt.Sprintf("e%d", depth)
	source := "variables." + list
	if depth > 0 {
		source = parent + "." + list
	}
	path = path + "/" + list + "/' + string(" + idx + ")"
	if depth == len(d.Lists)-1 {
		value := elem
		if d.Field != "" {
			value = elem + "." + d.Field
			path += " + '/" + d.Field + "'"
		}
		return fmt.Sprintf("%s.transformList(%s, %s, %s != null && %s, %s)", source, idx, elem, elem, d.condition(value), d.op(value, path))
	}
	next := d.Lists[depth+1]
	inner := d.listPatchCEL(depth+1, elem, path+" + '")
	return fmt.Sprintf("%s.transformList(%s, %s, %s != null && has(%s.%s) && %s.%s != null, %s).flatten()",
		source, idx, elem, elem, elem, next, elem, next, inner)
}

// needsCEL is true when d would change the object: some element, in every
// list on the way, that its condition holds for (parameters set).
func (d *Default) needsCEL() string {
	if len(d.Lists) == 0 {
		return d.needs("object.spec." + d.Field)
	}
	return d.listNeedsCEL(0, "object.spec")
}

func (d *Default) listNeedsCEL(depth int, parent string) string {
	list, elem := d.Lists[depth], fmt.Sprintf("e%d", depth)
	source := parent + "." + list
	var cond string
	if depth == len(d.Lists)-1 {
		value := elem
		if d.Field != "" {
			value = elem + "." + d.Field
		}
		cond = d.needs(value)
	} else {
		cond = d.listNeedsCEL(depth+1, elem)
	}
	return fmt.Sprintf("(has(%[1]s.%[2]s) && %[3]s != null && %[3]s.exists(%[4]s, %[4]s != null && %[5]s))", parent, list, source, elem, cond)
}

// condition is the CEL of when d changes value, an expression of the
// object, with the parameters it needs set.
func (d *Default) condition(value string) string {
	if d.Canonical != nil {
		return d.canonicalDiffers(value)
	}
	cond := d.unsetCEL(value)
	if guard := d.Fill.guardCEL(); guard != "" {
		cond = guard + " && " + cond
	}
	return cond
}

// needs is condition without the parameters' guard.
func (d *Default) needs(value string) string {
	if d.Canonical != nil {
		return d.canonicalDiffers(value)
	}
	return d.unsetCEL(value)
}

func (d *Default) canonicalDiffers(value string) string {
	differs := fmt.Sprintf("%s != %s", d.canonicalCEL(value), value)
	if !strings.Contains(value, ".") {
		return differs // a list element, tested for null on the way
	}
	return fmt.Sprintf("has(%s) && %s != null && %s", value, value, differs)
}

func (d *Default) canonicalCEL(value string) string { return fmt.Sprintf(d.Canonical.CEL, value) }

// unsetCEL is true when value is missing, null or (a string) "".
func (d *Default) unsetCEL(value string) string {
	cond := fmt.Sprintf("(!has(%s) || %s == null", value, value)
	if d.Fill.IsString() {
		cond += fmt.Sprintf(" || %s == ''", value)
	}
	return cond + ")"
}

// op is the CEL JSONPatch d makes of value at path (a CEL string
// expression).
func (d *Default) op(value, path string) string {
	if d.Canonical != nil {
		return fmt.Sprintf("JSONPatch{op: 'replace', path: %s, value: %s}", path, d.canonicalCEL(value))
	}
	return fmt.Sprintf("JSONPatch{op: 'add', path: %s, value: %s}", path, d.Fill.valueCEL())
}

// guardCEL is true when the parameter f fills in from is set ("" for a
// literal).
func (f *Fill) guardCEL() string {
	switch f.Param {
	case ParamImage:
		return "variables.image != ''"
	case ParamReplicas:
		return "has(params.data) && " + quote(ParamReplicas) + " in params.data"
	}
	return ""
}

// valueCEL is what f fills in, as CEL.
func (f *Fill) valueCEL() string {
	switch f.Param {
	case ParamImage:
		return "variables.image"
	case ParamReplicas:
		return "int(params.data." + ParamReplicas + ")"
	}
	if n, ok := f.Literal.(int64); ok {
		return strconv.FormatInt(n, 10)
	}
	s, _ := f.Literal.(string)
	return quote(s)
}

// IsString reports whether f fills in a string (so "" counts as unset).
func (f *Fill) IsString() bool {
	if f.Param != "" {
		return f.Param == ParamImage
	}
	_, ok := f.Literal.(string)
	return ok
}

// quote is s as a CEL string literal.
func quote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
