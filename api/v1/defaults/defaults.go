// Package defaults is the one definition of what the API fills in and
// rewrites in an APIGateway: Table. Everything else is derived from it:
//
//   - the MutatingAdmissionPolicy the API server runs
//     (manifests/policy/defaults.yaml), generated as CEL by Policy;
//   - the mutating webhook's matchConditions, generated as CEL by
//     NeedsDefaults, so the API server calls the webhook only for an object
//     the table would change;
//   - the mutating webhook's JSON patch, the offline checks and the audit
//     annotations, from Patch, which evaluates the table in Go.
//
// Why the table, and not the policy's CEL evaluated in process: the
// mutating webhook answers on the write path, and the policy evaluated by
// the API server's CEL libraries took ten times as long as the whole
// webhook's answer did (about 340 µs against 33 µs for a 10-route gateway,
// measured side by side); generated from one table, the CEL the API server
// runs and the Go the webhook runs cannot differ in anything but the
// language, which TestPolicyMatchesPatch checks by evaluating the
// generated policy with the API server's own libraries.
package defaults

import (
	"encoding/json"
	"strconv"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Params are what the defaults read besides the object: the operator's
// flags (which the policy reads from its parameter ConfigMap) and the
// namespace's annotation.
type Params struct {
	// Image is --default-gateway-image: spec.image of a gateway whose
	// namespace names none; empty fills in nothing.
	Image string
	// Replicas is --default-replicas; nil fills in nothing (the policy's
	// parameters before the operator has written them).
	Replicas *int32
	// NamespaceAnnotations are the annotations of the gateway's
	// namespace: its example.com/default-gateway-image wins over Image.
	NamespaceAnnotations map[string]string
}

// image is the image p fills in: the namespace's annotation, trimmed, if
// set, else Image.
func (p Params) image() string {
	if image := strings.TrimSpace(p.NamespaceAnnotations[v1.DefaultImageAnnotation]); image != "" {
		return image
	}
	return p.Image
}

// A Default is one field the API fills in when it is unset, or rewrites
// into its canonical spelling.
type Default struct {
	// Name names the field in audit annotations (AuditNames).
	Name string
	// Lists are the lists the field is in, from spec down, each element
	// of each in turn ("routes", or "tls" then "hosts"); Field is the
	// field in the innermost element, or in spec when there is no list,
	// and "" when the elements are the values themselves (a TLS host).
	Lists []string
	Field string
	// Exactly one of Fill and Canonical is set.
	Fill      *Fill
	Canonical *Canonical
}

// Fill sets a field that is missing, null or (a string) empty.
type Fill struct {
	// Literal is the value, a string or an int64; or else
	Literal any
	// Param names the parameter that is: "image" (the namespace's
	// annotation, else the operator's image) or "replicas" (an integer).
	// A parameter that is not set fills in nothing.
	Param string
}

// Canonical rewrites a string into its canonical spelling.
type Canonical struct {
	// Go spells s canonically.
	Go func(s string) string
	// CEL is the same as a CEL expression of the string %[1]s.
	CEL string
}

// The parameters Fill.Param names, which are also the keys of the
// policy's parameter ConfigMap (Operator.PolicyData).
const (
	ParamImage    = "image"
	ParamReplicas = "replicas"
)

// HostSpelling is the canonical spelling of a host (validation.NormalizeHost):
// ASCII letters in lower case, one trailing dot (the DNS root) dropped.
var HostSpelling = &Canonical{
	Go:  validation.NormalizeHost,
	CEL: "(%[1]s.endsWith('.') && !%[1]s.endsWith('..') ? %[1]s.substring(0, size(%[1]s) - 1) : %[1]s).lowerAscii()",
}

// Table is every default of the API, in the order their patch operations
// come. A new default is a row here, then `make manifests`.
var Table = []Default{
	{Name: "image", Field: "image", Fill: &Fill{Param: ParamImage}},
	{Name: "replicas", Field: "replicas", Fill: &Fill{Param: ParamReplicas}},
	{Name: "path", Lists: []string{"routes"}, Field: "path", Fill: &Fill{Literal: "/"}},
	{Name: "pathType", Lists: []string{"routes"}, Field: "pathType", Fill: &Fill{Literal: string(v1.PathTypePrefix)}},
	{Name: "host", Lists: []string{"routes"}, Field: "host", Canonical: HostSpelling},
	{Name: "tlsHost", Lists: []string{"tls", "hosts"}, Canonical: HostSpelling},
}

// Op is one JSON patch operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
	// Name is the Default that made it.
	Name string `json:"-"`
}

// Patch is the JSON patch Table makes of obj, a v1 APIGateway as JSON
// decodes it (map[string]any, []any, string, float64 or int64...), under p:
// the operations the policy makes, in its order. Members the table does
// not name are never touched, whatever obj holds.
func Patch(obj map[string]any, p Params) []Op {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil
	}
	var ops []Op
	for i := range Table {
		ops = Table[i].patch(spec, p, ops)
	}
	return ops
}

// patch appends the operations d makes of spec.
func (d *Default) patch(spec map[string]any, p Params, ops []Op) []Op {
	var walk func(node any, lists []string, path string)
	walk = func(node any, lists []string, path string) {
		if len(lists) > 0 {
			m, ok := node.(map[string]any)
			if !ok {
				return
			}
			items, _ := m[lists[0]].([]any)
			for i, item := range items {
				walk(item, lists[1:], path+"/"+lists[0]+"/"+strconv.Itoa(i))
			}
			return
		}
		if d.Field == "" {
			if op, ok := d.value(node, path, p); ok {
				ops = append(ops, op)
			}
			return
		}
		m, ok := node.(map[string]any)
		if !ok {
			return
		}
		value, present := m[d.Field]
		if !present {
			value = nil
		}
		if op, ok := d.value(value, path+"/"+d.Field, p); ok {
			ops = append(ops, op)
		}
	}
	walk(spec, d.Lists, "/spec")
	return ops
}

