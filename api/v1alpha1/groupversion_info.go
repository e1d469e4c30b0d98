// Package v1alpha1 holds the v1alpha1 API of the example.com group, the older
// APIGateway version. It is served but not stored: objects are stored as v1
// and converted on the way in and out by the conversion webhook.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types in this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types in this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
