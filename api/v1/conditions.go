package v1

// ConditionAccepted is True when the gateway serves every one of its
// routes, and False when another APIGateway holds some of them: two
// gateways of one ingress class with the same host, pathType and
// normalised path would fight over the requests, so only the oldest
// gateway serves such a route and the others leave it out of their
// children. The admission webhook refuses a conflict it can see; this
// condition reports one admitted while the webhook was not answering.
const ConditionAccepted = "Accepted"

// Reasons of the Accepted condition.
const (
	// ReasonAccepted: every route is served by this gateway.
	ReasonAccepted = "Accepted"
	// ReasonRouteConflict: some routes are served by older APIGateways
	// (the message names each route and its holder); remove them here or
	// there, or change their host or path.
	ReasonRouteConflict = "RouteConflict"
)
