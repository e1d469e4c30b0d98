// Package policy embeds the admission policies that keep the API's
// defaults in the API server (defaults.yaml), so tests and the offline
// commands use the very YAML the manifests install.
package policy

import _ "embed"

// Defaults is defaults.yaml: the MutatingAdmissionPolicy and its binding.
//
//go:embed defaults.yaml
var Defaults []byte

// ParamsName and ParamsNamespace name the ConfigMap the binding reads the
// operator's default image and replicas from (defaults_params.yaml).
const (
	ParamsName      = "apigateway-operator-defaults"
	ParamsNamespace = "apigateway-operator-system"
	// ParamImage and ParamReplicas are its keys.
	ParamImage    = "image"
	ParamReplicas = "replicas"
)
