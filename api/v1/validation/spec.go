package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// validateIngressClassName requires the name of an IngressClass: a DNS-1123
// subdomain, as the Ingress API requires of spec.ingressClassName.
func validateIngressClassName(name *string, fld *field.Path) field.ErrorList {
	var err *field.Error
	switch maxLength := rules().ingressClassName.maxLength; {
	case name == nil:
		return nil
	case *name == "":
		err = field.Invalid(fld, *name, "must name an IngressClass; leave it unset for the cluster's default")
	case len(*name) > maxLength:
		err = field.TooLong(fld, *name, maxLength)
	case !IsDNSName(*name):
		err = field.Invalid(fld, *name, "must be the name of an IngressClass: a lower-case DNS subdomain such as nginx"+
			suggest(*name, NormalizeHost(*name), IsDNSName))
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleIngressClassName)}
}

// validateConfigUpdateStrategy allows Reload, Rollout or nothing (Reload).
func validateConfigUpdateStrategy(s v1.ConfigUpdateStrategy, fld *field.Path) field.ErrorList {
	values := rules().configUpdateStrategies
	if s == "" || slices.Contains(values, string(s)) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fld, s, values).WithOrigin(RuleConfigUpdateStrategy)}
}

// validateAccessLog allows no access log, or one in a format the schema
// lists (JSON); the format is required, as the schema says.
func validateAccessLog(l *v1.AccessLog, fld *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	fld = fld.Child("format")
	values := rules().accessLogFormats
	switch {
	case l.Format == "":
		return field.ErrorList{field.Required(fld, "the access log's format: "+strings.Join(values, " or ")).WithOrigin(RuleAccessLog)}
	case !slices.Contains(values, string(l.Format)):
		return field.ErrorList{field.NotSupported(fld, l.Format, values).WithOrigin(RuleAccessLog)}
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
	return errs.WithOrigin(RuleResources)
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
