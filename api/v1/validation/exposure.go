package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// validateExposure checks spec.exposure and what it rules out elsewhere in
// the spec: with type HTTPRoute, the parent Gateways' listeners terminate
// TLS and there is no Ingress, so spec.tls and spec.ingressClassName are
// refused rather than silently ignored (a user who set them expects
// them to act).
func validateExposure(spec *v1.APIGatewaySpec, fld *field.Path) field.ErrorList {
	e := spec.Exposure
	if e == nil {
		return nil
	}
	efld := fld.Child("exposure")
	var errs field.ErrorList
	switch e.Type {
	case v1.ExposureIngress:
		if e.HTTPRoute != nil {
			errs = append(errs, field.Forbidden(efld.Child("httpRoute"), "allowed only with type HTTPRoute").WithOrigin(RuleExposure))
		}
	case v1.ExposureHTTPRoute:
		errs = append(errs, validateHTTPRouteExposure(e.HTTPRoute, efld.Child("httpRoute"))...)
		if len(spec.TLS) > 0 {
			errs = append(errs, field.Forbidden(fld.Child("tls"), "with exposure type HTTPRoute, TLS is terminated by the parent Gateway's listeners: "+
				"put the certificate in a listener's certificateRefs and remove spec.tls").WithOrigin(RuleExposure))
		}
		if spec.IngressClassName != nil {
			errs = append(errs, field.Forbidden(fld.Child("ingressClassName"), "selects the class of the gateway's Ingress, "+
				"which exposure type HTTPRoute does not create: remove it").WithOrigin(RuleExposure))
		}
	case "":
		errs = append(errs, field.Required(efld.Child("type"), quotedOr(rules().exposureTypes)).WithOrigin(RuleExposure))
	default:
		errs = append(errs, field.NotSupported(efld.Child("type"), e.Type, rules().exposureTypes).WithOrigin(RuleExposure))
	}
	return errs
}

func validateHTTPRouteExposure(h *v1.HTTPRouteExposure, fld *field.Path) field.ErrorList {
	switch {
	case h == nil:
		return field.ErrorList{field.Required(fld, "the Gateways to attach to, such as {parentRefs: [{name: public, namespace: infra}]}").WithOrigin(RuleParentRefs)}
	case len(h.ParentRefs) == 0:
		return field.ErrorList{field.Required(fld.Child("parentRefs"), "at least one Gateway, such as {name: public, namespace: infra}").WithOrigin(RuleParentRefs)}
	}
	var errs field.ErrorList
	first := map[parentKey]int{}
	for i, p := range h.ParentRefs {
		pfld := fld.Child("parentRefs").Index(i)
		errs = append(errs, validateParentRef(&p, pfld)...)
		key := asWritten(p)
		if j, dup := first[key]; dup {
			e := field.Duplicate(pfld, ParentString(&p, ""))
			e.Detail = fmt.Sprintf("same Gateway and listener as parentRefs[%d]", j)
			errs = append(errs, e.WithOrigin(RuleParentRefs))
			continue
		}
		first[key] = i
		for j := range i {
			q := h.ParentRefs[j]
			if sameParent(p, q) && (p.SectionName == nil) != (q.SectionName == nil) {
				errs = append(errs, field.Invalid(pfld, ParentString(&p, ""), fmt.Sprintf("parentRefs[%d] names the same Gateway: "+
					"references to one Gateway must each name a listener (sectionName), or be the only reference to it", j)).WithOrigin(RuleParentRefs))
				break
			}
		}
	}
	return errs
}

func validateParentRef(p *v1.ParentGatewayReference, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.Namespace != nil && len(validation.IsDNS1123Label(*p.Namespace)) > 0 {
		errs = append(errs, field.Invalid(fld.Child("namespace"), *p.Namespace,
			"must be the name of a Namespace: a lower-case DNS label such as infra").WithOrigin(RuleParentRefs))
	}
	switch {
	case p.Name == "":
		errs = append(errs, field.Required(fld.Child("name"), "the Gateway's name").WithOrigin(RuleParentRefs))
	case len(validation.IsDNS1123Subdomain(p.Name)) > 0:
		errs = append(errs, field.Invalid(fld.Child("name"), p.Name,
			"must be the name of a Gateway: a lower-case DNS subdomain such as public").WithOrigin(RuleParentRefs))
	}
	if p.SectionName != nil && len(validation.IsDNS1123Subdomain(*p.SectionName)) > 0 {
		errs = append(errs, field.Invalid(fld.Child("sectionName"), *p.SectionName,
			"must be the name of a listener: a lower-case DNS subdomain such as https").WithOrigin(RuleParentRefs))
	}
	return errs
}

// parentKey is a reference as written: two references are repeated when
// they are written alike, as the schema compares them (an unset namespace
// and the gateway's own name one Gateway, which ParentGateway resolves for
// the conflict checks).
type parentKey struct{ namespace, name, sectionName string }

func asWritten(p v1.ParentGatewayReference) parentKey {
	return parentKey{ptr.Deref(p.Namespace, ""), p.Name, ptr.Deref(p.SectionName, "")}
}

func sameParent(a, b v1.ParentGatewayReference) bool {
	return ptr.Deref(a.Namespace, "") == ptr.Deref(b.Namespace, "") && a.Name == b.Name
}
