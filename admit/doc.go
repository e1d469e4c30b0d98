// Package admit decides what admission decides about an APIGateway, as
// pure functions of the gateway and the objects it meets: the rules across
// gateways (host ownership and route conflicts, package ownership; the
// v1alpha1 form's size), the warnings that need other objects, and the
// admission policies of manifests/policy evaluated in process with the API
// server's own CEL libraries. The webhooks (transport, metrics, audit,
// caches) and the offline commands both call it; neither defines a rule.
package admit
