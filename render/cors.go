package render

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// A route's CORS (routes[].cors) with stock nginx, in each of the route's
// locations, right after the source ranges' 403:
//
//   - an http-level map turns the request's Origin into the
//     Access-Control-Allow-Origin to answer: the configured origin for an
//     exact one (a map string, which nginx compares ignoring case), the
//     request's Origin for one an anchored regular expression of a
//     "*." suffix matches (only DNS labels before the suffix, so the
//     echoed value holds only [-a-z0-9.:/]), "*" for any origin, and ""
//     for the others, which then get no CORS header at all (add_header
//     writes nothing for an empty value);
//   - a second map tells a preflight (OPTIONS, an allowed Origin and an
//     Access-Control-Request-Method) from the rest: the location returns
//     519, which its error_page hands to the CORS's named location, which
//     answers it 204 with the preflight's headers; before basicAuth and
//     externalAuth (nginx's access phase comes after the rewrite phase's
//     return; a preflight carries no credentials, as ingress-nginx
//     answers it too), before a redirect and the rules' hand-over, and
//     without the backend;
//   - the other answers to an allowed origin, the backend's and the
//     gateway's own (401, 403, 429, 502, a redirect: "always"), get
//     Access-Control-Allow-Origin, -Credentials and -Expose-Headers; the
//     backend's own Access-Control-* headers are hidden, so the route's
//     cors is the one answer a browser sees.
//
// The maps and the named location are named after a hash of the CORS
// (corsID): routes with the same CORS share them, the maps once per
// gateway and the named location once per server; each location holds
// only its hidden headers, its answer's headers and the hand-over.
//
// A preflight from an origin that is not allowed reaches the backend like
// any OPTIONS request (Gateway API lets the gateway answer it or not);
// its answer carries no Access-Control-* header, so the browser stops.
//
// Every origin is parsed again here (validation.ParseCORSOrigin): a
// scheme, a DNS name and a port, none of which holds a quote, '\', '$',
// ';', '{', space or regular-expression metacharacter but '.', which the
// expression escapes. Methods and header names are checked once more
// (corsToken) before they are written into header values.

// corsBackendHeaders are the backend's headers that the gateway's CORS
// replaces.
var corsBackendHeaders = []string{
	"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods",
	"Access-Control-Allow-Headers", "Access-Control-Expose-Headers", "Access-Control-Max-Age",
}

// writeCORS checks r's CORS once more and sets w.t's CORS: its maps,
// written once per gateway for routes with the same CORS, its preflight's
// named location, once per server, and the lines of each of its
// locations.
func writeCORS(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
	c := r.CORS
	if c == nil {
		return nil
	}
	origins, errs := checkCORS(c, fld)
	if len(errs) > 0 {
		return errs
	}
	w.t.corsMaps, w.t.corsPreflight, w.t.cors = corsBlocks(c, origins)
	w.t.corsEcho = corsUsesEcho(c)
	return nil
}

// checkCORS is the renderer's own look at what a CORS writes: origins
// that parse, and methods and header names that are tokens.
func checkCORS(c *v1.CORS, fld *field.Path) ([]validation.CORSOrigin, field.ErrorList) {
	var errs field.ErrorList
	origins := make([]validation.CORSOrigin, 0, len(c.AllowOrigins))
	for i, o := range c.AllowOrigins {
		p, ok := validation.ParseCORSOrigin(string(o))
		if !ok {
			errs = append(errs, field.Invalid(fld.Child("allowOrigins").Index(i), o, "the renderer writes only '*' or scheme://DNS name[:port]"))
			continue
		}
		origins = append(origins, p)
	}
	if len(origins) == 0 && len(errs) == 0 {
		errs = append(errs, field.Required(fld.Child("allowOrigins"), "the renderer writes only CORS with origins"))
	}
	if !validation.AllowsAny(c.AllowMethods) {
		for i, m := range c.AllowMethods {
			if !corsToken(string(m)) {
				errs = append(errs, field.Invalid(fld.Child("allowMethods").Index(i), m, "the renderer writes only a method of capital letters, or '*' alone"))
			}
		}
	}
	if !validation.AllowsAny(c.AllowHeaders) {
		errs = append(errs, headerNames(c.AllowHeaders, fld.Child("allowHeaders"))...)
	}
	errs = append(errs, headerNames(c.ExposeHeaders, fld.Child("exposeHeaders"))...)
	if a := validation.CORSMaxAge(c); a < 1 || a > 86400 {
		errs = append(errs, field.Invalid(fld.Child("maxAge"), a, "the renderer writes only 1 to 86400 seconds"))
	}
	return origins, errs.WithOrigin(validation.RuleCORS)
}

