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
	// ReasonDomainBound: some routes are on a name of a domain that a
	// cluster admin bound to other namespaces (a DomainBinding), or on a
	// wildcard covering such a domain; ask the admins to add the
	// namespace to the binding, or use another host.
	ReasonDomainBound = "DomainBound"
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

// ConditionLive says whether the gateway's current configuration (its
// routes, rendered into the ConfigMap N-config) is what its pods serve:
// True when every ready pod reports serving it, so `kubectl wait
// --for=condition=Live` returns once a route change answers on every ready
// replica; False while some have not loaded it yet or when one refused it;
// Unknown when a pod's report could not be read. The pods report through
// the operator's reloader (package reloader) on their status port.
const ConditionLive = "Live"

// Reasons of the Live condition besides the Ready condition's (such as
// InvalidRoutes or ScaledToZero) and RollingOut, which it shares.
const (
	// ReasonLive: every ready replica serves the current configuration.
	ReasonLive = "Live"
	// ReasonReloading: some ready replicas still serve an earlier
	// configuration; the kubelet delivers a changed ConfigMap to the pods
	// within its sync period (about a minute), and each pod reloads at once.
	ReasonReloading = "Reloading"
	// ReasonConfigurationRefused: a pod's nginx refused the configuration
	// (the message has its words); that pod keeps serving its previous one.
	ReasonConfigurationRefused = "ConfigurationRefused"
	// ReasonNoReadyReplicas: no gateway pod is ready to serve anything.
	ReasonNoReadyReplicas = "NoReadyReplicas"
	// ReasonStatusUnreachable: some ready pods did not answer on their
	// status port, most often because a NetworkPolicy keeps the operator
	// out; the routes are served regardless.
	ReasonStatusUnreachable = "StatusUnreachable"
)

// ConditionStalled is True when the gateway cannot reach its spec until
// someone changes something: the routes (the renderer refuses them, or
// other gateways hold some), the cluster (another object holds a child's
// name, Gateway API's CRDs are missing) or the image (the kubelet cannot
// pull or start it, nginx refuses the configuration, the rollout passed
// its deadline). It carries the reason of the condition that says so
// (Degraded, Ready or Accepted), and that condition's message after its
// type. It is kstatus's condition (sigs.k8s.io/cli-utils/pkg/kstatus),
// which Flux and Argo CD's health check read: Stalled=True reads as
// Failed, so a deploy stops waiting at once instead of at its timeout,
// whereas Ready=False alone reads as in progress. It is False while the
// gateway rolls out, reloads, or retries a child the API server refused
// (ApplyFailed), which may pass by itself.
const ConditionStalled = "Stalled"

// ReasonNotStalled: nothing that needs a change keeps the gateway from its
// spec; the Ready condition says whether it has reached it.
const ReasonNotStalled = "NotStalled"
