package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// APIGatewaySpec is the desired state of an APIGateway.
type APIGatewaySpec struct {
	// image is the container image of the gateway pods. When empty, the
	// admission webhook fills in a default.
	// +required
	Image v1.Image `json:"image,omitempty"`

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
	// +required
	Host v1.Hostname `json:"host"`

	// prefix is the request path prefix the route matches, starting with "/".
	// Defaults to "/".
	// +optional
	Prefix v1.HTTPPath `json:"prefix,omitempty"`

	// serviceName is the name of the backend Service in the gateway's
	// namespace.
	// +required
	ServiceName v1.ServiceName `json:"serviceName"`

	// servicePort is the backend Service port, from 1 to 65535.
	// +required
	ServicePort v1.PortNumber `json:"servicePort"`
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
