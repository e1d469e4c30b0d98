// Package policy embeds the admission policies that keep the API's
// defaults (defaults.yaml) and warnings (warnings.yaml) in the API server,
// so tests use the very YAML the manifests install.
package policy

import _ "embed"

// Defaults is defaults.yaml: the MutatingAdmissionPolicy and its binding.
//
//go:embed defaults.yaml
var Defaults []byte

// Warnings is warnings.yaml: the ValidatingAdmissionPolicy that warns and
// its binding.
//
//go:embed warnings.yaml
var Warnings []byte

// ParamsName and ParamsNamespace name the ConfigMap the binding reads the
// operator's default image and replicas from (defaults_params.yaml).
const (
	ParamsName      = "apigateway-operator-defaults"
	ParamsNamespace = "apigateway-operator-system"
	// ParamImage and ParamReplicas are its keys.
	ParamImage    = "image"
	ParamReplicas = "replicas"
)
