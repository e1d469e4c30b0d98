// Package webhook embeds the webhook configurations `make manifests`
// generates into manifests.yaml, so the offline commands evaluate the very
// matchConditions the API server gets.
package webhook

import _ "embed"

// Configurations is manifests.yaml, as generated: the
// MutatingWebhookConfiguration and the ValidatingWebhookConfiguration.
//
//go:embed manifests.yaml
var Configurations []byte
