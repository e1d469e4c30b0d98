package render

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// A route's external authentication (routes[].externalAuth) with nginx's
// auth_request. Each location of the route asks, in nginx's access phase
// (after the source ranges' 403, a redirect, the rules' hand-over and the
// rate limit), an internal location of the route's server, which proxies
// the request's head, without its body and with only the headers listed,
// to the authentication Service: pooled like a backend when it has a
// ClusterIP (upstream.go), else by name through the resolver. nginx lets
// the request through on a 2xx, answers 401 and 403 as they came, and 500
// for any other answer, a refused connection or a timeout: the backend is
// never reached unless the Service said yes.
//
// The internal location's path starts with "//": a client's path never
// does (nginx merges slashes before it matches a location) and a route's
// path never does (validation refuses empty segments), so it can neither
// be asked for nor shadow a route. It is internal besides.
//
// Every string written is checked again here: the Service name and port
// (the backend's rules, through backendOf), the path (the rewrite's
// alphabet without '%'), header names (letters, digits and '-'), and the
// sign-in URL (its schema's alphabet, which holds no '"', '\', '$',
// space or control character).

const (
	// authLocationPrefix starts the internal location's path.
	authLocationPrefix = "//gateway-auth/"
	// authBackendVariable holds the authentication Service's upstream or
	// host:port: a subrequest shares its variables with the request, so
	// it must not be $backend, which names the route's own backend.
	authBackendVariable = "gateway_auth_backend"
	// authRedirectVariable is the URL the client asked for, escaped as a
	// query parameter's value (writeAuthRedirectMaps).
	authRedirectVariable = "gateway_auth_rd"
	// authRedirectPasses is how many characters of the URL the client
	// asked for the escaping maps percent-encode; a URL with more is
	// sent to sign-in without rd (the sign-in service's own default).
	authRedirectPasses = 16
)

// authTarget is a route's external authentication, checked: what its
// locations and its internal location write.
type authTarget struct {
	// location is the internal location's path (authBlock).
	location string
	// lines are the lines of each of the route's locations and its rules'
	// named locations, at their top (writeLocationBody): also in a
	// location that answers 404 itself, since its recursive_error_pages
	// lets a rule's named location follow its own error_page 401.
	lines string
	// block is the internal location, written once in the route's server.
	block string
	// signIn is set when a 401 redirects: the http-level escaping maps
	// are then written once per gateway.
	signIn bool
}

// writeExternalAuth checks r's external authentication once more and sets
// w.t.auth.
func writeExternalAuth(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
	a := r.ExternalAuth
	if a == nil {
		return nil
	}
	errs := checkExternalAuth(a, fld)
	if len(errs) > 0 {
		return errs
	}
	t := &authTarget{signIn: a.SignInURL != ""}
	t.location, t.block = authBlock(a, w.backend(a.Service, int32(a.Port)))
	id := strings.TrimPrefix(t.location, authLocationPrefix)
	var b strings.Builder
	fmt.Fprintf(&b, "%sauth_request %s;\n", indent, nginxQuoted(t.location))
	if t.signIn {
		sep := "?"
		if strings.Contains(a.SignInURL, "?") {
			sep = "&"
		}
		// recursive_error_pages: a rule's named location is itself an
		// error_page's target, and nginx follows one error_page per
		// request unless told.
		fmt.Fprintf(&b, "%srecursive_error_pages on;\n%serror_page 401 \"%s%srd=$%s\";\n", indent, indent, a.SignInURL, sep, authRedirectVariable)
	}
	if len(a.ResponseHeaders) > 0 {
		// The location's own proxy_set_header lines drop the server's:
		// repeated, unless requestHeaders repeated them already (it is
		// written first, and validation keeps the two apart).
		if !changesHeaders(r.RequestHeaders) {
			for _, h := range sentHeaders {
				fmt.Fprintf(&b, "%sproxy_set_header %s %s;\n", indent, h.name, h.value)
			}
		}
		if !w.hashed {
			w.hashed = true
			fmt.Fprintf(&b, "%sproxy_headers_hash_bucket_size %d;\n", indent, proxyHeadersHashBucketSize)
		}
	}
	for i, n := range a.ResponseHeaders {
		// The Service's header, or none: the client's own copy never
		// reaches the backend, as proxy_set_header replaces it and an
		// empty value sends nothing.
		variable := fmt.Sprintf("gateway_auth_%s_%d", id, i)
		fmt.Fprintf(&b, "%sauth_request_set $%s $upstream_http_%s;\n", indent, variable, headerVariable(string(n)))
		fmt.Fprintf(&b, "%sproxy_set_header %s $%s;\n", indent, n, variable)
	}
	t.lines = b.String()
	w.t.auth = t
	return nil
}

