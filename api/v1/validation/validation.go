package validation

import (
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// MaxReplicas is the most gateway pods spec.replicas may ask for: the
// schema's maximum.
func MaxReplicas() int32 { return int32(rules().replicas.max) }

// Validate checks gw against every rule of this package and returns all the
// errors at once, in field order, each with its field path and its rule
// (Origin). old is nil on create and the stored object on update: the name
// is checked on create only, since it cannot change, and refusing updates
// of an object stored while admission was down would block even the
// removal of its finalizers. A gateway with a list longer than its limit
// gets only those errors (see ValidateCounts).
func Validate(old, gw *v1.APIGateway) field.ErrorList {
	spec := field.NewPath("spec")
	if errs := ValidateCounts(&gw.Spec, spec); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	if old == nil {
		errs = append(errs, ValidateName(gw.Name, gw.GenerateName, field.NewPath("metadata", "name"))...)
	}
	errs = append(errs, ValidateImage(string(gw.Spec.Image), spec.Child("image"))...)
	errs = append(errs, validateReplicas(gw.Spec.Replicas, spec.Child("replicas"))...)
	errs = append(errs, validateRoutes(gw.Spec.Routes, spec.Child("routes"))...)
	errs = append(errs, validateTLS(gw.Spec.TLS, gw.Spec.Routes, spec.Child("tls"))...)
	errs = append(errs, validateIngressClassName(gw.Spec.IngressClassName, spec.Child("ingressClassName"))...)
	errs = append(errs, validateResources(gw.Spec.Resources, spec.Child("resources"))...)
	errs = append(errs, validateConfigUpdateStrategy(gw.Spec.ConfigUpdateStrategy, spec.Child("configUpdateStrategy"))...)
	errs = append(errs, validateExposure(&gw.Spec, spec)...)
	errs = append(errs, validateDelegations(gw, spec.Child("delegations"))...)
	errs = append(errs, validateAccessLog(gw.Spec.AccessLog, spec.Child("accessLog"))...)
	return errs
}

// ValidateCounts checks the lengths of the spec's lists as the v1 schema
// would. Nothing else of a spec with a list too long is worth checking: an
// error per element of a list of a million, or a lookup per route in the
// conflict index, would cost what the list's limit is there to prevent, so
// admission refuses such a gateway on these errors alone.
func ValidateCounts(spec *v1.APIGatewaySpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	limits := rules()
	if n := len(spec.Routes); n > limits.routes {
		errs = append(errs, field.TooMany(fld.Child("routes"), n, limits.routes).WithOrigin(RuleRoutes))
	}
	if n := len(spec.TLS); n > limits.tls {
		errs = append(errs, field.TooMany(fld.Child("tls"), n, limits.tls).WithOrigin(RuleTLS))
	}
	if e := spec.Exposure; e != nil && e.HTTPRoute != nil && len(e.HTTPRoute.ParentRefs) > limits.parentRefs {
		errs = append(errs, field.TooMany(fld.Child("exposure", "httpRoute", "parentRefs"), len(e.HTTPRoute.ParentRefs), limits.parentRefs).WithOrigin(RuleParentRefs))
	}
	for i, t := range spec.TLS {
		if n := len(t.Hosts); n > limits.tlsHosts {
			errs = append(errs, field.TooMany(fld.Child("tls").Index(i).Child("hosts"), n, limits.tlsHosts).WithOrigin(RuleTLSHosts))
		}
	}
	errs = append(errs, countDelegations(spec, fld.Child("delegations"))...)
	return errs
}

// ValidateName checks the gateway's name, fld: it names the gateway's
// Service and Deployment and is the value of their instance label, so it
// must be a DNS-1035 label of at most 63 characters. An empty name with a
// generateName is left to the API server, which completes it from the
// prefix before validation.
func ValidateName(name, generateName string, fld *field.Path) field.ErrorList {
	switch {
	case name == "" && generateName != "":
		return nil
	case name == "":
		return field.ErrorList{field.Required(fld, "name or generateName is required").WithOrigin(RuleName)}
	case isDNS1035Label(name):
		return nil
	}
	return field.ErrorList{field.Invalid(fld, name,
		"must be a DNS-1035 label (it names the gateway's Service): "+strings.Join(validation.IsDNS1035Label(name), "; ")).WithOrigin(RuleName)}
}

// ValidateImage checks a gateway image, the gateway's spec.image or the
// operator's default.
func ValidateImage(image string, fld *field.Path) field.ErrorList {
	var err *field.Error
	maxLength := rules().image.maxLength
	switch {
	case image == "":
		err = field.Required(fld, "the mutating webhook fills it in from the namespace's "+
			v1.DefaultImageAnnotation+" annotation or the operator's default, but it did not run (it fails open); "+
			"set spec.image or retry")
	case len(image) > maxLength:
		err = field.TooLong(fld, image, maxLength)
	case strings.IndexFunc(image, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		err = field.Invalid(fld, image, "must not contain whitespace or control characters")
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleImage)}
}

func validateReplicas(replicas *int32, fld *field.Path) field.ErrorList {
	var err *field.Error
	bounds := rules().replicas
	switch {
	case replicas == nil:
		err = field.Required(fld, "the mutating webhook fills it in with the operator's default, "+
			"but it did not run (it fails open); set spec.replicas or retry")
	case !bounds.holds(int64(*replicas)):
		err = field.Invalid(fld, *replicas, fmt.Sprintf("must be from %d to %d", bounds.min, bounds.max))
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleReplicas)}
}

// suggest returns a "did you mean" hint for candidate when it differs from
// what the user wrote and passes valid.
func suggest(got, candidate string, valid func(string) bool) string {
	if candidate == got || candidate == "" || !valid(candidate) {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", candidate)
}
