package validation

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/routepath"
)

// validateDelegations checks spec.delegations: each lends valid path
// prefixes of one of the gateway's own route hosts, or of a name below one
// (validation.Covers: the owner of shop.example.com may lend
// login.shop.example.com), to a namespace other than the gateway's. A
// host the gateway does not route is refused rather than ignored: the
// delegation would do nothing, which the owner would not notice until the
// borrower's routes are refused.
func validateDelegations(gw *v1.APIGateway, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, d := range gw.Spec.Delegations {
		dfld := fld.Index(i)
		if !routesHost(gw.Spec.Routes, string(d.Host)) {
			errs = append(errs, field.Invalid(dfld.Child("host"), d.Host,
				"must be the host of one of the gateway's routes, or a name below one: a namespace can lend only hosts it owns by routing them").WithOrigin(RuleDelegations))
		}
		switch {
		case d.Namespace == gw.Namespace && gw.Namespace != "":
			errs = append(errs, field.Invalid(dfld.Child("namespace"), d.Namespace,
				"is the gateway's own namespace, whose gateways share its hosts already").WithOrigin(RuleDelegations))
		case len(validation.IsDNS1123Label(d.Namespace)) > 0:
			errs = append(errs, field.Invalid(dfld.Child("namespace"), d.Namespace,
				"must be the name of a Namespace: a lower-case DNS label such as team-b").WithOrigin(RuleDelegations))
		}
		errs = append(errs, validatePathPrefixes(d.PathPrefixes, dfld.Child("pathPrefixes"))...)
	}
	return errs
}

// routesHost reports whether one of routes is on host, or on a host that
// covers it (a name below a host the owner routes is the owner's).
func routesHost(routes []v1.Route, host string) bool {
	for _, r := range routes {
		if Covers(string(r.Host), host) {
			return true
		}
	}
	return false
}

func validatePathPrefixes(prefixes []v1.HTTPPath, fld *field.Path) field.ErrorList {
	if len(prefixes) == 0 {
		return field.ErrorList{field.Required(fld, "at least one path prefix, such as /cart/").WithOrigin(RuleDelegations)}
	}
	var errs field.ErrorList
	for j, p := range prefixes {
		// A prefix is a route path: the same alphabet and segments.
		errs = append(errs, pathErrors(string(p), fld.Index(j)).WithOrigin(RuleDelegations)...)
		if slices.Contains(prefixes[:j], p) {
			errs = append(errs, field.Duplicate(fld.Index(j), p).WithOrigin(RuleDelegations))
		}
	}
	return errs
}

// Lends reports whether the delegation d lends the route r's match to
// d.Namespace: r is on d's host and its normalised path is one of d's
// prefixes or below one, element by element (as a Prefix route matches).
func Lends(d *v1.HostDelegation, r *v1.Route) bool {
	if d.Host != r.Host {
		return false
	}
	path, err := routepath.MatchPath(string(r.Path), r.PathType == v1.PathTypePrefix)
	if err != nil {
		return false
	}
	for _, p := range d.PathPrefixes {
		prefix, err := routepath.MatchPath(string(p), true)
		if err != nil {
			continue
		}
		if prefix == "/" || path == prefix || (len(path) > len(prefix) && path[:len(prefix)] == prefix && path[len(prefix)] == '/') {
			return true
		}
	}
	return false
}

// countDelegations is ValidateCounts' check of spec.delegations.
func countDelegations(spec *v1.APIGatewaySpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	limits := rules()
	if n := len(spec.Delegations); n > limits.delegations {
		errs = append(errs, field.TooMany(fld, n, limits.delegations).WithOrigin(RuleDelegations))
	}
	for i, d := range spec.Delegations {
		if n := len(d.PathPrefixes); n > limits.pathPrefixes {
			errs = append(errs, field.TooMany(fld.Index(i).Child("pathPrefixes"), n, limits.pathPrefixes).WithOrigin(RuleDelegations))
		}
	}
	return errs
}
