package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultImageAnnotation, set on a Namespace, names the gateway image that
// APIGateways in that namespace get when they do not set spec.image.
const DefaultImageAnnotation = "example.com/default-gateway-image"

// PathType says how a route's path is matched against a request's path.
// +kubebuilder:validation:Enum=Prefix;Exact
type PathType string

const (
	// PathTypePrefix matches the path and every path below it, element by
	// element: /users/ matches /users/ and /users/42.
	PathTypePrefix PathType = "Prefix"
	// PathTypeExact matches the path and nothing else.
	PathTypeExact PathType = "Exact"
)

// Condition types reported in status.conditions.
const (
	// ConditionReady is True when the gateway's Deployment has all its
	// replicas ready and serves the current configuration.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the gateway's children are being
	// created or rolled out to match the current spec.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a child could not be applied; its
	// message names the child and the error.
	ConditionDegraded = "Degraded"
)

// APIGatewaySpec is the desired state of an APIGateway.
//
// The TLS rules need the routes beside them, so they sit here and the API
// server reports them at spec.tls (the webhook, when it answers, names the
// entry and host; see validation.RuleTLSHosts).
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || self.tls.all(t, t.hosts.all(h, h in self.routes.map(r, r.host)))",fieldPath=".tls",message="every TLS host must be the host of one of the gateway's routes",messageExpression="'host ' + self.tls.map(t, t.hosts.filter(h, !(h in self.routes.map(r, r.host)))).flatten()[0] + ' is not the host of any of the gateway\\'s routes: every TLS host must be one'"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || size(self.tls.map(t, t.hosts).flatten()) == size(self.tls.map(t, t.hosts).flatten().distinct())",fieldPath=".tls",message="a host may be listed once, in one TLS entry: a host can have only one certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.exposure) || self.exposure.type != 'HTTPRoute' || !has(self.tls) || size(self.tls) == 0",fieldPath=".tls",message="with exposure type HTTPRoute, TLS is terminated by the parent Gateway's listeners: put the certificate in a listener's certificateRefs and remove spec.tls"
// +kubebuilder:validation:XValidation:rule="!has(self.exposure) || self.exposure.type != 'HTTPRoute' || !has(self.ingressClassName)",fieldPath=".ingressClassName",message="ingressClassName selects the class of the gateway's Ingress, which exposure type HTTPRoute does not create: remove it"
type APIGatewaySpec struct {
	// image is the container image of the gateway pods, an nginx build that
	// runs as a non-root user. When empty, the admission webhook fills in the
	// namespace's example.com/default-gateway-image annotation or, without
	// one, the operator's configured default.
	// +required
	Image Image `json:"image,omitempty"`

	// replicas is the number of gateway pods, from 0 to 100. When unset, the
	// admission webhook fills in the operator's configured default (1).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +required
	Replicas *int32 `json:"replicas,omitempty"`

	// routes maps requests, by host and path, to backend Services in the
	// gateway's namespace. Between 1 and 100 routes; no two may share host,
	// path and pathType, nor match the same requests once the path is
	// normalised (percent-decoded; a Prefix path without its trailing "/").
	//
	// The list is a map keyed by host, path and pathType (path and pathType
	// have defaults, so every route has its key): the API server reports a
	// repeated route at its own index, and server-side apply merges routes
	// by that key.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=map
	// +listMapKey=host
	// +listMapKey=path
	// +listMapKey=pathType
	// +required
	Routes []Route `json:"routes"`

	// tls lists the hosts served over HTTPS by the gateway's Ingress and the
	// Secret holding each group's certificate. Every host must be the host of
	// some route. Refused with exposure type HTTPRoute, whose TLS is the
	// parent Gateway's.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	TLS []GatewayTLS `json:"tls,omitempty"`

	// ingressClassName selects the IngressClass of the gateway's Ingress.
	// When unset, the cluster's default IngressClass is used. Refused with
	// exposure type HTTPRoute, which creates no Ingress.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of an IngressClass: a lower-case DNS subdomain such as nginx"
	// +optional
	IngressClassName *string `json:"ingressClassName,omitempty"`

	// resources are the compute requests and limits of the gateway container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// configUpdateStrategy says how a change of the routes reaches the
	// running gateway pods. Reload, the default, tests the new
	// configuration with nginx -t inside each pod and reloads nginx in
	// place: no pod is replaced, requests in flight finish, and
	// connections opened under the previous configuration stay open for
	// up to two minutes. Rollout replaces the pods instead, as a change of
	// image or resources always does, for teams that want immutable pods;
	// each pod's connections then end with it. The status's liveReplicas
	// and Live condition say when a change serves, whichever strategy.
	// +optional
	ConfigUpdateStrategy ConfigUpdateStrategy `json:"configUpdateStrategy,omitempty"`

	// exposure selects the object that sends requests from outside the
	// cluster to the gateway's Service: an Ingress (type Ingress, the
	// default when exposure is unset) or Gateway API HTTPRoutes attached
	// to the Gateways in httpRoute.parentRefs (type HTTPRoute).
	// +optional
	Exposure *Exposure `json:"exposure,omitempty"`

	// delegations lend path prefixes of this gateway's hosts to the
	// gateways of other namespaces. A host belongs to the namespace that
	// claimed it first; no other namespace may route on it, whatever its
	// path, except under the prefixes its owner lends it here (unless the
	// cluster's admin runs the operator with
	// --namespace-ownership=InterNamespaceAllowed). Gateways of one
	// namespace share its hosts freely. Up to 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Delegations []HostDelegation `json:"delegations,omitempty"`

	// accessLog, when set, makes the gateway pods write a line per request
	// to their standard output, in accessLog.format: the route that
	// served it, its status, timings and backend, never its body, query
	// string or credentials. Unset: the gateway pods write no access log.
	// +optional
	AccessLog *AccessLog `json:"accessLog,omitempty"`
}