// headerNames refuses each of names that headerName refuses.
func headerNames[S ~string](names []S, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, n := range names {
		if _, err := headerName(string(n), fld.Index(i)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// corsToken reports whether m is a method the renderer writes: capital
// letters only.
func corsToken(m string) bool {
	if m == "" {
		return false
	}
	for i := range len(m) {
		if m[i] < 'A' || m[i] > 'Z' {
			return false
		}
	}
	return true
}

// corsPreflightStatus is the status a location returns for a preflight
// so that its error_page hands it to the CORS's named location: no
// backend's answer is taken for it (the gateway does not intercept the
// backend's errors) and the rules' dispatch uses 520 and up (matches.go).
const corsPreflightStatus = 519

// corsVariables names the variables of the CORS whose settings hash to
// id: the origin to answer, the preflight's flag, the credentials' and
// exposed headers' values for an allowed origin, and the preflight's
// named location.
func corsVariables(id string) (origin, preflight, credentials, expose, location string) {
	return "gateway_cors_origin_" + id, "gateway_cors_preflight_" + id, "gateway_cors_credentials_" + id, "gateway_cors_expose_" + id,
		"@gateway_cors_" + id
}

// corsID names the blocks of c: a hash of what they write, so routes with
// the same CORS share them.
func corsID(c *v1.CORS) string {
	return shortID(fmt.Sprintf("%q %q %q %q %d %t", c.AllowOrigins, c.AllowMethods, c.AllowHeaders, c.ExposeHeaders,
		validation.CORSMaxAge(c), c.AllowCredentials))
}

// corsBlocks are what a CORS with origins writes: its http-level maps,
// the named location that answers its preflights, and the lines of each
// location. A location hands a preflight to the named location with an
// error_page rather than answering it in its if: an if with add_header
// lines inherits none of the location's, so it had to repeat them in
// each location; the named location holds them once per server.
func corsBlocks(c *v1.CORS, origins []validation.CORSOrigin) (maps, preflightLocation, lines string) {
	origin, preflight, credentials, expose, named := corsVariables(corsID(c))
	var m strings.Builder
	m.WriteString("# routes[].cors: the Access-Control-Allow-Origin for the request's Origin.\n")
	fmt.Fprintf(&m, "map $http_origin $%s {\n", origin)
	anyOrigin := len(origins) == 1 && origins[0].Any
	if anyOrigin {
		m.WriteString("    default \"*\";\n    \"\" \"\";\n}\n")
	} else {
		m.WriteString("    default \"\";\n")
		for _, o := range origins {
			fmt.Fprintf(&m, "    %s;\n", corsOriginEntry(o))
		}
		m.WriteString("}\n")
	}
	// The origin's value holds no space: "*", an origin as configured, or
	// one the anchored expression matched.
	fmt.Fprintf(&m, "map \"$request_method $%s $http_access_control_request_method\" $%s {\n    default \"\";\n    \"~^OPTIONS [^ ]+ .\" 1;\n}\n", origin, preflight)
	if c.AllowCredentials {
		fmt.Fprintf(&m, "map $%s $%s {\n    \"\" \"\";\n    default \"true\";\n}\n", origin, credentials)
	}
	if len(c.ExposeHeaders) > 0 {
		fmt.Fprintf(&m, "map $%s $%s {\n    \"\" \"\";\n    default \"%s\";\n}\n", origin, expose, joinNames(c.ExposeHeaders))
	}

	// The headers of every answer to an allowed origin.
	answer := func(b *strings.Builder) {
		fmt.Fprintf(b, "%sadd_header Access-Control-Allow-Origin $%s always;\n", indent, origin)
		if c.AllowCredentials {
			fmt.Fprintf(b, "%sadd_header Access-Control-Allow-Credentials $%s always;\n", indent, credentials)
		}
		if !anyOrigin {
			// Caches keep one answer per Origin.
			fmt.Fprintf(b, "%sadd_header Vary Origin always;\n", indent)
		}
	}
	var p strings.Builder
	fmt.Fprintf(&p, "\n    # routes[].cors: a preflight's answer.\n    location %s {\n", named)
	answer(&p)
	if len(c.AllowMethods) > 0 {
		fmt.Fprintf(&p, "%sadd_header Access-Control-Allow-Methods %s always;\n", indent, corsAllowed(c.AllowMethods, corsRequestMethod))
	}
	if len(c.AllowHeaders) > 0 {
		fmt.Fprintf(&p, "%sadd_header Access-Control-Allow-Headers %s always;\n", indent, corsAllowed(c.AllowHeaders, corsRequestHeaders))
	}
	fmt.Fprintf(&p, "%sadd_header Access-Control-Max-Age %d always;\n", indent, validation.CORSMaxAge(c))
	fmt.Fprintf(&p, "%sreturn 204;\n    }\n", indent)

	var l strings.Builder
	for _, h := range corsBackendHeaders {
		fmt.Fprintf(&l, "%sproxy_hide_header %s;\n", indent, h)
	}
	answer(&l)
	if len(c.ExposeHeaders) > 0 {
		fmt.Fprintf(&l, "%sadd_header Access-Control-Expose-Headers $%s always;\n", indent, expose)
	}
	// "=": the named location's 204 is the answer's status.
	fmt.Fprintf(&l, "%serror_page %d = %s;\n%sif ($%s) {\n%s    return %d;\n%s}\n",
		indent, corsPreflightStatus, named, indent, preflight, indent, corsPreflightStatus, indent)
	return m.String(), p.String(), l.String()
}

// The variables of the "*" methods and headers (corsEchoMaps): what a
// preflight asks for, when it is safe to answer as it is.
const (
	corsRequestMethod  = "gateway_cors_request_method"
	corsRequestHeaders = "gateway_cors_request_headers"
)

// corsAllowed is the value of Access-Control-Allow-Methods or -Headers
// for names: the variable echo of what the preflight asks for when names
// is "*" (a literal "*" names nothing to a browser that sends
// credentials), the names quoted otherwise.
func corsAllowed[S ~string](names []S, echo string) string {
	if validation.AllowsAny(names) {
		return "$" + echo
	}
	return "\"" + joinNames(names) + "\""
}

// corsUsesEcho reports whether c allows every method or header, and so
// needs corsEchoMaps.
func corsUsesEcho(c *v1.CORS) bool {
	return c != nil && (validation.AllowsAny(c.AllowMethods) || validation.AllowsAny(c.AllowHeaders))
}

// writeCORSEchoMaps writes, once per gateway, the maps that take a
// preflight's Access-Control-Request-Method and -Headers as the answer's
// Access-Control-Allow-Methods and -Headers of a "*". The request's
// value is a tenant's client's: nginx's parser already refuses a CR, LF
// or NUL in a header, and these maps answer only what they match, a
// token of at most 32 characters, or a list of header-name tokens
// separated by commas and spaces of at most 1024 characters, and ""
// (no header: the browser refuses the preflight) for anything else. An
// OPTIONS answer is not cacheable (RFC 9110, 9.3.7), so the echo needs
// no Vary.
func writeCORSEchoMaps(b *strings.Builder) {
	b.WriteString("# routes[].cors \"*\": the method and headers a preflight asks for, when they are tokens.\n")
	fmt.Fprintf(b, "map $http_access_control_request_method $%s {\n    default \"\";\n    \"~^[-A-Za-z0-9_]{1,32}$\" $http_access_control_request_method;\n}\n", corsRequestMethod)
	fmt.Fprintf(b, "map $http_access_control_request_headers $%s {\n    default \"\";\n    \"~^(?=.{1,1024}$)[-A-Za-z0-9_]+(?: *, *[-A-Za-z0-9_]+)*$\" $http_access_control_request_headers;\n}\n", corsRequestHeaders)
}

// corsEchoMapsBytes is the size of the echo maps.
func corsEchoMapsBytes() int {
	var b strings.Builder
	writeCORSEchoMaps(&b)
	return b.Len()
}

// corsOriginEntry is the map entry of an allowed origin o (not "*"): an
// exact string, answered as configured, or an anchored expression of its
// suffix, answered with the request's Origin.
func corsOriginEntry(o validation.CORSOrigin) string {
	port := ""
	if o.Port != "" {
		port = ":" + o.Port
	}
	if !o.Suffix {
		s := o.Scheme + "://" + o.Host + port
		return fmt.Sprintf("\"%s\" \"%s\"", s, s)
	}
	return fmt.Sprintf("\"~^%s://(?:[a-z0-9-]+\\.)+%s%s$\" \"$http_origin\"", o.Scheme, regexp.QuoteMeta(o.Host), port)
}

// joinNames is names as one header value, comma-separated.
func joinNames[S ~string](names []S) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// corsBound bounds what r's CORS writes in each of its locations. Its
// maps, which routes with the same CORS share, and its named location,
// once per server, sizeBound counts once (corsShared).
func corsBound(r *v1.Route) (perLocation, http int) {
	if t := corsMeasured(r); t != nil {
		return len(t.cors), 0
	}
	return 0, 0
}

// corsMeasured is r's CORS as writeCORS writes it, nil for none (or one
// the renderer refuses).
func corsMeasured(r *v1.Route) *routeTraffic {
	if r.CORS == nil {
		return nil
	}
	w := &trafficWriter{t: &routeTraffic{}}
	if errs := writeCORS(w, r, field.NewPath("cors")); len(errs) > 0 {
		return nil
	}
	return w.t
}

// corsShared counts, in sizeBound, the blocks of r's CORS that routes
// share: its maps once per gateway and its named location once per
// server; seen holds what was counted.
func corsShared(r *v1.Route, seen map[string]bool) int {
	t := corsMeasured(r)
	if t == nil {
		return 0
	}
	total := 0
	if !seen[t.corsMaps] {
		seen[t.corsMaps] = true
		total += len(t.corsMaps)
	}
	if key := string(r.Host) + " " + t.corsPreflight; !seen[key] {
		seen[key] = true
		total += len(t.corsPreflight)
	}
	return total
}
