package v1

import (
	"crypto/sha256"
	"encoding/hex"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostClaim is the operator's durable record that a host belongs to one
// namespace. The operator creates it, named by HostClaimName, when a
// namespace first routes a host no record covers; creation is the one
// decision (the API server lets one create of a name succeed), and the
// record outlives the gateways that led to it: an owner that re-creates,
// renames or edits its gateways keeps its host. It ends only when the
// owner's namespace has routed the host nowhere for the operator's release
// grace period. A record covers its host and every name below it
// (x.shop.example.com and *.shop.example.com are shop.example.com's), and
// a wildcard's record covers the names its wildcard matches and the names
// below them.
//
// Only the operator's ServiceAccount writes HostClaims; tenants may read
// none (they are cluster-scoped, and no aggregated role grants them).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=gateways
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Host",type=string,JSONPath=`.spec.host`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`
// +kubebuilder:printcolumn:name="Unrouted",type=date,JSONPath=`.status.unroutedSince`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HostClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec HostClaimSpec `json:"spec"`

	// +optional
	Status HostClaimStatus `json:"status,omitempty"`
}

// HostClaimSpec says which namespace owns which host. It never changes:
// another owner is another record, after this one is deleted.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a HostClaim's host and namespace never change: delete the record to release the host"
type HostClaimSpec struct {
	// host is the host owned, as routes write it (a wildcard is its own
	// host).
	// +required
	Host Hostname `json:"host"`

	// namespace is the namespace that owns host.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Label().validate(self).hasValue()",message="must be the name of a Namespace: a lower-case DNS label such as team-a"
	// +required
	Namespace string `json:"namespace"`
}

// HostClaimStatus is what the operator observed about the owner's use of
// the host.
type HostClaimStatus struct {
	// unroutedSince is when the operator found that no gateway of the
	// owner's namespace routes the host (or a name the record covers):
	// unset while one does. The record is deleted once it has stayed set
	// for the release grace period.
	// +optional
	UnroutedSince *metav1.Time `json:"unroutedSince,omitempty"`
}

// HostClaimList is a list of HostClaims.
//
// +kubebuilder:object:root=true
type HostClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostClaim `json:"items"`
}

// DomainBinding is a cluster admin's statement that a domain belongs to
// some namespaces: the domain and every name below it may be claimed, by
// an APIGateway, an HTTPRoute or an Ingress, only from those namespaces.
// A wildcard that would serve a name of the domain (*.example.com over
// corp.example.com) is held to the binding too. Where bindings nest, a
// name may be claimed only from the namespaces that every binding
// covering it lists: the admission policy for HTTPRoutes and Ingresses
// sees one binding at a time, so "the innermost decides" could not hold
// there. A binding
// does not claim anything itself: among its namespaces, the first to route
// a host still owns it (a HostClaim).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=gateways
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.domain`
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DomainBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DomainBindingSpec `json:"spec"`
}

// DomainBindingSpec binds a domain to namespaces.
type DomainBindingSpec struct {
	// domain is a DNS name such as corp.example.com (not a wildcard): the
	// binding covers it and every name below it, wildcards included.
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('*.')",message="must be a domain such as corp.example.com, not a wildcard: a binding covers every name below its domain already"
	// +required
	Domain Hostname `json:"domain"`

	// namespaces are the namespaces whose routes may claim names of the
	// domain. From 1 to 64.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(n, !format.dns1123Label().validate(n).hasValue())",message="each must be the name of a Namespace: a lower-case DNS label such as team-a"
	// +listType=set
	// +required
	Namespaces []string `json:"namespaces"`
}

// DomainBindingList is a list of DomainBindings.
//
// +kubebuilder:object:root=true
type DomainBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DomainBinding `json:"items"`
}

// HostClaimName is the name of host's HostClaim: fixed by the host, so
// that two namespaces racing for a host create the same object and the
// API server lets exactly one of them succeed. A host is not always a
// valid object name ("*." is not), so the name is a digest.
func HostClaimName(host string) string {
	sum := sha256.Sum256([]byte(host))
	return "host-" + hex.EncodeToString(sum[:16])
}
