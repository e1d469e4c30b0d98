package webhooks

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/conversion"
)

// The v1 schema's limits on the spec-level fields v1alpha1 has no field
// for. A write through v1alpha1 is checked against the v1alpha1 schema
// only, and the conversion annotation can bring these fields back, so
// Validate checks them itself: every way in meets the same rules.
const (
	maxTLS         = 16
	maxTLSHosts    = 100
	maxIngressName = validation.DNS1123SubdomainMaxLength
)

// validateSpecFields checks tls's shape, ingressClassName and resources as
// the v1 schema would, and what the gateway's children need of them.
func validateSpecFields(spec *v1.APIGatewaySpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := len(spec.TLS); n > maxTLS {
		errs = append(errs, field.TooMany(fld.Child("tls"), n, maxTLS))
	}
	for i, t := range spec.TLS {
		if n := len(t.Hosts); n > maxTLSHosts {
			errs = append(errs, field.TooMany(fld.Child("tls").Index(i).Child("hosts"), n, maxTLSHosts))
		}
	}
	errs = append(errs, validateIngressClassName(spec.IngressClassName, fld.Child("ingressClassName"))...)
	errs = append(errs, validateResources(spec.Resources, fld.Child("resources"))...)
	return errs
}

// validateIngressClassName requires the name of an IngressClass: a DNS-1123
// subdomain, as the Ingress API requires of spec.ingressClassName.
func validateIngressClassName(name *string, fld *field.Path) field.ErrorList {
	if name == nil {
		return nil
	}
	switch {
	case *name == "":
		return field.ErrorList{field.Invalid(fld, *name, "must name an IngressClass; leave it unset for the cluster's default")}
	case len(*name) > maxIngressName:
		return field.ErrorList{field.TooLong(fld, *name, maxIngressName)}
	case !isDNS1123Subdomain(*name):
		return field.ErrorList{field.Invalid(fld, *name, "must be the name of an IngressClass: a lower-case DNS subdomain such as nginx"+
			suggest(*name, NormalizeHost(*name), isDNS1123Subdomain))}
	}
	return nil
}

// validateResources applies the checks the API server would make of the
// gateway container's resources when the operator writes the Deployment,
// so a mistake is refused at the gateway instead of failing its child:
// resource names, non-negative quantities, requests within limits, and
// claims with distinct DNS-label names.
func validateResources(r *corev1.ResourceRequirements, fld *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, res := range sortedResourceNames(part.list) {
			q := part.list[res]
			rfld := fld.Child(part.name).Key(string(res))
			if msgs := validation.IsQualifiedName(string(res)); len(msgs) > 0 {
				errs = append(errs, field.Invalid(rfld, string(res), "must be a resource name such as cpu or memory: "+strings.Join(msgs, "; ")))
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(rfld, q.String(), "must not be negative"))
			}
		}
	}
	for _, res := range sortedResourceNames(r.Requests) {
		req := r.Requests[res]
		if limit, ok := r.Limits[res]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(fld.Child("requests").Key(string(res)), req.String(),
				fmt.Sprintf("must be less than or equal to the %s limit of %s", res, limit.String())))
		}
	}
	seen := map[string]bool{}
	for i, c := range r.Claims {
		cfld := fld.Child("claims").Index(i).Child("name")
		switch {
		case len(validation.IsDNS1123Label(c.Name)) > 0:
			errs = append(errs, field.Invalid(cfld, c.Name, "must be a DNS-1123 label naming a pod resource claim"))
		case seen[c.Name]:
			errs = append(errs, field.Duplicate(cfld, c.Name))
		}
		seen[c.Name] = true
	}
	return errs
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// validateV1alpha1Size refuses a gateway whose v1alpha1 form would carry
// more annotations than the API server accepts in a converted object:
// from then on every v1alpha1 GET, LIST and WATCH that reaches it would
// fail, for every client of the namespace.
func validateV1alpha1Size(gw *v1.APIGateway, fld *field.Path) field.ErrorList {
	if conversion.V1alpha1AnnotationBytesBound(gw) <= conversion.MaxV1alpha1AnnotationBytes {
		return nil
	}
	size, err := conversion.V1alpha1AnnotationBytes(gw)
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err)}
	}
	if size <= conversion.MaxV1alpha1AnnotationBytes {
		return nil
	}
	return field.ErrorList{field.Invalid(fld, fmt.Sprintf("<%d bytes of annotations as v1alpha1>", size), fmt.Sprintf(
		"too large to be read through v1alpha1: the v1-only fields (pathType, tls, ingressClassName, resources) are kept in the %s "+
			"annotation there, and with the object's own annotations that would be %d bytes, over the %d the operator allows "+
			"(the API server refuses more than 262144 in a converted object, failing every v1alpha1 read of the namespace); "+
			"use fewer or shorter Exact routes, or fewer annotations",
		conversion.DataAnnotation, size, conversion.MaxV1alpha1AnnotationBytes))}
}
