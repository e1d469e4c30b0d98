package render

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/routepath"
)

// A route's redirect (routes[].redirect) as an nginx return. The
// Location is built from three kinds of parts, none of which a client
// can make end the header or the directive:
//
//   - the tenant's strings (hostname, path), which passed validation
//     and are checked again here (checkRedirect): a DNS name, and the
//     path alphabet, which holds no '"', '\', '$', space or control
//     character;
//   - the request's raw path and query, as the client sent them
//     ($request_uri, whole when the path is kept, or the rest of its
//     path past the route's prefix), never nginx's decoded $uri, in
//     which %0D%0A would be a line break: the server refuses
//     (ambiguousRequestPath) a raw path with an encoded '/', '\' or
//     '.', '//', dot segments or bytes past ASCII, so its segments are
//     the segments the route matched, and the Location can never start
//     "//" (another host) or "/\";
//   - nginx's own $is_args$args (the query as sent), the client's scheme
//     as the gateway knows it ($gateway_forwarded_proto: http or https),
//     and $host, the request's host: on a server of one name, that name;
//     on a wildcard's, one whose first label the location requires to be
//     a DNS label first.
//
// A Location that changes neither scheme, host nor port is written as a
// path alone (absolute_redirect off), which the client resolves against
// the URL it asked for: its host and port, which the gateway, behind a
// Service and a front proxy, does not know.

// redirectTarget is a route's redirect, checked: what each of its
// locations writes (redirectLines).
type redirectTarget struct {
	code int32
	// origin is "scheme://host[:port]", with variables where the request
	// decides, or "" for a Location that is a path alone.
	origin string
	// wildcardHost is set when origin reads $host of a wildcard server.
	wildcardHost bool
	// scheme is the scheme of a redirect to another scheme of the same
	// host (validation.RedirectsOtherScheme): only requests on the other
	// one are redirected. "" redirects every request.
	scheme string
	// path is the whole path (ReplaceFullPath), or the prefix that
	// replaces the one matched (ReplacePrefixMatch); rest is the
	// variable holding the rest of the request's raw path with
	// ReplacePrefixMatch, restMap the http-level map that sets it.
	// Without path, the Location's path and query are $request_uri.
	pathType      v1.RedirectPathType
	path          string
	rest, restMap string
}

// writeRedirect checks r's redirect once more and writes the map of the
// request's raw path it needs (into w.http), and sets w.t.redirect.
func writeRedirect(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
	if r.Redirect == nil {
		return nil
	}
	if errs := checkRedirect(r.Redirect, fld); len(errs) > 0 {
		return errs
	}
	t := redirectTargetOf(r, w.id)
	w.http.WriteString(t.restMap)
	w.t.redirect = t
	return nil
}

// redirectTargetOf is r's redirect as its locations write it; id names
// the map of the rest of the raw path (routeID).
func redirectTargetOf(r *v1.Route, id string) *redirectTarget {
	rd := r.Redirect
	t := &redirectTarget{code: validation.RedirectStatus(rd)}
	if validation.RedirectsOtherScheme(rd) {
		t.scheme = string(rd.Scheme)
	}
	t.origin, t.wildcardHost = redirectOrigin(r)
	if rd.Path != nil {
		t.pathType, t.path = rd.Path.Type, string(rd.Path.Value)
	}
	if t.pathType == v1.ReplacePrefixMatch {
		// The rest of the raw path past the segments of the matched
		// prefix.
		t.rest = "redirect_path_" + id
		t.restMap = fmt.Sprintf("map $request_uri $%s {\n    default \"\";\n    \"~^(?:/[^/?]*){%d}(/[^?]*)\" $1;\n}\n", t.rest, prefixSegments(r))
	}
	return t
}

