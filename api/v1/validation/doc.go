// Package validation holds every rule an APIGateway must meet on its own,
// without looking at any other object: its name, image and replicas, the
// number of its routes and TLS entries, each route's host, path, pathType
// and backend, repeated routes, TLS, the ingress class, the gateway
// container's resources, and the exposure with its parent Gateway
// references. Each rule is a pure function of a value and its field path,
// in the manner of k8s.io/kubernetes/pkg/apis/*/validation.
//
// Every error carries the rule it comes from as data: field.Error.Origin
// holds one of the Rule constants, so metrics and audit count rules without
// reading messages or field paths.
//
// Admission calls Validate. The nginx renderer calls ValidateName and
// ValidateRoute again before it writes a name, host, path or backend into
// the proxy configuration: defence in depth is calling the same function
// twice, never writing the rule twice. Every bound, pattern and list of
// values (maxLength, maxItems, minimum and maximum, pattern, enum) is the
// v1 schema's, read from the embedded CRD once (rules, specLimits), never
// restated in Go. The CRD's CEL rules say again what a schema can say of
// names, hosts, paths and headers, so the API stays safe while the webhook
// is down; TestRuleCases sends one table of rule cases through the real
// API server and through this package and demands one verdict and the
// same fields.
//
// Rules about other objects stay with admission (package webhooks): a route
// another gateway already serves in one of its scopes (RouteScopes: the
// ingress class, or with exposure type HTTPRoute each parent Gateway; this
// package defines the keys, RouteKey), and whether the v1alpha1 form of the
// object fits in its annotations (conversion measures it, and api/ never
// imports conversion).
package validation