// value is the operation d makes of the value at path, if any.
func (d *Default) value(value any, path string, p Params) (Op, bool) {
	if d.Canonical != nil {
		s, ok := value.(string)
		if !ok || d.Canonical.Go(s) == s {
			return Op{}, false
		}
		return Op{Op: "replace", Path: path, Value: d.Canonical.Go(s), Name: d.Name}, true
	}
	if !unset(value, d.Fill.IsString()) {
		return Op{}, false
	}
	fill, ok := d.Fill.value(p)
	if !ok {
		return Op{}, false
	}
	return Op{Op: "add", Path: path, Value: fill, Name: d.Name}, true
}

// unset reports whether a field holds nothing: missing or null, or ""
// for a string field.
func unset(value any, stringField bool) bool {
	s, isString := value.(string)
	return value == nil || (stringField && isString && s == "")
}

// value is what f fills in under p, and whether it fills in anything.
func (f *Fill) value(p Params) (any, bool) {
	switch f.Param {
	case "":
		return f.Literal, f.Literal != nil
	case ParamImage:
		image := p.image()
		return image, image != ""
	case ParamReplicas:
		if p.Replicas == nil {
			return nil, false
		}
		return int64(*p.Replicas), true
	}
	return nil, false
}

// AuditNames names, sorted as Table orders them and each once, the
// Defaults that made ops: the audit annotation's value.
func AuditNames(ops []Op) []string {
	var names []string
	for _, d := range Table {
		for _, op := range ops {
			if op.Name == d.Name {
				names = append(names, d.Name)
				break
			}
		}
	}
	return names
}

// DefaultImage is the gateway image the operator fills in when neither the
// APIGateway nor its namespace names one (its --default-gateway-image's
// default). It is nginx's unprivileged build: it runs as a non-root user
// and listens on 8080, so gateway pods pass the restricted Pod Security
// Standard. The tag is pinned so every gateway the operator creates runs
// the same nginx until the operator is upgraded.
const DefaultImage = "nginxinc/nginx-unprivileged:1.29-alpine"

// DefaultReplicas is the number of gateway pods when neither the APIGateway
// nor the operator's configuration says otherwise (--default-replicas'
// default).
const DefaultReplicas int32 = 1

// Operator are the operator's flags the defaults read: the image and
// replicas it fills in.
type Operator struct {
	Image    string
	Replicas int32
}

// Params are the Params of a gateway in a namespace with these
// annotations.
func (o Operator) Params(namespaceAnnotations map[string]string) Params {
	replicas := o.Replicas
	return Params{Image: o.Image, Replicas: &replicas, NamespaceAnnotations: namespaceAnnotations}
}

// PolicyData is the defaults policy's parameter ConfigMap's data for o, in
// the keys the policy reads.
func (o Operator) PolicyData() map[string]string {
	return map[string]string{ParamImage: o.Image, ParamReplicas: strconv.Itoa(int(o.Replicas))}
}

// ImageFromNamespace reports whether p takes its image from the
// namespace's annotation rather than the operator's flag.
func (p Params) ImageFromNamespace() bool {
	return p.image() != p.Image || p.Image == "" && p.image() != ""
}

// Apply applies ops, which Patch made of obj, to obj in place: each sets a
// member of an object, or an element of a list, that Patch walked to.
func Apply(obj map[string]any, ops []Op) {
	for _, op := range ops {
		tokens := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		var node any = obj
		for _, t := range tokens[:len(tokens)-1] {
			node = child(node, t)
		}
		switch n := node.(type) {
		case map[string]any:
			n[tokens[len(tokens)-1]] = op.Value
		case []any:
			if i, err := strconv.Atoi(tokens[len(tokens)-1]); err == nil && i < len(n) {
				n[i] = op.Value
			}
		}
	}
}

func child(node any, token string) any {
	switch n := node.(type) {
	case map[string]any:
		return n[token]
	case []any:
		if i, err := strconv.Atoi(token); err == nil && i < len(n) {
			return n[i]
		}
	}
	return nil
}

// Defaulted is gw as the table defaults it under p, for callers that hold
// a typed gateway (tests, benchmarks); the webhook patches the JSON it
// received instead, so members the Go type does not know stay.
func Defaulted(gw *v1.APIGateway, p Params) (*v1.APIGateway, error) {
	raw, err := json.Marshal(gw)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	Apply(obj, Patch(obj, p))
	if raw, err = json.Marshal(obj); err != nil {
		return nil, err
	}
	out := &v1.APIGateway{}
	return out, json.Unmarshal(raw, out)
}

// A SchemaDefault is a default the CRD's structural schema gives (the
// API server fills it in on every write and every read, before admission
// and while no webhook answers): the Literal of a Fill row, at its
// schema path. Routes need them besides the policy: path and pathType are
// keys of the routes list-map, which the API server requires before any
// admission runs.
type SchemaDefault struct {
	// Lists and Field locate the field as in Default.
	Lists []string
	Field string
	Value any
}

// SchemaDefaults are the rows of Table with a literal value, as the v1
// schema's defaults, which `make manifests` writes into the CRD.
func SchemaDefaults() []SchemaDefault {
	var out []SchemaDefault
	for _, d := range Table {
		if d.Fill != nil && d.Fill.Param == "" && d.Field != "" {
			out = append(out, SchemaDefault{Lists: d.Lists, Field: d.Field, Value: d.Fill.Literal})
		}
	}
	return out
}