// ConfigUpdateStrategy says how a new configuration reaches a gateway's
// running pods.
// +kubebuilder:validation:Enum=Reload;Rollout
type ConfigUpdateStrategy string

const (
	// ConfigUpdateReload reloads nginx inside the running pods.
	ConfigUpdateReload ConfigUpdateStrategy = "Reload"
	// ConfigUpdateRollout replaces the pods, as a Deployment rollout.
	ConfigUpdateRollout ConfigUpdateStrategy = "Rollout"
)

// ExposureType names the kind of object that exposes a gateway.
// +kubebuilder:validation:Enum=Ingress;HTTPRoute
type ExposureType string

const (
	// ExposureIngress exposes the gateway through an Ingress of the
	// gateway's name, of spec.ingressClassName.
	ExposureIngress ExposureType = "Ingress"
	// ExposureHTTPRoute exposes the gateway through Gateway API HTTPRoutes
	// (gateway.networking.k8s.io/v1), one per route host, attached to the
	// Gateways of spec.exposure.httpRoute.parentRefs.
	ExposureHTTPRoute ExposureType = "HTTPRoute"
)

// Exposure is a union: type says which member applies, and only that
// member may be set (Ingress has none).
// +kubebuilder:validation:XValidation:rule="self.type == 'HTTPRoute' ? has(self.httpRoute) : !has(self.httpRoute)",message="httpRoute is required when type is HTTPRoute, and allowed only then"
// +union
type Exposure struct {
	// type is Ingress or HTTPRoute.
	// +unionDiscriminator
	// +required
	Type ExposureType `json:"type"`

	// httpRoute configures the HTTPRoutes, with type HTTPRoute.
	// +optional
	HTTPRoute *HTTPRouteExposure `json:"httpRoute,omitempty"`
}

// HTTPRouteExposure names the Gateways the gateway's HTTPRoutes attach to.
//
// TLS is the business of the Gateway's listeners (their certificateRefs),
// so spec.tls is refused with this exposure, as is spec.ingressClassName,
// which only an Ingress has.
type HTTPRouteExposure struct {
	// parentRefs are the Gateways (gateway.networking.k8s.io/v1) every
	// HTTPRoute of the gateway attaches to, from 1 to 32. Two references
	// to one Gateway must each name a different listener (sectionName), as
	// Gateway API requires. (The admission webhook checks that;
	// the schema cannot within the API server's budget for its rules, so
	// while the webhook is down Gateway API's own schema refuses the
	// HTTPRoutes and the gateway reports it in its Degraded condition.)
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +required
	ParentRefs []ParentGatewayReference `json:"parentRefs"`
}

