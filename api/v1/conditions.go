package v1

// ConditionAccepted is True when the gateway serves every one of its
// routes, and False when other APIGateways hold some of them: a host
// belongs to the namespace that claimed it first, and a route (host,
// pathType and normalised path, in an ingress class or on a parent
// Gateway) to the gateway that claimed it first, so the others leave such
// routes out of their children. The admission webhook refuses a conflict
// it can see; this condition reports one admitted while the webhook was
// not answering.
const ConditionAccepted = "Accepted"

// Reasons of the Accepted condition.
const (
	// ReasonAccepted: every route is served by this gateway.
	ReasonAccepted = "Accepted"
	// ReasonRouteConflict: some routes are served by older APIGateways
	// (the message names each route and its holder); remove them here or
	// there, or change their host or path.
	ReasonRouteConflict = "RouteConflict"
	// ReasonHostOwned: some routes are on a host that belongs to another
	// namespace, whose gateways claimed it first and lend this namespace
	// none of those paths (spec.delegations); ask its owner for a
	// delegation, or use a host of your own.
	ReasonHostOwned = "HostOwned"
)

// ConditionExposed, reported with exposure type HTTPRoute only, is what
// the parent Gateways say of the gateway's HTTPRoutes: True when every
// Gateway of spec.exposure.httpRoute.parentRefs has accepted every
// HTTPRoute (Accepted) and resolved its backend (ResolvedRefs); False
// with the Gateway's own reason and message when one has refused; Unknown
// until each has answered. An Ingress has no such answer, so gateways
// exposed through one do not report it.
const ConditionExposed = "Exposed"

// Reasons of the Exposed condition besides those Gateway API controllers
// report (such as NotAllowedByListeners or NoMatchingListenerHostname),
// which it carries as they are.
const (
	// ReasonExposed: every parent Gateway accepted every HTTPRoute.
	ReasonExposed = "Exposed"
	// ReasonPending: some parent Gateway has not reported on some
	// HTTPRoute yet (no controller serves its GatewayClass, or it has not
	// caught up).
	ReasonPending = "Pending"
	// ReasonGatewayAPIMissing: the cluster does not serve
	// gateway.networking.k8s.io/v1 HTTPRoutes; install Gateway API's
	// CRDs: the operator watches for them and picks them up.
	ReasonGatewayAPIMissing = "GatewayAPIMissing"
)
