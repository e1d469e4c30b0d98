package validation

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's external authentication (issue 35). Its bounds and patterns
// are the v1 schema's (markers in api/v1/externalauth_types.go, read by
// rules); the renderer writes the Service, path, header names and sign-in
// URL into nginx directives, so it calls this check again and looks at
// each string once more itself. The header names are HTTPHeaderNames:
// the same pattern and the same refusal of Host, the body's framing, the
// X-Forwarded-* headers the gateway sets and the hop-by-hop headers
// (Connection, Upgrade, ...).

var routeExternalAuth = field.NewPath("externalAuth")

// The schema's messages, said again by the Go rules.
const (
	signInURLMessage       = "must be an absolute https URL, such as https://auth.example.com/oauth2/start"
	signInURLCharsMessage  = "must be an absolute https URL of a lower-case host, optionally a port, and a path and query of letters, digits and - . _ ~ / ? ! & ( ) * + , = : @ %, without fragment"
	authPathEncodedMessage = "must not hold percent-encoded bytes: the authentication Service receives the path as written"
	authSetHeadersMessage  = "X-Original-URI and X-Original-Method are set by the gateway"
	authHeaderTwiceMessage = "requestHeaders change a header the authentication Service's answer sets: the backend must receive the Service's copy alone"
)

// DefaultAuthTimeoutSeconds is the authentication Service's timeout when
// a route names none.
const DefaultAuthTimeoutSeconds int32 = 5

// AuthTimeoutSeconds is a's timeoutSeconds, or DefaultAuthTimeoutSeconds.
func AuthTimeoutSeconds(a *v1.ExternalAuth) int32 {
	return ptr.Deref(a.TimeoutSeconds, DefaultAuthTimeoutSeconds)
}

// validateExternalAuth checks r's external authentication, at the fields
// the schema's rules name.
func validateExternalAuth(r *v1.Route) field.ErrorList {
	a := r.ExternalAuth
	if a == nil {
		return nil
	}
	fld := routeExternalAuth
	limits := rules()
	errs := validateBackendName(string(a.Service), fld.Child("service"))
	errs = append(errs, validateBackendPort(a.Port, fld.Child("port"))...)
	errs = append(errs, pathErrors(string(a.Path), fld.Child("path"))...)
	if strings.Contains(string(a.Path), "%") {
		errs = append(errs, field.Invalid(fld.Child("path"), a.Path, authPathEncodedMessage))
	}
	name := func(n v1.HTTPHeaderName) string { return string(n) }
	check := func(n v1.HTTPHeaderName, f *field.Path) field.ErrorList { return validateHeaderName(string(n), f) }
	errs = append(errs, eachCondition(a.ForwardHeaders, fld.Child("forwardHeaders"), limits.authForwardHeaders, name, check)...)
	// The schema's rule is on the list: the API server reports the list.
	for _, n := range a.ForwardHeaders {
		if limits.authSetHeaders[strings.ToLower(string(n))] {
			errs = append(errs, field.Invalid(fld.Child("forwardHeaders"), n, authSetHeadersMessage))
			break
		}
	}
	errs = append(errs, eachCondition(a.ResponseHeaders, fld.Child("responseHeaders"), limits.authResponseHeaders, name, check)...)
	errs = append(errs, changedTwice(a.ResponseHeaders, r.RequestHeaders, fld.Child("responseHeaders"))...)
	errs = append(errs, validateSignInURL(a.SignInURL, fld.Child("signInURL"))...)
	if a.TimeoutSeconds != nil {
		if bounds := limits.authTimeoutSeconds; !bounds.holds(int64(*a.TimeoutSeconds)) {
			errs = append(errs, field.Invalid(fld.Child("timeoutSeconds"), *a.TimeoutSeconds, fmt.Sprintf("must be from %d to %d", bounds.min, bounds.max)))
		}
	}
	return errs.WithOrigin(RuleExternalAuth)
}

// changedTwice refuses response headers of the authentication Service
// that the route's requestHeaders also set, add or remove: the backend
// would receive two values, with add one of them the client's. The
// schema's rule is on the route, at the list: reported once, there.
func changedTwice(names []v1.HTTPHeaderName, m *v1.HeaderModifier, fld *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	changed := map[string]bool{}
	for _, h := range slices.Concat(m.Set, m.Add) {
		changed[strings.ToLower(string(h.Name))] = true
	}
	for _, n := range m.Remove {
		changed[strings.ToLower(string(n))] = true
	}
	for _, n := range names {
		if changed[strings.ToLower(string(n))] {
			return field.ErrorList{field.Invalid(fld, n, authHeaderTwiceMessage)}
		}
	}
	return nil
}

// validateSignInURL checks a sign-in URL: the schema's pattern (its
// alphabet holds none of the characters a quoted nginx string reads as
// its end, an escape or a variable) and its CEL rule, an absolute https
// URL with a host.
func validateSignInURL(s string, fld *field.Path) field.ErrorList {
	if s == "" {
		return nil
	}
	if errs := validateString(s, fld, rules().signInURL, signInURLCharsMessage); len(errs) > 0 {
		return errs
	}
	if !IsSignInURL(s) {
		return field.ErrorList{field.Invalid(fld, s, signInURLMessage)}
	}
	return nil
}

// IsSignInURL reports whether s is an absolute https URL with a host, as
// the schema's CEL (isURL, url().getScheme(), url().getHostname()) says.
func IsSignInURL(s string) bool {
	u, err := url.ParseRequestURI(s)
	return err == nil && u.Scheme == "https" && u.Hostname() != ""
}