// ParentGatewayReference names a Gateway, and optionally one of its
// listeners, that an HTTPRoute attaches to.
type ParentGatewayReference struct {
	// namespace is the Gateway's namespace; unset means the gateway's own.
	// A Gateway in another namespace accepts the route only if its
	// listener's allowedRoutes admits this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="must be the name of a Namespace: a lower-case DNS label such as infra"
	// +optional
	Namespace *string `json:"namespace,omitempty"`

	// name is the Gateway's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a Gateway: a lower-case DNS subdomain such as public"
	// +required
	Name string `json:"name"`

	// sectionName is the name of the Gateway's listener to attach to;
	// unset means every listener that accepts the route. (Gateway API's
	// parentRef port is in its experimental channel only, so a gateway
	// cannot name one: the standard HTTPRoute schema would refuse it.)
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a listener: a lower-case DNS subdomain such as https"
	// +optional
	SectionName *string `json:"sectionName,omitempty"`
}

// Route sends the requests for one host and path to a backend Service, or
// shares them among several.
// +kubebuilder:validation:XValidation:rule="!has(self.rewritePrefix) || !has(self.pathType) || self.pathType == 'Prefix'",message="rewritePrefix replaces the prefix a Prefix route matched: an Exact route has none",fieldPath=".rewritePrefix"
// +kubebuilder:validation:XValidation:rule="has(self.backendService) || has(self.rules) || (has(self.redirect) && (!has(self.redirect.scheme) || has(self.redirect.hostname)))",message="a route needs a backendService, rules that pick one, or a redirect that answers every request (one with a hostname or without scheme)",fieldPath=".backendService"
// +kubebuilder:validation:XValidation:rule="!has(self.redirect) || (has(self.redirect.scheme) && !has(self.redirect.hostname)) || !(has(self.backendService) || has(self.rules) || has(self.additionalBackends) || has(self.rewritePrefix) || has(self.requestHeaders) || has(self.timeouts) || has(self.maxBodySize) || has(self.rateLimit))",message="a redirect with a hostname or without scheme answers every request of the route: backendService, rules, additionalBackends, rewritePrefix, requestHeaders, timeouts, maxBodySize and rateLimit would never apply",fieldPath=".redirect"
// +kubebuilder:validation:XValidation:rule="!has(self.redirect) || !has(self.redirect.path) || self.redirect.path.type != 'ReplacePrefixMatch' || !has(self.pathType) || self.pathType == 'Prefix'",message="ReplacePrefixMatch replaces the prefix a Prefix route matched: an Exact route has none",fieldPath=".redirect.path"
// +kubebuilder:validation:XValidation:rule="!has(self.externalAuth) || !has(self.externalAuth.responseHeaders) || !has(self.requestHeaders) || !self.externalAuth.responseHeaders.exists(n, (has(self.requestHeaders.set) && self.requestHeaders.set.exists(h, h.name.lowerAscii() == n.lowerAscii())) || (has(self.requestHeaders.add) && self.requestHeaders.add.exists(h, h.name.lowerAscii() == n.lowerAscii())) || (has(self.requestHeaders.remove) && self.requestHeaders.remove.exists(h, h.lowerAscii() == n.lowerAscii())))",message="requestHeaders change a header the authentication Service's answer sets: the backend must receive the Service's copy alone",fieldPath=".externalAuth.responseHeaders"
// +kubebuilder:validation:XValidation:rule="!has(self.cors) || !has(self.responseHeaders) || !((has(self.responseHeaders.set) && self.responseHeaders.set.exists(h, h.name.lowerAscii().startsWith('access-control-'))) || (has(self.responseHeaders.add) && self.responseHeaders.add.exists(h, h.name.lowerAscii().startsWith('access-control-'))))",message="sets an Access-Control-* header, which the route's cors writes: a browser refuses two values; change cors instead",fieldPath=".responseHeaders"
// +kubebuilder:validation:XValidation:rule="!has(self.additionalBackends) || has(self.backendService)",message="shares the requests of backendService, which the route does not have",fieldPath=".additionalBackends"
// +kubebuilder:validation:XValidation:rule="!has(self.additionalBackends) || !has(self.backendService) || !self.additionalBackends.exists(b, b.name == self.backendService.name && b.port == self.backendService.port)",message="lists the same Service port as backendService, which receives what the weights leave: leave it out",fieldPath=".additionalBackends"
// +kubebuilder:validation:XValidation:rule="!has(self.basicAuth) || !has(self.redirect) || (has(self.redirect.scheme) && !has(self.redirect.hostname))",message="a redirect with a hostname or without scheme answers every request before basicAuth is asked: remove basicAuth",fieldPath=".basicAuth"
type Route struct {
	// host is the DNS name the route answers for, in lower case, such as
	// api.example.com; a leading "*." matches exactly one more label
	// (*.example.com matches api.example.com, not example.com or
	// a.b.example.com), and must keep at least two labels after it (*.com
	// is refused). IP addresses are not allowed.
	// +required
	Host Hostname `json:"host"`

	// path is the request path the route matches, starting with "/". It may
	// hold letters, digits and - . _ ~ / ! & ( ) * + , = : @ %, but no empty,
	// "." or ".." segments. Defaults to "/".
	// +kubebuilder:validation:MinLength=1
	// +optional
	Path HTTPPath `json:"path,omitempty"`

	// pathType is how path is matched: Prefix matches the path and every
	// path below it, Exact matches the path only. Defaults to Prefix.
	// +optional
	PathType PathType `json:"pathType,omitempty"`

	// rules send some of the route's requests to other backends, by
	// conditions on their headers, query parameters, method or cookies
	// (a canary by header or cookie): the first rule, in order, that one
	// of whose matches holds picks the backend; a request no rule takes
	// goes to backendService, or is answered 404 when the route has none.
	// The route's other settings (timeouts, headers, rate limit, ...)
	// apply to every rule. Up to 8 rules.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	Rules []RouteRule `json:"rules,omitempty"`

	// backendService is the Service, in the gateway's namespace, that
	// receives the route's requests no rule takes, or those
	// additionalBackends leave. Required unless the route has rules, or a
	// redirect that answers every request.
	// +optional
	BackendService BackendService `json:"backendService,omitzero"`

	// additionalBackends share the route's requests with backendService:
	// each receives its weight in percent of them, picked per request, and
	// backendService receives the rest. Up to 7 Service ports of the
	// gateway's namespace, each once; the weights add up to at most 100.
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:XValidation:rule="self.map(b, b.weight).sum() <= 100",message="the weights add up to at most 100 (percent): backendService receives the rest"
	// +listType=map
	// +listMapKey=name
	// +listMapKey=port
	// +optional
	AdditionalBackends []WeightedBackend `json:"additionalBackends,omitempty"`

	// timeouts bound how long the gateway waits for the backends.
	// +optional
	Timeouts *RouteTimeouts `json:"timeouts,omitempty"`

	// rewritePrefix replaces the path the route matched before the
	// request is forwarded: with path /api and rewritePrefix /, the
	// backend receives /users/1 for /api/users/1, and / for /api. Prefix
	// routes only; written as the backend receives it, so without
	// percent-encoded bytes.
	// +kubebuilder:validation:XValidation:rule="!self.contains('%')",message="must not hold percent-encoded bytes: the backend receives the prefix as written"
	// +optional
	RewritePrefix HTTPPath `json:"rewritePrefix,omitempty"`

	// requestHeaders change the headers of the requests forwarded to the
	// backends.
	// +optional
	RequestHeaders *HeaderModifier `json:"requestHeaders,omitempty"`

	// responseHeaders change the headers of the answers sent back to the
	// client.
	// +optional
	ResponseHeaders *HeaderModifier `json:"responseHeaders,omitempty"`

	// maxBodySize is the largest request body the route accepts, in
	// nginx's notation: a number of bytes, or of kilobytes, megabytes or
	// gigabytes with k, m or g (10m), at most 4 digits; 0 accepts any
	// size. Larger requests are answered 413. Unset: 1m.
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]{0,3}[kmg]?)$`
	// +optional
	MaxBodySize string `json:"maxBodySize,omitempty"`

	// sourceRanges limit which client addresses the route serves (the
	// peer's, or the one a front proxy the operator trusts reported); the
	// others are answered 403, before the route's rules, rate limit and
	// backends.
	// +optional
	SourceRanges *SourceRanges `json:"sourceRanges,omitempty"`

	// basicAuth asks the route's clients for a user name and password
	// from an htpasswd Secret; others are answered 401. Checked after
	// sourceRanges; a redirect to the other scheme comes first.
	// +optional
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`
	// externalAuth asks an authentication Service of the gateway's
	// namespace about each request before the route's backends see it
	// (after its sourceRanges and rateLimit).
	// +optional
	ExternalAuth *ExternalAuth `json:"externalAuth,omitempty"`

	// retries sends a request the backend failed to another of its ready
	// endpoints (retries_types.go).
	// +optional
	Retries *RouteRetries `json:"retries,omitempty"`

	// cors lets the scripts of other sites' pages call the route, as
	// their browsers ask: the gateway answers their preflights itself
	// (after sourceRanges, before basicAuth, externalAuth and redirect)
	// and adds the CORS headers to the route's answers.
	// +optional
	CORS *CORS `json:"cors,omitempty"`

	// rateLimit limits the requests of each client address on this route;
	// past it the gateway answers 429.
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// redirect answers the route's requests with a redirect: all of them
	// (the route then has no backend), or, with a scheme and no hostname,
	// those that came in with the other scheme.
	// +optional
	Redirect *HTTPRedirect `json:"redirect,omitempty"`
}

