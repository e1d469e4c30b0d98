// Package v1 holds the v1 API of the example.com group: APIGateway's storage
// version and the hub every other version converts through.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1"}

	// SchemeBuilder registers the types in this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the package's kinds and their lists. The package
// depends on apimachinery only, so clients can import it cheaply.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &APIGateway{}, &APIGatewayList{},
		&HostClaim{}, &HostClaimList{}, &DomainBinding{}, &DomainBindingList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
