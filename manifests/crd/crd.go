// Package crd embeds the APIGateway CustomResourceDefinition that
// `make manifests` generates into bases/, so the offline commands judge
// objects by the very schema and CEL rules the cluster gets, not a copy.
package crd

import _ "embed"

// APIGateways is bases/example.com_apigateways.yaml, as generated.
//
//go:embed bases/example.com_apigateways.yaml
var APIGateways []byte
