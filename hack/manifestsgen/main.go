// Command manifestsgen writes what package defaults generates from its Table: the
// defaults MutatingAdmissionPolicy (manifests/policy/defaults.yaml), the
// mutating webhook's matchConditions, into the webhook configuration
// controller-gen wrote (manifests/webhook/manifests.yaml), and the v1
// schema's defaults (the Table's literal rows), into the CRD controller-gen
// wrote. It also writes the limits ValidatingAdmissionPolicy
// (manifests/policy/limits.yaml), whose v1alpha1 size bound is generated
// from the same CRD's v1 schema (conversion.LimitsSpecVariables). `make
// manifests` runs it after controller-gen; `make verify` fails when any is
// stale.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/conversion"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "manifestsgen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	var policy bytes.Buffer
	if err := policyTemplate.Execute(&policy, struct {
		Variables []defaults.Variable
		Patch     string
	}{defaults.PolicyVariables(), defaults.PolicyPatch()}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "manifests", "policy", "defaults.yaml"), policy.Bytes(), 0o644); err != nil {
		return err
	}
	path := filepath.Join(root, "manifests", "webhook", "manifests.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := withMatchConditions(data, defaults.NeedsDefaults())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	crdPath := filepath.Join(root, "manifests", "crd", "bases", "example.com_apigateways.yaml")
	if err := editYAML(crdPath, withSchemaDefaults); err != nil {
		return err
	}
	return writeLimits(crdPath, filepath.Join(root, "manifests", "policy", "limits.yaml"))
}

// writeLimits writes the limits policy, its size bound generated from the
// v1 schema of the CRD at crdPath.
func writeLimits(crdPath, out string) error {
	data, err := os.ReadFile(crdPath)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return fmt.Errorf("%s: %w", crdPath, err)
	}
	var spec *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1" && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			if s, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]; ok {
				spec = &s
			}
		}
	}
	if spec == nil {
		return fmt.Errorf("%s: no v1 spec schema", crdPath)
	}
	vars, err := conversion.LimitsSpecVariables(spec)
	if err != nil {
		return fmt.Errorf("the limits policy: %w", err)
	}
	var buf bytes.Buffer
	if err := limitsTemplate.Execute(&buf, struct {
		Variables []conversion.LimitsVariable
		Limit     int
	}{vars, conversion.MaxV1alpha1AnnotationBytes}); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// editYAML rewrites the YAML file at path through edit.