// BackendService names a Service port in the gateway's namespace.
type BackendService struct {
	// name is the Service's name, a DNS-1035 label such as user-service.
	// +required
	Name ServiceName `json:"name"`

	// port is the Service port the requests go to, from 1 to 65535.
	// +required
	Port PortNumber `json:"port"`
}

// GatewayTLS serves a group of hosts over HTTPS with one certificate.
type GatewayTLS struct {
	// hosts are the host names covered by the certificate; each must be the
	// host of one of the gateway's routes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	// +required
	Hosts []string `json:"hosts"`

	// secretName is the name of the kubernetes.io/tls Secret, in the
	// gateway's namespace, that holds the certificate and key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a Secret: a lower-case DNS subdomain such as api-example-com-tls"
	// +required
	SecretName string `json:"secretName"`
}

// APIGatewayStatus is the observed state of an APIGateway.
type APIGatewayStatus struct {
	// observedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// replicas is the number of gateway pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of gateway pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// liveReplicas is the number of ready gateway pods that serve the
	// current configuration, as each pod reports it (the Live condition
	// says why others do not).
	// +optional
	LiveReplicas int32 `json:"liveReplicas,omitempty"`

	// selector is the label selector of the gateway pods, in string form, for
	// the scale subresource (kubectl scale, HorizontalPodAutoscaler).
	// +optional
	Selector string `json:"selector,omitempty"`

	// conditions are Ready, Progressing, Degraded, Accepted, Live and
	// Stalled, and Exposed with exposure type HTTPRoute.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// claims record when the gateway began to hold its routes and scopes:
	// the first claim on a host or a route wins it. Written by the operator
	// only.
	// +optional
	Claims *Claims `json:"claims,omitempty"`
}

// APIGateway is an nginx gateway that routes requests by host and path to
// Services in its namespace. The operator runs it as a Deployment with a
// Service, an Ingress and a ConfigMap holding the rendered configuration.
//
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",messageExpression="'metadata.name \"' + self.metadata.name + '\" must be a DNS-1035 label (it names the Service of the gateway): lower-case letters, digits and -, starting with a letter'",optionalOldSelf=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=agw,categories=gateways
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Exposed",type=string,JSONPath=`.status.conditions[?(@.type=="Exposed")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type APIGateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the gateway.
	// +required
	Spec APIGatewaySpec `json:"spec"`

	// status is the observed state of the gateway, written by the operator.
	// +optional
	Status APIGatewayStatus `json:"status,omitzero"`
}

// APIGatewayList is a list of APIGateways.
//
// +kubebuilder:object:root=true
type APIGatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []APIGateway `json:"items"`
}