// prefixSegments is the number of segments of r's normalised path, a
// Prefix route's: 0 for "/", 1 for /users, 2 for /api/v1.
func prefixSegments(r *v1.Route) int {
	p, err := routepath.MatchPath(string(r.Path), true)
	if err != nil || p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// redirectOrigin is the Location's scheme, host and port, "" when the
// redirect changes none of them; and whether it reads the host of a
// wildcard server from the request.
func redirectOrigin(r *v1.Route) (string, bool) {
	rd := r.Redirect
	if rd.Scheme == "" && rd.Hostname == "" && rd.Port == nil {
		return "", false
	}
	scheme := "$" + forwardedProtoVariable
	if rd.Scheme != "" {
		scheme = string(rd.Scheme)
	}
	// Without hostname, the request's: on a server of one name, $host is
	// that name, as the route has it; on a wildcard's, any first label
	// (redirectLines checks it).
	host, wildcard := string(rd.Hostname), false
	if host == "" {
		host, wildcard = "$host", strings.HasPrefix(string(r.Host), "*.")
	}
	port := ""
	if rd.Port != nil && !wellKnownPort(rd.Scheme, int32(*rd.Port)) {
		port = ":" + strconv.Itoa(int(*rd.Port))
	}
	return scheme + "://" + host + port, wildcard
}

// wellKnownPort reports whether port is scheme's own, which a Location
// leaves out.
func wellKnownPort(scheme v1.RedirectScheme, port int32) bool {
	return scheme == "http" && port == 80 || scheme == "https" && port == 443
}

// checkRedirect is the renderer's own look at the strings and numbers a
// redirect writes: a scheme of two values, a DNS name, a port, a path of
// the path alphabet, a redirect status.
func checkRedirect(rd *v1.HTTPRedirect, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rd.Scheme != "" && rd.Scheme != "http" && rd.Scheme != "https" {
		errs = append(errs, field.Invalid(fld.Child("scheme"), rd.Scheme, "the renderer writes only http or https"))
	}
	if h := string(rd.Hostname); h != "" && !validation.IsDNSName(h) {
		errs = append(errs, field.Invalid(fld.Child("hostname"), h, "the renderer writes only a DNS name"))
	}
	if rd.Port != nil && (*rd.Port < 1 || *rd.Port > 65535) {
		errs = append(errs, field.Invalid(fld.Child("port"), *rd.Port, "the renderer writes only a port from 1 to 65535"))
	}
	if p := rd.Path; p != nil && !isLocationPath(string(p.Value)) {
		errs = append(errs, field.Invalid(fld.Child("path", "value"), p.Value, "the renderer writes only a path of letters, digits and - . _ ~ / ! & ( ) * + , = : @ %"))
	}
	if p := rd.Path; p != nil && p.Type != v1.ReplaceFullPath && p.Type != v1.ReplacePrefixMatch {
		errs = append(errs, field.Invalid(fld.Child("path", "type"), p.Type, "the renderer writes only ReplaceFullPath or ReplacePrefixMatch"))
	}
	switch validation.RedirectStatus(rd) {
	case 301, 302, 303, 307, 308:
	default:
		errs = append(errs, field.Invalid(fld.Child("statusCode"), *rd.StatusCode, "the renderer writes only 301, 302, 303, 307 or 308"))
	}
	return errs.WithOrigin(validation.RuleRedirect)
}

// isLocationPath reports whether p is a path the renderer may write into
// a Location: "/" and then routepath's path alphabet ('%' included),
// never "//" at its start (another host to a client).
func isLocationPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return false
	}
	for i := range len(p) {
		if !routepath.IsPathByte(p[i]) {
			return false
		}
	}
	return true
}

// redirectLines are the lines of l, a location of a route with redirect
// t, that answer with it: at the location's top, before the rules'
// dispatch and the backend.
func redirectLines(l location, t *redirectTarget) string {
	var path string
	switch {
	case t.pathType == v1.ReplaceFullPath:
		path = t.path + "$is_args$args"
	case t.pathType == v1.ReplacePrefixMatch && strings.HasPrefix(l.match, "= "):
		// The exact location of a Prefix route: the request's path is
		// the prefix, replaced whole.
		path = t.path + "$is_args$args"
	case t.pathType == v1.ReplacePrefixMatch:
		// The rest starts with "/", so a prefix of "/" adds nothing.
		path = strings.TrimSuffix(t.path, "/") + "$" + t.rest + "$is_args$args"
	default:
		// The request's path and query, as sent.
		path = "$request_uri"
	}
	var b strings.Builder
	if t.origin == "" {
		fmt.Fprintf(&b, "%sabsolute_redirect off;\n", indent)
	}
	if t.wildcardHost {
		// The server's name matched any first label but '.': only a DNS
		// label may reach the Location.
		fmt.Fprintf(&b, "%sif ($host !~ \"^[a-z0-9-]{1,63}\\.\") {\n%s    return 400;\n%s}\n", indent, indent, indent)
	}
	ret := fmt.Sprintf("return %d \"%s%s\";", t.code, t.origin, path)
	if t.scheme == "" {
		fmt.Fprintf(&b, "%s%s\n", indent, ret)
		return b.String()
	}
	fmt.Fprintf(&b, "%sif ($%s != \"%s\") {\n%s    %s\n%s}\n", indent, forwardedProtoVariable, t.scheme, indent, ret, indent)
	return b.String()
}

// redirectBound bounds what r's redirect writes: in each location, its
// lines as redirectLines writes them, for the longer of a Prefix route's
// two kinds of location, and the map of the raw path. They are measured,
// not estimated: a redirect on every route of a gateway (such as http to
// https) keeps admission's bound within reach of the exact size.
func redirectBound(r *v1.Route) (perLocation, http int) {
	if r.Redirect == nil {
		return 0, 0
	}
	t := redirectTargetOf(r, routeID(""))
	exact := len(redirectLines(location{match: "= /"}, t))
	prefix := len(redirectLines(location{match: "/"}, t))
	return max(exact, prefix), len(t.restMap)
}
