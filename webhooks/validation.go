package webhooks

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/conversion"
)

// The rules admission adds to package validation's, as field.Error.Origin
// names them (see validation.RuleName and the others).
const (
	// RuleConflict: no route of the gateway is already served by another
	// APIGateway of its ingress class, or attached to one of its parent
	// Gateways, in any namespace.
	RuleConflict = "conflict"
	// RuleV1alpha1Size: the gateway's v1alpha1 form fits in the
	// annotations the API server allows a converted object.
	RuleV1alpha1Size = "v1alpha1Size"
)

// RelatedObjects are the objects other than the gateway that its
// validation looks at. The handler gathers them from the caches; tests
// build them by hand.
type RelatedObjects struct {
	// Gateways are APIGateways, of any namespace, that serve at least one
	// of the object's route keys (validation.RouteKey), as found by the
	// routeindex.Name. A gateway with the object's own namespace and name is
	// ignored, so on update the stored copy of the object never conflicts
	// with itself.
	Gateways []v1.APIGateway
	// ServicePorts maps the name of each backend Service that exists to its
	// port numbers. A name missing from it means the Service does not exist
	// or is not known, which is not worth a warning: it may be created
	// after the gateway.
	ServicePorts map[string][]int32
}

// Validate checks gw against every rule of the contract and returns all the
// errors at once, each with its field path and rule (Origin), and the
// warnings to show the user. old is nil on create and the stored object on
// update. The rules about the gateway alone are package validation's; the
// ones added here look at the related objects (conflicts) or at conversion
// (the v1alpha1 form's size). A gateway with a list longer than its limit
// gets only those errors: no lookup, no warning.
func Validate(old, gw *v1.APIGateway, related RelatedObjects) (field.ErrorList, admission.Warnings) {
	spec := field.NewPath("spec")
	if errs := validation.ValidateCounts(&gw.Spec, spec); len(errs) > 0 {
		return errs, nil
	}
	errs := validation.Validate(old, gw)
	errs = append(errs, validateConflicts(old, gw, related.Gateways, spec.Child("routes"))...)
	errs = append(errs, validateV1alpha1Size(gw, spec)...)
	return errs, warnings(gw, related)
}

// validateConflicts rejects routes that another APIGateway already serves:
// validation.RouteKey is what the Ingress controller, or a parent Gateway,
// tells routes apart by, across namespaces, so two gateways with one key
// would fight over the requests, and the Ingress controller or Gateway
// would pick one of them. Only keys
// that old did not have are checked: a conflict that slipped in (two
// gateways created at the same moment, each unseen by the other's check)
// never blocks unrelated updates such as a label or finalizer change.
func validateConflicts(old, gw *v1.APIGateway, others []v1.APIGateway, fld *field.Path) field.ErrorList {
	if len(others) == 0 {
		return nil
	}
	// A set: with 100 routes and 32 parent Gateways a gateway has 3,200
	// keys, each looked up here.
	var had sets.Set[string]
	if old != nil {
		had = sets.New(validation.RouteKeys(old)...)
	}
	servedBy := map[string][]string{}
	for i := range others {
		o := &others[i]
		if sameGateway(o, gw) {
			continue
		}
		holder := o.Namespace + "/" + o.Name
		for _, key := range validation.RouteKeys(o) {
			if !slices.Contains(servedBy[key], holder) {
				servedBy[key] = append(servedBy[key], holder)
			}
		}
	}
	var errs field.ErrorList
	scopes := validation.RouteScopes(gw)
	for i := range gw.Spec.Routes {
		r := &gw.Spec.Routes[i]
		for _, scope := range scopes {
			key, ok := validation.RouteKey(scope, r)
			holders := servedBy[key]
			if !ok || len(holders) == 0 || had.Has(key) {
				continue
			}
			slices.Sort(holders)
			e := field.Duplicate(fld.Index(i), validation.RouteString(r))
			e.Detail = fmt.Sprintf("host and path already served by %s, which also routes %s for %s; %s, "+
				"so only one gateway can have it: use another host or path, or remove the route there",
				gatewayNames(holders), validation.MatchString(r), scopeName(gw, scope), scopeMerges(gw))
			errs = append(errs, e.WithOrigin(RuleConflict))
			break
		}
	}
	return errs
}

// scopeName names a scope of gw's (validation.RouteScopes) for a message.
func scopeName(gw *v1.APIGateway, scope string) string {
	if g, ok := validation.ScopeGateway(scope); ok {
		return "Gateway " + g
	}
	return className(gw.Spec.IngressClassName)
}

// scopeMerges says why routes of one scope compete.
func scopeMerges(gw *v1.APIGateway) string {
	if validation.ExposedByHTTPRoute(&gw.Spec) {
		return "a Gateway merges the HTTPRoutes attached to it, whatever their namespaces"
	}
	return "Ingress controllers merge a host's paths across namespaces"
}

// gatewayNames names the holders of a route, as namespace/name, up to
// five: more can only have slipped in together, and the message stays
// bounded.
func gatewayNames(holders []string) string {
	if len(holders) == 1 {
		return "APIGateway " + holders[0]
	}
	if len(holders) > 5 {
		return fmt.Sprintf("APIGateways %s and %d more", strings.Join(holders[:5], ", "), len(holders)-5)
	}
	return "APIGateways " + strings.Join(holders, ", ")
}

func className(ingressClassName *string) string {
	if ingressClassName == nil {
		return "the cluster's default ingress class"
	}
	return fmt.Sprintf("ingress class %q", *ingressClassName)
}

// validateV1alpha1Size refuses a gateway whose v1alpha1 form would carry
// more annotations than the API server accepts in a converted object:
// from then on every v1alpha1 GET, LIST and WATCH that reaches it would
// fail, for every client of the namespace. It is a rule about the gateway
// alone, but conversion measures it, and api/ never imports conversion.
func validateV1alpha1Size(gw *v1.APIGateway, fld *field.Path) field.ErrorList {
	if conversion.V1alpha1AnnotationBytesBound(gw) <= conversion.MaxV1alpha1AnnotationBytes {
		return nil
	}
	size, err := conversion.V1alpha1AnnotationBytes(gw)
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err).WithOrigin(RuleV1alpha1Size)}
	}
	if size <= conversion.MaxV1alpha1AnnotationBytes {
		return nil
	}
	return field.ErrorList{field.Invalid(fld, fmt.Sprintf("<%d bytes of annotations as v1alpha1>", size), fmt.Sprintf(
		"too large to be read through v1alpha1: the v1-only fields (pathType, tls, ingressClassName, resources) are kept in the %s "+
			"annotation there, and with the object's own annotations that would be %d bytes, over the %d the operator allows "+
			"(the API server refuses more than 262144 in a converted object, failing every v1alpha1 read of the namespace); "+
			"use fewer or shorter Exact routes, or fewer annotations",
		conversion.DataAnnotation, size, conversion.MaxV1alpha1AnnotationBytes)).WithOrigin(RuleV1alpha1Size)}
}
