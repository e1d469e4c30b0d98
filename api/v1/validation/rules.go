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
	// RuleAdditionalBackends: a route's additionalBackends are at most 7
	// Service ports, each a valid name and port listed once (with
	// backendService), of weights from 0 to 100 adding up to at most 100.
	RuleAdditionalBackends = "routes.additionalBackends"
	// RuleTimeouts: a route's connectSeconds is from 1 to 75 and its
	// readSeconds from 1 to 3600.
	RuleTimeouts = "routes.timeouts"
	// RuleRewritePrefix: a route's rewritePrefix is a valid path without
	// percent-encoded bytes, on a Prefix route.
	RuleRewritePrefix = "routes.rewritePrefix"
	// RuleHeaders: a route's request and response header changes name at
	// most 16 headers per list, each a valid name, not reserved, once per
	// modifier, with printable values of at most 1024 characters.
	RuleHeaders = "routes.headers"
	// RuleMaxBodySize: a route's maxBodySize is a size in nginx's notation.
	RuleMaxBodySize = "routes.maxBodySize"
	// RuleRateLimit: a route's rateLimit allows 1 to 10000 requests per
	// second, with a burst of 0 to 10000.
	RuleRateLimit = "routes.rateLimit"
	// RuleSourceRanges: a route's sourceRanges hold allow or deny, each at
	// most 64 distinct IPv4 or IPv6 networks in canonical form
	// (CanonicalCIDR).
	RuleSourceRanges = "routes.sourceRanges"
	// RuleBasicAuth: a route's basicAuth names a Secret (a DNS subdomain)
	// and, optionally, a realm of letters, digits, spaces and . _ , : / (
	// ) @ -, up to 64 characters; not on a route whose redirect answers
	// every request.
	RuleBasicAuth = "routes.basicAuth"
	// RuleExternalAuth: a route's externalAuth names a Service (a
	// DNS-1035 label) and port, a path without percent-encoded bytes, at
	// most 16 forwarded and 16 response headers (HTTPHeaderNames, each
	// once; none of the response headers changed by requestHeaders), an
	// absolute https signInURL of the URL alphabet, and a timeout from 1
	// to 30 seconds.
	RuleExternalAuth = "routes.externalAuth"
	// RuleRetries: a route's retries send a request again 1 to 5 times,
	// on at most the 5 conditions the schema lists, each once.
	RuleRetries = "routes.retries"
	// RuleCORS: a route's cors allows 1 to 32 origins, each once: "*"
	// alone, or http or https, a lower-case DNS name optionally after
	// "*.", and a port from 1 to 65535; not "*" with allowCredentials; at
	// most 9 methods (request methods, or "*" alone) and 32 allowed
	// headers (names, or "*" alone) and 32 exposed headers
	// (HTTPHeaderNames), each once; a maxAge from 1 to 86400; and no
	// responseHeaders that set or add an Access-Control-* header beside
	// it.
	RuleCORS = "routes.cors"
	// RuleRules: a route has a backendService or rules; its rules are at
	// most 8, each with 1 to 4 matches and a backendService; each match
	// has at least one condition: at most 8 headers (valid names, not
	// reserved, with type Exact and a header value or type Present and
	// none), 8 query parameters and 8 cookies (names of letters, digits
	// and '_', values of their alphabets), each named once per list, and
	// a method.
	RuleRules = "routes.rules"
	// RuleRedirect: a route's redirect changes the scheme (http or
	// https), hostname (a DNS name, not a wildcard), port (1 to 65535) or
	// path (ReplaceFullPath, or ReplacePrefixMatch on a Prefix route, with
	// a valid path), with a status of 301, 302, 303, 307 or 308; but one
	// with a scheme and no hostname, it answers every request, so the
	// route has no backend, rules or setting of the proxied request.
	RuleRedirect = "routes.redirect"
	// RuleDuplicateRoute: no two routes of a gateway share host,
	// normalised path and pathType (RouteKey), whatever their rules.
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
	// RuleConfigUpdateStrategy: spec.configUpdateStrategy, when set, is
	// Reload or Rollout.
	RuleConfigUpdateStrategy = "configUpdateStrategy"
	// RuleExposure: spec.exposure's type is Ingress or HTTPRoute, with
	// httpRoute set for HTTPRoute only; HTTPRoute rules out spec.tls and
	// spec.ingressClassName.
	RuleExposure = "exposure"
	// RuleParentRefs: spec.exposure.httpRoute.parentRefs lists 1 to 32
	// well-formed Gateway references, each once; references to one
	// Gateway all name a listener.
	RuleParentRefs = "exposure.httpRoute.parentRefs"
	// RuleDelegations: spec.delegations lists at most 16 delegations, each
	// of a route host of the gateway (or a name its wildcard host
	// matches), to another namespace, of 1 to 8 distinct valid path
	// prefixes.
	RuleDelegations = "delegations"
	// RuleAccessLog: spec.accessLog, when set, names a format the
	// gateway writes (JSON).
	RuleAccessLog = "accessLog"
	// RuleConfigSize: the gateway's rendered nginx configuration fits in
	// its ConfigMap (render.MaxConfigBytes). The renderer measures it;
	// admission bounds it from the spec and renders the gateway only when
	// the bound passes MaxConfigBytes.
	RuleConfigSize = "configSize"
)
