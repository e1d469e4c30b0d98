// Package policy embeds the admission policies that keep the API's
// defaults (defaults.yaml) and warnings (warnings.yaml) in the API server,
// and narrow the operator's own writes (operator.yaml), so tests use the
// very YAML the manifests install.
package policy

import (
	"bytes"
	_ "embed"
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Defaults is defaults.yaml: the MutatingAdmissionPolicy and its binding.
//
//go:embed defaults.yaml
var Defaults []byte

// Warnings is warnings.yaml: the ValidatingAdmissionPolicy that warns and
// its binding.
//
//go:embed warnings.yaml
var Warnings []byte

// Operator is operator.yaml: the ValidatingAdmissionPolicies that narrow
// what the operator's ServiceAccount writes, and keep the gateways'
// claims its own, with their bindings.
//
//go:embed operator.yaml
var Operator []byte

// OperatorPolicies decodes Operator: the writes policy and its binding,
// then the claims policy and its binding.
func OperatorPolicies() ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	ps := []*admissionregistrationv1.ValidatingAdmissionPolicy{{}, {}}
	bs := []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{{}, {}}
	return ps, bs, decode(Operator, "operator.yaml", ps[0], bs[0], ps[1], bs[1])
}

// ParamsName and ParamsNamespace name the ConfigMap the binding reads the
// operator's default image and replicas from (defaults_params.yaml).
const (
	ParamsName      = "apigateway-operator-defaults"
	ParamsNamespace = "apigateway-operator-system"
)

// DefaultsPolicy decodes Defaults: the MutatingAdmissionPolicy and its
// binding, as the manifests install them.
func DefaultsPolicy() (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	p, b := &admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	return p, b, decode(Defaults, "defaults.yaml", p, b)
}

// WarningsPolicy decodes Warnings: the ValidatingAdmissionPolicy and its
// binding, as the manifests install them.
func WarningsPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	p, b := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	return p, b, decode(Warnings, "warnings.yaml", p, b)
}

// decode reads the YAML documents of data into objs, in order, and checks
// each is the kind it was decoded into.
func decode(data []byte, file string, objs ...runtime.Object) error {
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for _, obj := range objs {
		if err := decoder.Decode(obj); err != nil {
			return fmt.Errorf("reading manifests/policy/%s: %w", file, err)
		}
		want := reflect.TypeOf(obj).Elem().Name()
		if got := obj.GetObjectKind().GroupVersionKind().Kind; got != want {
			return fmt.Errorf("manifests/policy/%s: found a %s where a %s belongs", file, got, want)
		}
	}
	return nil
}
