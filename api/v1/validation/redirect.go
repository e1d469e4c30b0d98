package validation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's redirect (issue 34). Its bounds and enums are the v1
// schema's (markers in api/v1/redirect_types.go, read by rules); the
// renderer writes the hostname, port, path and status into a return
// directive, so it calls this check again and checks each string once
// more itself.

var (
	routeRedirect         = field.NewPath("redirect")
	routeRedirectScheme   = routeRedirect.Child("scheme")
	routeRedirectHostname = routeRedirect.Child("hostname")
	routeRedirectPort     = routeRedirect.Child("port")
	routeRedirectPath     = routeRedirect.Child("path")
	routeRedirectStatus   = routeRedirect.Child("statusCode")
)

// The schema's messages, said again by the Go rules.
const (
	redirectChangesMessage   = "a redirect changes the scheme, hostname, port or path: one that changes none would send the client back to the same URL"
	redirectAnswersMessage   = "a redirect with a hostname or without scheme answers every request of the route: backendService, rules, additionalBackends, rewritePrefix, requestHeaders, timeouts, maxBodySize and rateLimit would never apply"
	redirectPrefixMessage    = "ReplacePrefixMatch replaces the prefix a Prefix route matched: an Exact route has none"
	redirectWildcardsMessage = "must be a host name, not a wildcard"
)

// DefaultRedirectStatus is the status of a redirect that names none,
// Gateway API's default.
const DefaultRedirectStatus int32 = 302

// RedirectStatus is rd's status: its statusCode, or DefaultRedirectStatus.
func RedirectStatus(rd *v1.HTTPRedirect) int32 {
	if rd.StatusCode == nil {
		return DefaultRedirectStatus
	}
	return *rd.StatusCode
}

// AnswersAll reports whether r's redirect answers every request of r:
// any redirect but one to another scheme of the same host
// (RedirectsOtherScheme).
func AnswersAll(r *v1.Route) bool { return r.Redirect != nil && !RedirectsOtherScheme(r.Redirect) }

// RedirectsOtherScheme reports whether rd names a scheme and no hostname:
// it answers only the requests that came in with the other scheme (a
// redirect of the others would send them back to the same URL).
func RedirectsOtherScheme(rd *v1.HTTPRedirect) bool { return rd.Scheme != "" && rd.Hostname == "" }

// validateRedirect checks r's redirect, at the fields the schema's rules
// name.
func validateRedirect(r *v1.Route) field.ErrorList {
	rd := r.Redirect
	if rd == nil {
		return nil
	}
	var errs field.ErrorList
	limits := rules()
	if rd.Scheme == "" && rd.Hostname == "" && rd.Port == nil && rd.Path == nil {
		errs = append(errs, field.Invalid(routeRedirect, "{}", redirectChangesMessage))
	}
	if rd.Scheme != "" && !slices.Contains(limits.redirectSchemes, string(rd.Scheme)) {
		errs = append(errs, field.NotSupported(routeRedirectScheme, rd.Scheme, limits.redirectSchemes))
	}
	switch h := string(rd.Hostname); {
	case h == "":
	case strings.HasPrefix(h, "*"):
		errs = append(errs, field.Invalid(routeRedirectHostname, h, redirectWildcardsMessage))
	default:
		errs = append(errs, validateHost(h, routeRedirectHostname)...)
	}
	if rd.Port != nil {
		if bounds := limits.redirectPort; !bounds.holds(int64(*rd.Port)) {
			errs = append(errs, field.Invalid(routeRedirectPort, int32(*rd.Port), fmt.Sprintf("must be a port number from %d to %d", bounds.min, bounds.max)))
		}
	}
	errs = append(errs, validateRedirectPath(r, rd.Path)...)
	if rd.StatusCode != nil && !slices.Contains(limits.redirectCodes, int64(*rd.StatusCode)) {
		codes := make([]string, len(limits.redirectCodes))
		for i, c := range limits.redirectCodes {
			codes[i] = strconv.FormatInt(c, 10)
		}
		errs = append(errs, field.NotSupported(routeRedirectStatus, *rd.StatusCode, codes))
	}
	if AnswersAll(r) && answeredSettings(r) {
		errs = append(errs, field.Invalid(routeRedirect, RedirectString(r), redirectAnswersMessage))
	}
	return errs.WithOrigin(RuleRedirect)
}

// answeredSettings reports whether r sets what a redirect that answers
// every request
// leaves nothing to act on (AnswersAll): a backend, rules, or a setting of the
// proxied request. (responseHeaders apply to the redirect's answer.)
func answeredSettings(r *v1.Route) bool {
	return r.BackendService != (v1.BackendService{}) || len(r.Rules) > 0 || len(r.AdditionalBackends) > 0 ||
		r.RewritePrefix != "" || r.RequestHeaders != nil || r.Timeouts != nil || r.MaxBodySize != "" || r.RateLimit != nil
}

func validateRedirectPath(r *v1.Route, p *v1.RedirectPath) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	types := rules().redirectPathTypes
	switch {
	case p.Type == "":
		errs = append(errs, field.Required(routeRedirectPath.Child("type"), quotedOr(types)))
	case !slices.Contains(types, string(p.Type)):
		errs = append(errs, field.NotSupported(routeRedirectPath.Child("type"), p.Type, types))
	case p.Type == v1.ReplacePrefixMatch && r.PathType == v1.PathTypeExact:
		errs = append(errs, field.Invalid(routeRedirectPath, p.Value, redirectPrefixMessage))
	}
	return append(errs, pathErrors(string(p.Value), routeRedirectPath.Child("value"))...)
}

// RedirectString renders a redirect for the routes command: its status
// and Location, "*" standing for the request's path, such as
// "301 https://new.example.com/v2/*" or "308 /docs/"; with a scheme,
// the requests it answers, as in "302 https://api.example.com* (requests
// not on https)". "" without redirect.
func RedirectString(r *v1.Route) string {
	rd := r.Redirect
	if rd == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d ", RedirectStatus(rd))
	if rd.Scheme != "" || rd.Hostname != "" || rd.Port != nil {
		if rd.Scheme != "" {
			b.WriteString(string(rd.Scheme) + ":")
		}
		host := rd.Hostname
		if host == "" {
			host = r.Host
		}
		b.WriteString("//" + string(host))
		if rd.Port != nil {
			fmt.Fprintf(&b, ":%d", *rd.Port)
		}
	}
	switch {
	case rd.Path == nil:
		b.WriteString("*")
	case rd.Path.Type == v1.ReplacePrefixMatch:
		b.WriteString(strings.TrimSuffix(string(rd.Path.Value), "/") + "/*")
	default:
		b.WriteString(string(rd.Path.Value))
	}
	if RedirectsOtherScheme(rd) {
		b.WriteString(" (requests not on " + string(rd.Scheme) + ")")
	}
	return b.String()
}