// authBlock is the internal location that asks the authentication
// Service, at backend, about a request, and its path: named after a hash
// of what it does, so routes of one server with the same external
// authentication (one oauth2-proxy for many routes) share it.
func authBlock(a *v1.ExternalAuth, backend string) (location, block string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%sinternal;\n", indent)
	fmt.Fprintf(&b, "%sproxy_pass_request_body off;\n%sproxy_pass_request_headers off;\n", indent, indent)
	timeout := validation.AuthTimeoutSeconds(a)
	fmt.Fprintf(&b, "%sproxy_connect_timeout %ds;\n%sproxy_send_timeout %ds;\n%sproxy_read_timeout %ds;\n", indent, timeout, indent, timeout, indent, timeout)
	for _, h := range authSentHeaders {
		fmt.Fprintf(&b, "%sproxy_set_header %s %s;\n", indent, h.name, h.value)
	}
	for _, n := range a.ForwardHeaders {
		fmt.Fprintf(&b, "%sproxy_set_header %s $http_%s;\n", indent, n, headerVariable(string(n)))
	}
	fmt.Fprintf(&b, "%sset $%s %s;\n", indent, authBackendVariable, nginxQuoted(backend))
	fmt.Fprintf(&b, "%sproxy_pass http://$%s%s;\n    }\n", indent, authBackendVariable, a.Path)
	// The response headers name the variables the route's locations set.
	location = authLocationPrefix + shortID(b.String()+fmt.Sprint(a.ResponseHeaders))
	return location, "\n    # routes[].externalAuth: the request's head, without body, to the authentication Service.\n" +
		"    location = " + nginxQuoted(location) + " {\n" + b.String()
}

// authSentHeaders are the headers the authentication Service always
// receives: the gateway's Host and X-Forwarded-* (gatewayHeaders, as a
// backend receives them, but for Forwarded and the upgrade's two), the
// request's URI and method, no body and no Connection (the pooled
// connection stays open).
var authSentHeaders = slices.Concat(
	slices.DeleteFunc(slices.Clone(gatewayHeaders), func(h sentHeader) bool {
		return h.name == "Forwarded" || h.name == "Upgrade" || h.name == "Connection"
	}),
	[]sentHeader{
		{name: "X-Forwarded-Uri", value: "$request_uri"},
		{name: "X-Forwarded-Method", value: "$request_method"},
		{name: "X-Original-URI", value: "$request_uri"},
		{name: "X-Original-Method", value: "$request_method"},
		{name: "Content-Length", value: `""`},
		{name: "Connection", value: `""`},
	})

// headerVariable is the suffix of nginx's $http_ and $upstream_http_
// variables for header name n: lower-cased, '-' as '_'.
func headerVariable(n string) string { return strings.ReplaceAll(strings.ToLower(n), "-", "_") }

