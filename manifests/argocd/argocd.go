// Package argocd holds the Argo CD health check of APIGateways
// (health.lua), which users add to Argo CD's argocd-cm under
// resource.customizations.health.example.com_APIGateway (kustomization.yaml
// does it as a kustomize Component). It embeds the script so the
// controller's tests run it, in the Lua interpreter Argo CD runs, against
// the status the operator computes.
package argocd

import _ "embed"

// HealthKey is the key of argocd-cm that holds APIGateway's health check.
const HealthKey = "resource.customizations.health.example.com_APIGateway"

// Health is health.lua.
//
//go:embed health.lua
var Health string
