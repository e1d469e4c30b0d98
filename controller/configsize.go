package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// MaxConfigBytes bounds a gateway's rendered nginx configuration. It is
// the whole data of the gateway's ConfigMap, which the API server refuses
// past 1 MiB (the sum of its values), less 64 KiB: admission measures the
// configuration rendered with the default options (cluster.local, the
// pod's resolvers, no trusted proxies), and the operator's own options
// make it longer by a little per backend name or trusted proxy. A backend
// is named at most 8 times per route (a split_clients of 7 weighted
// backends and backendService), 800 times in 100 routes, so the margin
// covers a cluster domain 80 characters longer than cluster.local: a
// gateway admitted under the bound still fits when the operator renders
// it, and one past it is refused at admission, naming the bound, rather
// than by the API server when the operator applies its ConfigMap.
const MaxConfigBytes = 1<<20 - 64<<10

// ValidateRenderedSize refuses gw when its nginx configuration, rendered
// with the default options, is longer than MaxConfigBytes. Admission calls
// it; the renderer applies the same bound to what it renders. A gateway
// the renderer refuses for other reasons gets no error here: the
// validation rules report those.
func ValidateRenderedSize(gw *v1.APIGateway) field.ErrorList {
	config, err := render(gw, renderOptions{})
	if err != nil {
		return nil
	}
	return validateConfigSize(len(config))
}

// validateConfigSize is the error of a configuration of size bytes past
// MaxConfigBytes.
func validateConfigSize(size int) field.ErrorList {
	if size <= MaxConfigBytes {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "routes"), fmt.Sprintf("<%d bytes of nginx configuration>", size), fmt.Sprintf(
		"the gateway's nginx configuration would be %d bytes, over the bound of %d (MaxConfigBytes: 1 MiB, what a ConfigMap holds, less a 64 KiB margin); "+
			"use fewer routes or fewer and shorter header values, or split the routes between two gateways",
		size, MaxConfigBytes)).WithOrigin(validation.RuleConfigSize)}
}