// checkExternalAuth is the renderer's own look at what an external
// authentication writes: a path of the rewrite's alphabet, header names
// of letters, digits and '-' that are none of the headers the gateway
// sets itself, and a sign-in URL of the schema's alphabet; the path and
// the URL (with its "rd=" variable) short enough for one nginx token.
func checkExternalAuth(a *v1.ExternalAuth, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	// nginx reads a token of at most 4096 bytes (maxNginxArgument).
	if !isPath(string(a.Path)) || len(a.Path) > maxNginxArgument {
		errs = append(errs, field.Invalid(fld.Child("path"), a.Path, "the renderer writes only a path of letters, digits and - . _ ~ / ! & ( ) * + , = : @"))
	}
	lists := []struct {
		name  string
		names []v1.HTTPHeaderName
	}{{"forwardHeaders", a.ForwardHeaders}, {"responseHeaders", a.ResponseHeaders}}
	for _, l := range lists {
		for i, n := range l.names {
			f := fld.Child(l.name).Index(i)
			if _, err := headerName(string(n), f); err != nil {
				errs = append(errs, err)
			} else if gatewaySets(string(n)) {
				errs = append(errs, field.Invalid(f, n, "the renderer sets this header itself"))
			}
		}
	}
	if s := a.SignInURL; s != "" && (!validation.IsSignInURL(s) || !isSignInChars(s) || len(s) > maxNginxArgument-64) {
		errs = append(errs, field.Invalid(fld.Child("signInURL"), s, "the renderer writes only an https URL of letters, digits and - . _ ~ / ? ! & ( ) * + , = : @ %"))
	}
	if t := validation.AuthTimeoutSeconds(a); t < 1 || t > 30 {
		errs = append(errs, field.Invalid(fld.Child("timeoutSeconds"), t, "the renderer writes only 1 to 30 seconds"))
	}
	return errs.WithOrigin(validation.RuleExternalAuth)
}

// gatewaySets reports whether the gateway sets header n itself on the
// request to a backend or to the authentication Service, or it is
// hop-by-hop.
func gatewaySets(n string) bool {
	for _, h := range sentHeaders {
		if strings.EqualFold(h.name, n) {
			return true
		}
	}
	for _, h := range authSentHeaders {
		if strings.EqualFold(h.name, n) {
			return true
		}
	}
	for _, h := range []string{"Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding"} {
		if strings.EqualFold(h, n) {
			return true
		}
	}
	return false
}

