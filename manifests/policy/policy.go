// Package policy embeds the admission policies that keep the API's
// defaults (defaults.yaml), warnings (warnings.yaml) and the limits other
// tenants depend on (limits.yaml) in the API server, narrow the
// operator's own writes (operator.yaml) and bind HTTPRoutes and Ingresses
// that others write to host ownership (hosts.yaml), so tests use the very
// YAML the manifests install.
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

// Hosts is hosts.yaml: the ValidatingAdmissionPolicies that refuse an
// HTTPRoute or Ingress not written by the operator when it names a host
// another namespace owns (params: every HostClaim) or one in a domain bound
// to other namespaces (params: every DomainBinding), with their bindings.
//
//go:embed hosts.yaml
var Hosts []byte

// HostsPolicies decodes Hosts: the HostClaim policy and its binding, then
// the DomainBinding policy and its binding.
func HostsPolicies() ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	ps := []*admissionregistrationv1.ValidatingAdmissionPolicy{{}, {}}
	bs := []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{{}, {}}
	return ps, bs, decode(Hosts, "hosts.yaml", ps[0], bs[0], ps[1], bs[1])
}

// Limits is limits.yaml: the ValidatingAdmissionPolicy that refuses what
// would break v1alpha1 reads, and its binding.
//
//go:embed limits.yaml
var Limits []byte

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

// LimitsPolicy decodes Limits: the ValidatingAdmissionPolicy and its
// binding, as the manifests install them.
func LimitsPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	p, b := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	return p, b, decode(Limits, "limits.yaml", p, b)
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
