package conversion

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// NewConverter builds the v1alpha1 <-> v1 converter for the webhook builder's
// WithConverter. v1 is the hub; v1alpha1 is its only spoke. The conversion
// itself lives in the pure functions V1alpha1ToV1 and V1ToV1alpha1, so the api
// packages carry no conversion code.
// The converter counts and times every conversion (see metrics.go).
func NewConverter(scheme *runtime.Scheme) (crconversion.Converter, error) {
	c, err := crconversion.NewHubSpokeConverter(&v1.APIGateway{},
		crconversion.NewSpokeConverter(&v1alpha1.APIGateway{}, hubToV1alpha1, v1alpha1ToHub),
	)(scheme)
	if err != nil {
		return nil, err
	}
	return countingConverter{c}, nil
}

// hubToV1alpha1 adapts V1ToV1alpha1 to the spoke converter's signature.
func hubToV1alpha1(_ context.Context, src *v1.APIGateway, dst *v1alpha1.APIGateway) error {
	return V1ToV1alpha1(src, dst)
}

// v1alpha1ToHub adapts V1alpha1ToV1, which cannot fail, to the spoke
// converter's signature.
func v1alpha1ToHub(_ context.Context, src *v1alpha1.APIGateway, dst *v1.APIGateway) error {
	V1alpha1ToV1(src, dst)
	return nil
}
