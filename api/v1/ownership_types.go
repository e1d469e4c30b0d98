package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// HostDelegation lends path prefixes of one of the gateway's hosts to the
// gateways of another namespace. A host belongs to the namespace whose
// gateway claimed it first (a wildcard host claims the names it matches);
// the gateways of other namespaces may route on it only under the
// prefixes its owner lends them, in a delegation on any of the owner
// namespace's gateways that route the host.
type HostDelegation struct {
	// host is one of this gateway's route hosts, as its routes write it, or
	// a name its wildcard route host matches.
	// +required
	Host Hostname `json:"host"`

	// namespace is the namespace whose gateways may route on host, under
	// pathPrefixes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="must be the name of a Namespace: a lower-case DNS label such as team-b"
	// +required
	Namespace string `json:"namespace"`

	// pathPrefixes are the paths lent, each matched as a Prefix route's path
	// is, element by element: /cart lends /cart and every path below
	// /cart/, not /carts; "/" lends the whole host. From 1 to 8, each a
	// valid route path.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +required
	PathPrefixes []HTTPPath `json:"pathPrefixes"`
}

// Claims are the operator's record of when the gateway began to hold each
// of its routes, and to route in each of its scopes: when two gateways
// compete for a host or a route, the first claim wins, whatever the
// gateways' ages. Only the operator writes them (its admission policy
// refuses anyone else's change); a route or scope that is new to the
// gateway is claimed when the operator first sees it, never earlier than a
// claim it competes with.
type Claims struct {
	// routingSince is when the gateway last began to route in some scope
	// (an ingress class that exists, or a parent Gateway that accepted its
	// HTTPRoutes): unset while it routes nowhere, and then it holds no
	// host. A host is claimed at the later of this and its route's time.
	// +optional
	RoutingSince *metav1.MicroTime `json:"routingSince,omitempty"`

	// routes are the gateway's distinct routes, each with when it was
	// first seen, and whether another gateway holds it.
	// +kubebuilder:validation:MaxItems=100
	// +listType=map
	// +listMapKey=route
	// +optional
	Routes []RouteClaim `json:"routes,omitempty"`

	// scopes are the ingress class, or the parent Gateways, in which the
	// gateway's routes are routed now, each with when it began.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=scope
	// +optional
	Scopes []ScopeClaim `json:"scopes,omitempty"`
}

// RouteClaim is one route's claim.
type RouteClaim struct {
	// route is what the route matches: its pathType, host and normalised
	// path, such as "Prefix api.example.com/users", and for a route with
	// matches " matches " and their digest.
	// +kubebuilder:validation:MaxLength=1340
	// +required
	Route string `json:"route"`

	// since is when the operator first saw the route on this gateway.
	// +required
	Since metav1.MicroTime `json:"since"`

	// lost is true while the gateway does not serve the route: the host
	// belongs to another namespace, or another gateway claimed the same
	// route first (the Accepted condition says which).
	// +optional
	Lost bool `json:"lost,omitempty"`
}

// ScopeClaim is one scope's claim.
type ScopeClaim struct {
	// scope is a quoted ingress class ("nginx"), default (the ingress
	// class of Ingresses that name none, when the cluster has no default
	// IngressClass), or a parent Gateway ("gateway infra/public").
	// +kubebuilder:validation:MaxLength=330
	// +required
	Scope string `json:"scope"`

	// since is when the gateway began to route in the scope.
	// +required
	Since metav1.MicroTime `json:"since"`
}
