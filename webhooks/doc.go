// Package webhooks holds the mutating and validating admission webhooks for
// the v1 APIGateway (the hub), and wires them with the conversion webhook
// onto the manager's webhook server.
//
// The logic is in pure functions: Default fills in the image (the
// namespace's example.com/default-gateway-image annotation, else the
// operator's default), replicas, route paths and path types, and
// normalizes host names; Validate checks every rule of the API contract and
// returns all errors with their field paths and rules, plus warnings. The
// rules about the gateway alone are package api/v1/validation's, which the
// renderer calls too; Validate adds those about other objects. Defaulter
// and Validator only gather what those functions need: the namespace's
// annotation from a metadata-only cache, the gateways of any namespace that
// already serve a route from an index on the cluster-wide APIGateway
// informer (routeindex.Name), and backend Service ports from a slim Service
// cache of their own. Routes compete per scope (validation.RouteKey: the
// scope, then host, pathType and normalised path): the ingress class, or,
// with exposure type HTTPRoute, each parent Gateway, since a Gateway
// merges the HTTPRoutes attached to it as an Ingress controller merges the
// Ingresses of its class; a route exposed through an Ingress never
// competes with one exposed through HTTPRoutes. The HTTP side is
// controller-runtime's admission.Webhook; the handlers in handlers.go
// decode each object once and build the defaulting patch directly (see
// there for the measurements behind that).
//
// The mutating webhook fails open and the validating one fails closed: an
// object the defaulter never saw is rejected for its missing image or
// replicas instead of being stored without them.
package webhooks