// isSignInChars reports whether s holds only the sign-in URL's alphabet:
// none of it ends a quoted nginx string, escapes, or starts a variable.
func isSignInChars(s string) bool {
	for i := range len(s) {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/?!&()*+,=:@%", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// authEscapes are the characters the escaping maps percent-encode in the
// URL the client asked for, with their encoding: those a query
// parameter's value cannot hold as written. nginx refuses a request line
// with a control character, and a request's raw path past ASCII
// (ambiguousRequestPath); a URL with any other character outside
// authSafe is sent to sign-in without rd.
var authEscapes = []struct{ pattern, encoded string }{
	{`%`, "%25"}, {`&`, "%26"}, {`\+`, "%2B"}, {`;`, "%3B"}, {`#`, "%23"}, {`\x20`, "%20"},
	{`\x22`, "%22"}, {`<`, "%3C"}, {`>`, "%3E"}, {`\x5C`, "%5C"}, {`\^`, "%5E"}, {"`", "%60"},
	{`\x7B`, "%7B"}, {`\|`, "%7C"}, {`\x7D`, "%7D"},
}

// authSafe is the regular-expression class of the characters a query
// parameter's value holds as written ('$' as \x24: nginx would read a
// variable).
const authSafe = `[-A-Za-z0-9._~/:@!\x24'()*,=?]`

// writeAuthRedirectMaps writes the maps that make $gateway_auth_rd, the
// URL the client asked for as a query parameter's value. Stock nginx has
// no function that percent-encodes, so each of authRedirectPasses pairs
// of maps takes the rest of the URL so far, writes its leading safe
// characters and the first unsafe one encoded, and passes on what
// follows; the last map joins them when nothing is left, and is empty
// otherwise (a URL with more than authRedirectPasses characters to
// encode, or one none of the maps knows). Maps are evaluated only where read: on a sign-in redirect.
func writeAuthRedirectMaps(b *strings.Builder) {
	b.WriteString("# routes[].externalAuth.signInURL: the URL asked for, percent-encoded as rd's value.\n")
	rest := func(i int) string { return fmt.Sprintf("$%s_rest%d", authRedirectVariable, i) }
	// The URL, when its host is a DNS name (a wildcard server's first
	// label is the client's: "a?b.example.com" would make rd's host "a")
	// and the rest holds only characters the maps write: safe ones and
	// those they encode. Any other (a byte past ASCII in the query, a
	// '[') makes it "", and rd empty.
	var known strings.Builder
	for _, e := range authEscapes {
		known.WriteString("|" + e.pattern)
	}
	fmt.Fprintf(b, "map \"$%s://$host$request_uri\" %s {\n    default \"\";\n    \"~^(https?://[-a-z0-9.]+/(?:%s%s)*)$\" \"$1\";\n}\n",
		forwardedProtoVariable, rest(0), authSafe, known.String())
	done := make([]string, authRedirectPasses)
	for i := 1; i <= authRedirectPasses; i++ {
		done[i-1] = fmt.Sprintf("$%s_part%d", authRedirectVariable, i)
		fmt.Fprintf(b, "map %s %s {\n    default %s;\n", rest(i-1), done[i-1], rest(i-1))
		for _, e := range authEscapes {
			fmt.Fprintf(b, "    \"~^(%s*)%s\" \"$1%s\";\n", authSafe, e.pattern, e.encoded)
		}
		fmt.Fprintf(b, "}\nmap %s %s {\n    default \"\";\n", rest(i-1), rest(i))
		fmt.Fprintf(b, "    \"~^%s*[^-A-Za-z0-9._~/:@!\\x24'()*,=?](.*)$\" \"$1\";\n}\n", authSafe)
	}
	fmt.Fprintf(b, "map %s $%s {\n    \"\" \"%s\";\n    default \"\";\n}\n", rest(authRedirectPasses), authRedirectVariable, strings.Join(done, ""))
}

// authBound bounds what r's external authentication writes in each of
// its locations: its lines, measured with the longest backend name. Its
// internal location, once per server for the routes that share it, is
// counted by sizeBound (authBlocks), and so are the escaping maps, once
// per gateway (authRedirectMapsBytes).
func authBound(r *v1.Route, suffix int) (perLocation, http int) {
	t := authMeasured(r, suffix)
	if t == nil {
		return 0, 0
	}
	return len(t.lines), 0
}

// authMeasured is r's external authentication rendered with a backend
// name of the longest length its Service's can have; nil for none.
func authMeasured(r *v1.Route, suffix int) *authTarget {
	if r.ExternalAuth == nil {
		return nil
	}
	w := &trafficWriter{t: &routeTraffic{}, id: routeID(""), backend: func(n v1.ServiceName, _ int32) string {
		return strings.Repeat("x", backendBound(n, suffix))
	}}
	_ = writeExternalAuth(w, r, field.NewPath("externalAuth"))
	return w.t.auth
}

// authBlocks counts the internal locations of a gateway's external
// authentications for sizeBound: once per server and location.
type authBlocks map[string]bool

// add is what r's internal location adds to the bound: its size, or 0
// when one of the same server already counted it.
func (c authBlocks) add(r *v1.Route, suffix int) int {
	t := authMeasured(r, suffix)
	if t == nil || c[string(r.Host)+" "+t.location] {
		return 0
	}
	c[string(r.Host)+" "+t.location] = true
	return len(t.block)
}

// authRedirectMapsBytes is the size of the escaping maps.
func authRedirectMapsBytes() int {
	var b strings.Builder
	writeAuthRedirectMaps(&b)
	return len(b.String())
}

// writeSharedLocations writes the named and internal locations a
// server's locations share, in their sorted order, each once: those of
// their external authentications and of their CORS's preflights. A route
// has one or two locations, and routes with the same external
// authentication or CORS share one.
func writeSharedLocations(b *strings.Builder, sorted []location) {
	written := map[string]bool{}
	write := func(name, block string) {
		if block != "" && !written[name] {
			written[name] = true
			b.WriteString(block)
		}
	}
	for _, l := range sorted {
		if a := l.traffic.auth; a != nil {
			write(a.location, a.block)
		}
		// Named after a hash of the CORS: the block names itself.
		write(l.traffic.corsPreflight, l.traffic.corsPreflight)
	}
}
