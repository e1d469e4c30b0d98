package validation

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// validateTLS checks that every TLS host is the host of a route (a
// certificate for a host the gateway does not serve is a mistake) and is
// listed once, and that each secretName can name a Secret.
func validateTLS(tls []v1.GatewayTLS, routes []v1.Route, fld *field.Path) field.ErrorList {
	routeHosts := make([]string, 0, len(routes))
	for _, r := range routes {
		if !slices.Contains(routeHosts, string(r.Host)) {
			routeHosts = append(routeHosts, string(r.Host))
		}
	}
	var errs field.ErrorList
	seen := map[string]*field.Path{}
	for i, t := range tls {
		fld := fld.Index(i)
		if len(t.Hosts) == 0 {
			errs = append(errs, field.Required(fld.Child("hosts"), "at least one route host").WithOrigin(RuleTLSHosts))
		}
		for j, h := range t.Hosts {
			hfld := fld.Child("hosts").Index(j)
			if !slices.Contains(routeHosts, h) {
				errs = append(errs, field.Invalid(hfld, h, "must be the host of one of the gateway's routes"+tlsHostHint(h, routeHosts)).WithOrigin(RuleTLSHosts))
				continue
			}
			if prev, dup := seen[h]; dup {
				e := field.Duplicate(hfld, h)
				e.Detail = "already listed in " + prev.String() + "; a host can have only one certificate"
				errs = append(errs, e.WithOrigin(RuleTLSHosts))
				continue
			}
			seen[h] = hfld
		}
		errs = append(errs, validateSecretName(t.SecretName, fld.Child("secretName"))...)
	}
	return errs
}

func tlsHostHint(h string, routeHosts []string) string {
	if n := NormalizeHost(h); n != h && slices.Contains(routeHosts, n) {
		return fmt.Sprintf("; did you mean %q?", n)
	}
	if len(routeHosts) > 5 {
		return fmt.Sprintf("; the route hosts are %s and %d more", strings.Join(routeHosts[:5], ", "), len(routeHosts)-5)
	}
	return "; the route hosts are " + strings.Join(routeHosts, ", ")
}

func validateSecretName(name string, fld *field.Path) field.ErrorList {
	var err *field.Error
	switch maxLength := rules().secretName.maxLength; {
	case name == "":
		err = field.Required(fld, "the name of a kubernetes.io/tls Secret in the gateway's namespace")
	case len(name) > maxLength:
		err = field.TooLong(fld, name, maxLength)
	case len(validation.IsDNS1123Subdomain(name)) > 0:
		err = field.Invalid(fld, name, "must be the name of a Secret: a lower-case DNS subdomain such as api-example-com-tls"+
			suggest(name, NormalizeHost(name), func(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }))
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleTLSSecretName)}
}
