package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// APIGatewaySpec is the desired state of an APIGateway.
type APIGatewaySpec struct {
	// image is the container image of the gateway pods. When empty, the
	// admission webhook fills in a default.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'[\\p{Z}\\p{Cc}]')",message="must not contain whitespace or control characters"
	// +required
	Image string `json:"image,omitempty"`

	// replicas is the number of gateway pods, from 0 to 100. When unset, the
	// admission webhook fills in a default.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +required
	Replicas *int32 `json:"replicas,omitempty"`

	// Why routes stay an atomic list, not a map keyed by host and prefix as
	// v1's routes are keyed by host, path and pathType: a valid v1 object
	// with an Exact and a Prefix route on one path reads here as two routes
	// with one host and prefix, and once a v1alpha1 client has written the
	// object, server-side apply (which tracks fields per version) would
	// refuse every v1 write to it as "duplicate entries for key". The
	// rule's message names the index of the last route that repeats an
	// earlier one instead; it uses format() because a concatenated
	// string(int) has no cost bound the API server accepts.

	// routes maps requests, by host and path prefix, to backend Services in
	// the gateway's namespace. Between 1 and 100 routes; no two may share
	// host and prefix.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +kubebuilder:validation:XValidation:rule="self.all(r, self.exists_one(o, o.host == r.host && (has(o.prefix) ? o.prefix : '/') == (has(r.prefix) ? r.prefix : '/')))",messageExpression="'spec.routes[%d] has the same host and prefix as an earlier route; each route must be unique'.format([self.map(r, !self.exists_one(o, o.host == r.host && (has(o.prefix) ? o.prefix : '/') == (has(r.prefix) ? r.prefix : '/'))).lastIndexOf(true)])"
	// +required
	Routes []Route `json:"routes"`
}

// Route sends the requests for one host and path prefix to one Service port.
// In v1 it is a route with pathType Prefix.
type Route struct {
	// host is the DNS name the route answers for, such as api.example.com,
	// optionally starting with "*." followed by at least two labels.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!isIP(self.startsWith('*.') ? self.substring(2) : self)",message="must be a DNS name, not an IP address"
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self.startsWith('*.') ? self.substring(2) : self).hasValue()",message="must be a lower-case DNS name such as api.example.com, optionally starting with '*.'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('[^.]{64}')",message="each label (between dots) must be at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('*.') || self.substring(2).contains('.')",message="a wildcard must keep at least two labels after '*.', as in *.example.com: *.com would claim every name of a top-level domain"
	// +required
	Host string `json:"host"`

	// prefix is the request path prefix the route matches, starting with "/".
	// Defaults to "/".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^/[-A-Za-z0-9._~!&()*+,=:@%/]*$')",message="must start with '/' and hold only letters, digits and - . _ ~ / ! & ( ) * + , = : @ %"
	// +kubebuilder:validation:XValidation:rule="!self.contains('//') && !self.contains('/./') && !self.contains('/../') && !self.endsWith('/.') && !self.endsWith('/..')",message="must not contain empty, '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([^%]|%[0-7][0-9A-Fa-f]|%[Cc][2-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Dd][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee]0%[ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee][1-9A-Ca-cEeFf]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ee][Dd]%[89][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ff]0%[9ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ff][1-3]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f]|%[Ff]4%8[0-9A-Fa-f]%[89ABab][0-9A-Fa-f]%[89ABab][0-9A-Fa-f])*$')",message="'%' must start a percent-encoded byte such as %C3%A9 ('%25' for a literal '%'), and the encoded bytes must spell UTF-8"
	// +kubebuilder:validation:XValidation:rule="!self.matches('%([01][0-9A-Fa-f]|2[02347]|3[BbCcEeFf]|5[B-Eb-e]|60|7[B-Fb-f])')",message="must not percent-encode a control character, a space or a character the path may not hold as written"
	// +kubebuilder:validation:XValidation:rule="!self.matches('%[Cc]2%([89][0-9A-Fa-f]|[Aa]0)|%[Ee]1%9[Aa]%80|%[Ee]2%80%(8[0-9Aa]|[Aa][89Ff])|%[Ee]2%81%9[Ff]|%[Ee]3%80%80')",message="must not percent-encode a control character or whitespace, such as %C2%85 or %E2%80%A8"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(/|%2[Ff])(/|%2[Ff])|(/|%2[Ff])([.]|%2[Ee]){1,2}(/|%2[Ff]|$)|%25(2|%32)([Ff]|%46|%66)')",message="must not contain empty, '.' or '..' segments once percent-decoded (%2F is '/', %2E is '.'), nor decode to '%2F'"
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// serviceName is the name of the backend Service in the gateway's
	// namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1035Label().validate(self).hasValue()",message="must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter, such as user-service"
	// +required
	ServiceName string `json:"serviceName"`

	// servicePort is the backend Service port, from 1 to 65535.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	ServicePort int32 `json:"servicePort"`
}

// APIGatewayStatus is the observed state of an APIGateway: v1's, field for
// field (the claims and every condition included), so that a status read
// through either version says the same.
type APIGatewayStatus = v1.APIGatewayStatus

// APIGateway is an nginx gateway that routes requests by host and path prefix
// to Services in its namespace. Deprecated in favour of example.com/v1, which
// adds exact-path routes, TLS, the ingress class and container resources.
//
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$')",messageExpression="'metadata.name \"' + self.metadata.name + '\" must be a DNS-1035 label (it names the Service of the gateway): lower-case letters, digits and -, starting with a letter'",optionalOldSelf=true
// +kubebuilder:deprecatedversion:warning="example.com/v1alpha1 APIGateway is deprecated; use example.com/v1"
// +kubebuilder:resource:shortName=agw,categories=gateways
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
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