func editYAML(path string, edit func(map[string]any) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := edit(obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	// controller-gen starts its documents with "---".
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// withSchemaDefaults sets the default of each of defaults.SchemaDefaults
// in the CRD's v1 schema.
func withSchemaDefaults(crd map[string]any) error {
	versions, _ := dig(crd, "spec", "versions").([]any)
	for _, v := range versions {
		version, _ := v.(map[string]any)
		if version["name"] != "v1" {
			continue
		}
		spec, _ := dig(version, "schema", "openAPIV3Schema", "properties", "spec").(map[string]any)
		for _, d := range defaults.SchemaDefaults() {
			node := spec
			for _, list := range d.Lists {
				node, _ = dig(node, "properties", list, "items").(map[string]any)
			}
			field, ok := dig(node, "properties", d.Field).(map[string]any)
			if !ok {
				return fmt.Errorf("the v1 schema has no spec.%s", strings.Join(append(slices.Clone(d.Lists), d.Field), "[]."))
			}
			field["default"] = d.Value
		}
		return nil
	}
	return fmt.Errorf("no version v1")
}

// dig is the value at keys under obj, nil if there is none.
func dig(obj any, keys ...string) any {
	for _, k := range keys {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

// mutatingWebhook is the webhook the matchCondition is for (the marker in
// webhooks/webhooks.go names it).
const mutatingWebhook = "mapigateway-v1.example.com"

// withMatchConditions sets the mutating webhook's matchConditions to one
// condition, needs-defaults, in the documents controller-gen wrote.
func withMatchConditions(data []byte, expression string) ([]byte, error) {
	docs := strings.Split(string(data), "\n---\n")
	found := false
	for i, doc := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(strings.TrimPrefix(doc, "---\n")), &obj); err != nil {
			return nil, err
		}
		if obj["kind"] != "MutatingWebhookConfiguration" {
			continue
		}
		hooks, _ := obj["webhooks"].([]any)
		for _, h := range hooks {
			if w, ok := h.(map[string]any); ok && w["name"] == mutatingWebhook {
				w["matchConditions"] = []any{map[string]any{"name": "needs-defaults", "expression": expression}}
				found = true
			}
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		docs[i] = strings.TrimSuffix(string(out), "\n")
		if strings.HasPrefix(doc, "---\n") {
			docs[i] = "---\n" + docs[i]
		}
	}
	if !found {
		return nil, fmt.Errorf("no mutating webhook %s", mutatingWebhook)
	}
	return []byte(strings.Join(docs, "\n---\n")), nil
}

var policyTemplate = template.Must(template.New("policy").Funcs(template.FuncMap{
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
}).Parse(`# Code generated by ` + "`make manifests`" + ` from package api/v1/defaults (its Table). DO NOT EDIT.
#
# The defaults inside the API server: a MutatingAdmissionPolicy that fills
# in what api/v1/defaults.Table says, so a gateway created while no
# operator replica answers gets the same image, replicas, path, pathType
# and host spelling as the mutating webhook gives, which evaluates the same
# table (api/v1/defaults.Patch).
#
# failurePolicy Ignore: a broken parameter (a hand-edited ConfigMap) must
# never block writes; a gateway the policy could not default still meets
# the schema, which requires spec.image and spec.replicas, or is refused
# with that message.
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: apigateway-operator-defaults
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    matchPolicy: Equivalent
    resourceRules:
      - apiGroups: ["example.com"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["apigateways"]
  failurePolicy: Ignore
  reinvocationPolicy: Never
  variables:
{{- range .Variables }}
    - name: {{ .Name }}
      expression: |-
{{ indent 8 .Expression }}
{{- end }}
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: |-
{{ indent 10 .Patch }}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: apigateway-operator-defaults
spec:
  policyName: apigateway-operator-defaults
  paramRef:
    name: apigateway-operator-defaults
    namespace: apigateway-operator-system
    # The ConfigMap ships empty, so the policy runs before the operator has
    # written its flags (without an image or replicas to fill in); if it is
    # deleted, the API server skips the binding rather than refuse writes.
    parameterNotFoundAction: Allow
`))

var limitsTemplate = template.Must(template.New("limits").Funcs(template.FuncMap{
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
}).Parse(`# Code generated by ` + "`make manifests`" + ` from the CRD's v1 schema
# (conversion.LimitsSpecVariables). DO NOT EDIT.
#
# The v1alpha1 size bound inside the API server, where no skipped or
# unreachable webhook can bypass it: a v1 object whose v1alpha1 form would
# carry more than {{ .Limit }} bytes of annotations (the API server fails a
# converted object over 256 KiB, and with it every v1alpha1 GET, LIST and
# WATCH that reaches it, for every client of the namespace) is refused,
# failing closed.
#
# The exact size is what conversion writes (conversion.V1alpha1AnnotationBytes,
# which the validating webhook also checks). This policy counts an upper
# bound of it that needs no encoder, generated from the v1 schema so that
# every field the conversion annotation keeps is counted: each string as
# written when it is printable ASCII with no '"' or '\' and six bytes per
# byte otherwise (\u00XX, the longest escape), each member's key and
# punctuation, 20 bytes per integer and 40 per resource quantity. What it
# refuses that the exact rule admits: objects within that slack of the
# limit. conversion/size_test.go holds the bound above the exact size over
# generated objects, evaluating this very CEL.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: apigateway-operator-limits
spec:
  matchConstraints:
    matchPolicy: Equivalent
    resourceRules:
      - apiGroups: ["example.com"]
        apiVersions: ["v1"]
        operations: ["CREATE", "UPDATE"]
        resources: ["apigateways"]
  failurePolicy: Fail
  variables:
    - name: annotations
      expression: "has(object.metadata.annotations) ? object.metadata.annotations : {}"
    # The annotations other than the conversion annotation, as the API
    # server counts them: the bytes of every key and value.
    - name: others
      expression: >-
        variables.annotations.map(k, k == 'conversion.example.com/v1-spec' ? 0 :
        size(bytes(k)) + size(bytes(variables.annotations[k]))).sum()
    # The object's own conversion annotation, nested: ,"annotation":"...".
    - name: own
      expression: >-
        !('conversion.example.com/v1-spec' in variables.annotations) ? 0 :
        16 + (variables.annotations['conversion.example.com/v1-spec'].matches(r'^[ !#-\[\]-~]*$') ?
        size(variables.annotations['conversion.example.com/v1-spec']) :
        6 * size(bytes(variables.annotations['conversion.example.com/v1-spec'])))
    # Each v1 member of spec the annotation keeps, then their sum.
{{- range .Variables }}
    - name: {{ .Name }}
      expression: |-
{{ indent 8 .Expression }}
{{- end }}
    # The key and {"spec":{...}} around what it holds.
    - name: bound
      expression: >-
        variables.others + (variables.v1Only + variables.own == 0 ? 0 :
        size('conversion.example.com/v1-spec') + 11 + variables.v1Only + variables.own)
  validations:
    - expression: "variables.bound <= {{ .Limit }}"
      messageExpression: >-
        'too large to be read through v1alpha1: the fields v1alpha1 lacks are kept in its ' +
        'conversion.example.com/v1-spec annotation there, and with the object\'s own annotations that could take ' +
        string(variables.bound) + ' bytes, over the {{ .Limit }} the operator allows (the API server refuses more than 262144 in a ' +
        'converted object, failing every v1alpha1 read of the namespace); use fewer or shorter Exact routes, route settings, ' +
        'TLS hosts or parent Gateways, or fewer annotations'
      reason: Invalid
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: apigateway-operator-limits
spec:
  policyName: apigateway-operator-limits
  validationActions: [Deny]
`))
