package validation

// The rules, as field.Error.Origin names them. They are stable identifiers
// for metrics and audit (the admission denial metric's rule label), never
// user data; changing one changes what dashboards count.
const (
	// RuleName: metadata.name is a DNS-1035 label (it names the gateway's
	// Service), checked on create.
	RuleName = "name"
	// RuleImage: spec.image is set, at most 1024 bytes, without whitespace
	// or control characters.
	RuleImage = "image"
	// RuleReplicas: spec.replicas is set, from 0 to 100.
	RuleReplicas = "replicas"
	// RuleRoutes: spec.routes holds from 1 to 100 routes.
	RuleRoutes = "routes"
	// RuleHost: a route's host is a lower-case DNS name, optionally "*."
	// and at least two labels, not an IP address.
	RuleHost = "routes.host"
	// RulePath: a route's path starts with "/", holds only whitelisted
	// characters, no empty, "." or ".." segments, and well-formed escapes
	// whose decoded form is as safe as the path itself.
	RulePath = "routes.path"
	// RulePathType: a route's pathType is Prefix or Exact.
	RulePathType = "routes.pathType"
	// RuleBackendName: a route's backend Service name is a DNS-1035 label.
	RuleBackendName = "routes.backendService.name"
	// RuleBackendPort: a route's backend port is from 1 to 65535.
	RuleBackendPort = "routes.backendService.port"
	// RuleDuplicateRoute: no two routes of a gateway share host,
	// normalised path and pathType (RouteKey).
	RuleDuplicateRoute = "routes.duplicate"
	// RuleTLS: spec.tls holds at most 16 entries.
	RuleTLS = "tls"
	// RuleTLSHosts: each TLS entry lists 1 to 100 hosts, each the host of a
	// route and listed once in the gateway.
	RuleTLSHosts = "tls.hosts"
	// RuleTLSSecretName: each TLS entry's secretName can name a Secret.
	RuleTLSSecretName = "tls.secretName"
	// RuleIngressClassName: spec.ingressClassName, when set, can name an
	// IngressClass.
	RuleIngressClassName = "ingressClassName"
	// RuleResources: spec.resources passes the checks the API server makes
	// of a container's resources.
	RuleResources = "resources"
	// RuleExposure: spec.exposure's type is Ingress or HTTPRoute, with
	// httpRoute set for HTTPRoute only; HTTPRoute rules out spec.tls and
	// spec.ingressClassName.
	RuleExposure = "exposure"
	// RuleParentRefs: spec.exposure.httpRoute.parentRefs lists 1 to 32
	// well-formed Gateway references, each once; references to one
	// Gateway all name a listener.
	RuleParentRefs = "exposure.httpRoute.parentRefs"
	// RuleDelegations: spec.delegations lists at most 32 delegations, each
	// of a route host of the gateway, to another namespace, of 1 to 16
	// distinct valid path prefixes.
	RuleDelegations = "delegations"
)
