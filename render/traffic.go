package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/routepath"
)

// A route's traffic settings (issue 26) as nginx directives. Each
// directive is written only when its field is set, so a route that sets
// none renders byte for byte as before and an upgrade rolls no gateway.
//
// The http-level blocks a route needs (split_clients, limit_req_zone, map)
// are named after a hash of the route's match (validation.RouteMatch), so
// their names are stable across renders and distinct within a gateway,
// whose routes have distinct matches; they hold only lower-case letters,
// digits and '_'. The file is an envsubst template, and the images'
// entrypoint substitutes only variables defined in its environment (as
// for $host and $backend), so nginx's own variables ($request_id,
// $http_*) and these reach nginx unchanged.

const (
	// maxNginxArgument bounds a quoted argument the renderer writes: nginx
	// reads its configuration through a 4096-byte buffer and refuses a
	// longer token ("too long parameter"; measured with 1.22, a quoted
	// value of 4090 bytes loads and one of 4100 does not). The API's
	// longest header value, 1024 bytes, fits with room to spare.
	maxNginxArgument = 4000
	// rateLimitZoneSize is each rate-limited route's shared memory: nginx
	// keeps about 16,000 client addresses in 1 MiB, and forgets the least
	// recently seen when it is full.
	rateLimitZoneSize = "1m"
	// indent is a directive's indentation inside a location.
	indent = "        "
	// proxyHeadersHashBucketSize fits the longest header name the API
	// admits, 64 characters, in the hashes nginx builds of a location's
	// proxy_set_header and proxy_hide_header names: an entry takes a
	// pointer (8) and the name with 2 bytes rounded up to 8, so 80 bytes,
	// and nginx's default bucket of 64 refuses names of 47 characters or
	// more ("could not build proxy_headers_hash"). 256 holds three such
	// names per bucket and a pointer, as server_names_hash_bucket_size
	// holds three maximal hosts; nginx allocates what the names use, not
	// the bucket size.
	proxyHeadersHashBucketSize = 256
)

// routeTraffic is what a route's traffic settings render to: the same for
// each of the route's locations, apart from the rewrite.
type routeTraffic struct {
	// http holds the route's http-level blocks, written once.
	http string
	// directives are the location's lines before its backend is chosen.
	directives string
	// split is the variable split_clients sets to the backend of a route
	// that shares its requests, "" for a route with one backend.
	split string
	// splitUnready is set when a Service split names has no ready
	// endpoint (retries.go): the location answers its share 503.
	splitUnready bool
	// rewritePrefix is the route's quoted-safe rewritePrefix, "" for none.
	rewritePrefix string
	// sourceGeo is the geo block of the route's source ranges, written
	// once per gateway for routes with the same ranges, and sourceCheck
	// the location's lines that refuse what it refuses; "" for none
	// (sourceranges.go).
	sourceGeo, sourceCheck string
	// redirect is the route's redirect, checked; nil for none.
	redirect *redirectTarget
	// auth is the route's external authentication, checked; nil for none
	// (externalauth.go).
	auth *authTarget
	// cors are the location's lines of the route's CORS, "" for none;
	// corsMaps its maps, written once per gateway for routes with the
	// same CORS, and corsPreflight its preflight's named location, once
	// per server; corsEcho whether they read the echo maps of a "*"
	// (cors.go).
	cors, corsMaps, corsPreflight string
	corsEcho                      bool
}

// buildTraffic renders the traffic settings of r, a route that passed
// validation.ValidateRoute (buildServers calls it first, whatever admission
// did); fld is r's field path. backend is the host:port of one of the
// gateway's Services, built from names ValidateRoute checked. The strings
// a tenant writes as directive arguments are checked once more here
// (nginxArgument, headerName, the path alphabet), so a value that
// bypassed validation is refused, never escaped.
func buildTraffic(r *v1.Route, backend func(v1.ServiceName, int32) string, fld *field.Path) (routeTraffic, field.ErrorList) {
	var t routeTraffic
	if !hasTraffic(r) {
		return t, nil
	}
	match, _ := validation.RouteMatch(r)
	w := &trafficWriter{t: &t, id: routeID(match), backend: backend}
	var errs field.ErrorList
	for _, s := range trafficSettings {
		errs = append(errs, s.write(w, r, fld.Child(s.field))...)
	}
	if w.http.Len() > 0 {
		t.http = "# " + match + "\n" + w.http.String()
	}
	t.directives = w.loc.String()
	return t, errs
}

// changesHeaders reports whether m names any header.
func changesHeaders(m *v1.HeaderModifier) bool {
	return m != nil && len(m.Set)+len(m.Add)+len(m.Remove) > 0
}

// routeID names the http-level blocks of the route with match
// (validation.RouteMatch): 64 bits of its SHA-256, in hex.
func routeID(match string) string {
	sum := sha256.Sum256([]byte(match))
	return hex.EncodeToString(sum[:8])
}

// isPath reports whether p is a path the renderer may write as a rewrite's
// replacement: "/" and then routepath's path alphabet, without '%'. None
// of its characters ends a quoted nginx string, starts a variable ('$'),
// the query ('?') or a capture reference.
func isPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for i := range len(p) {
		if !routepath.IsPathByte(p[i]) || p[i] == '%' {
			return false
		}
	}
	return true
}

// writeSplit writes the split_clients block of a route whose additional
// backends take some of its requests and returns the variable it sets, or
// "" when they take none. The split is per request: $request_id is random,
// and nginx hashes it onto the percentages. A backend of weight 0 is left
// out, and so is backendService when the others take 100%; the last
// backend listed takes "*", the rest, so every hash has a backend.
func writeSplit(b *strings.Builder, r *v1.Route, backend func(v1.ServiceName, int32) string, id string) string {
	type share struct {
		backend string
		weight  int32
	}
	var shares []share
	total := int32(0)
	for _, a := range r.AdditionalBackends {
		if a.Weight > 0 {
			shares = append(shares, share{backend(a.Name, int32(a.Port)), a.Weight})
			total += a.Weight
		}
	}
	if total == 0 {
		return ""
	}
	if total < 100 {
		shares = append(shares, share{backend(r.BackendService.Name, int32(r.BackendService.Port)), 100 - total})
	}
	name := "backend_" + id
	fmt.Fprintf(b, "split_clients \"$request_id\" $%s {\n", name)
	for i, s := range shares {
		if i == len(shares)-1 {
			fmt.Fprintf(b, "    * %s;\n", nginxQuoted(s.backend))
			continue
		}
		fmt.Fprintf(b, "    %d%% %s;\n", s.weight, nginxQuoted(s.backend))
	}
	b.WriteString("}\n")
	return name
}

func writeTimeouts(b *strings.Builder, t *v1.RouteTimeouts) {
	if t == nil {
		return
	}
	if t.ConnectSeconds != nil {
		fmt.Fprintf(b, "%sproxy_connect_timeout %ds;\n", indent, *t.ConnectSeconds)
	}
	if t.ReadSeconds != nil {
		fmt.Fprintf(b, "%sproxy_read_timeout %ds;\n", indent, *t.ReadSeconds)
	}
}

// MaxBufferedBody is the most the gateway buffers to disk for one request
// body or one response (64m in nginx's notation). nginx buffers a request
// body whole before it passes it on, and a response larger than its proxy
// buffers, in the pod's temp directories, whose emptyDirs the Deployment
// sizes from this: a route that allows larger bodies, or any ("0"),
// streams them to its backend instead (proxy_request_buffering off), and
// proxy_max_temp_file_size caps a response's share, so no client can fill
// the pod's disk and have it evicted.
const MaxBufferedBody = 64 << 20

// maxTempFile is MaxBufferedBody as nginx's proxy_max_temp_file_size.
var maxTempFile = strconv.Itoa(MaxBufferedBody>>20) + "m"

func writeBodySize(b *strings.Builder, size string, fld *field.Path) field.ErrorList {
	if size == "" {
		return nil
	}
	quoted, err := nginxArgument(size)
	if err != nil {
		return field.ErrorList{field.Invalid(fld, size, err.Error())}
	}
	fmt.Fprintf(b, "%sclient_max_body_size %s;\n", indent, quoted)
	if n, ok := sizeBytes(size); ok && (n == 0 || n > MaxBufferedBody) {
		fmt.Fprintf(b, "%sproxy_request_buffering off;\n", indent)
	}
	return nil
}

// sizeBytes reads nginx's size notation as maxBodySize's schema admits
// it: a number with an optional k, m or g.
func sizeBytes(size string) (int64, bool) {
	if size == "" {
		return 0, false
	}
	shift := 0
	switch size[len(size)-1] {
	case 'k':
		shift = 10
	case 'm':
		shift = 20
	case 'g':
		shift = 30
	}
	if shift != 0 {
		size = size[:len(size)-1]
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n << shift, true
}

// writeRateLimit gives the route a zone of its own, keyed by the client's
// address as the gateway knows it (the realip module's, with trusted
// proxies), and answers 429 past the burst. nodelay serves the burst at
// once instead of spacing it out; nginx refuses "burst=0", the default.
func writeRateLimit(http, loc *strings.Builder, l *v1.RateLimit, id string) {
	if l == nil {
		return
	}
	zone := "route_" + id
	fmt.Fprintf(http, "limit_req_zone $binary_remote_addr zone=%s:%s rate=%dr/s;\n", zone, rateLimitZoneSize, l.RequestsPerSecond)
	burst := ""
	if l.Burst > 0 {
		burst = fmt.Sprintf(" burst=%d", l.Burst)
	}
	fmt.Fprintf(loc, "%slimit_req zone=%s%s nodelay;\n%slimit_req_status 429;\n", indent, zone, burst, indent)
}

// gatewayHeaders are the request headers the gateway sets on every
// proxied request (writeServer writes them into each server). nginx drops
// the proxy_set_header lines a location inherits as soon as it has one of
// its own, so a route that changes request headers repeats these first;
// the API reserves their names (validation refuses them in requestHeaders).
// sentHeader is a request header the gateway sets: its name, its value (an
// nginx argument) and the comment written above it.
type sentHeader struct{ name, value, comment string }

var gatewayHeaders = []sentHeader{
	{name: "Host", value: "$host"},
	{name: "X-Real-IP", value: "$remote_addr", comment: `# The client's address as the gateway knows it: the peer, or the
# address a trusted front proxy reported (set_real_ip_from). What the
# client wrote in X-Forwarded-For is replaced, never passed on.
`},
	{name: "X-Forwarded-For", value: "$remote_addr"},
	{name: "X-Forwarded-Host", value: "$host", comment: `# Where the client was at the edge: the host it asked for, and the
# scheme and port a trusted front proxy reported, else the gateway's own
# scheme and no port (writeForwarded). Forwarded (RFC 7239) is cleared:
# a client's would contradict these, and backends read either.
`},
	{name: "X-Forwarded-Proto", value: "$" + forwardedProtoVariable},
	{name: "X-Forwarded-Port", value: "$" + forwardedPortVariable},
	{name: "Forwarded", value: `""`},
	{name: "Upgrade", value: "$" + upgradeVariable, comment: `# The client's Upgrade (but h2c) and "Connection: upgrade" with it, so a
# WebSocket gets its 101 and then its bytes both ways (writeUpgrade).
`},
	{name: "Connection", value: "$" + connectionVariable},
}

// clearedHeaders are forwarding headers the gateway does not set but
// backends' frameworks believe (Spring, Rails, Werkzeug's ProxyFix): a
// client's would tell the backend another scheme or mount path. The
// gateway sends none of them (an empty value is left out); unlike
// gatewayHeaders a route may still set one, such as X-Forwarded-Prefix
// for an application mounted under a rewritten path: its line comes after
// these.
var clearedHeaders = []sentHeader{
	{name: "X-Forwarded-Prefix", value: `""`, comment: `# Forwarding headers the gateway does not set but frameworks believe:
# a client's are dropped (a route may set them).
`},
	{name: "X-Forwarded-Ssl", value: `""`},
	{name: "X-Forwarded-Scheme", value: `""`},
}

// sentHeaders are the proxy_set_header lines of every server, repeated by
// a location that sets headers of its own: gatewayHeaders, then
// clearedHeaders.
var sentHeaders = slices.Concat(gatewayHeaders, clearedHeaders)

// writeRequestHeaders sets, adds and removes the headers sent to the
// backend. Set replaces the client's value; remove sends an empty value,
// which nginx leaves out. Add keeps the client's value and appends one:
// a map (http level, evaluated only where used) gives the value alone when
// the client sent none, and "theirs, value" otherwise. nginx 1.23 and
// later join a header the client sent on several lines into $http_name;
// 1.22 keeps the first line only.
func writeRequestHeaders(http, loc *strings.Builder, m *v1.HeaderModifier, id string, fld *field.Path) field.ErrorList {
	if !changesHeaders(m) {
		return nil
	}
	for _, h := range sentHeaders {
		fmt.Fprintf(loc, "%sproxy_set_header %s %s;\n", indent, h.name, h.value)
	}
	return eachHeader(m, fld, headerWriters{
		set: func(_ int, name, value string) {
			fmt.Fprintf(loc, "%sproxy_set_header %s %s;\n", indent, name, value)
		},
		add: func(i int, name, _ string) {
			variable := fmt.Sprintf("request_header_%s_%d", id, i)
			clients := "$http_" + headerVariable(name)
			// The value passed nginxArgument, quoted; both forms are too.
			value := string(m.Add[i].Value)
			fmt.Fprintf(http, "map %s $%s {\n    \"\" \"%s\";\n    default \"%s, %s\";\n}\n", clients, variable, value, clients, value)
			fmt.Fprintf(loc, "%sproxy_set_header %s $%s;\n", indent, name, variable)
		},
		remove: func(name string) { fmt.Fprintf(loc, "%sproxy_set_header %s \"\";\n", indent, name) },
	})
}

// writeResponseHeaders sets, adds and removes the headers of the answers
// sent to the client. proxy_hide_header drops the backend's header (set,
// remove); add_header adds one, "always" so that errors (a 429, a 502)
// carry it too. Neither has a server-level line to repeat: the gateway
// sets none.
func writeResponseHeaders(loc *strings.Builder, m *v1.HeaderModifier, fld *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	return eachHeader(m, fld, headerWriters{
		set: func(_ int, name, value string) {
			fmt.Fprintf(loc, "%sproxy_hide_header %s;\n%sadd_header %s %s always;\n", indent, name, indent, name, value)
		},
		add:    func(_ int, name, value string) { fmt.Fprintf(loc, "%sadd_header %s %s always;\n", indent, name, value) },
		remove: func(name string) { fmt.Fprintf(loc, "%sproxy_hide_header %s;\n", indent, name) },
	})
}

// headerWriters write a modifier's checked headers: set and add get each
// header's index, name and quoted value, remove each name.
type headerWriters struct {
	set, add func(i int, name, value string)
	remove   func(name string)
}

// eachHeader checks every header of m and hands the ones that pass to w,
// in the order set, add, remove; it returns the others' errors.
func eachHeader(m *v1.HeaderModifier, fld *field.Path, w headerWriters) field.ErrorList {
	var errs field.ErrorList
	lists := []struct {
		name    string
		headers []v1.HTTPHeader
		write   func(i int, name, value string)
	}{{"set", m.Set, w.set}, {"add", m.Add, w.add}}
	for _, l := range lists {
		for i, h := range l.headers {
			name, value, err := header(h, fld.Child(l.name).Index(i))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			l.write(i, name, value)
		}
	}
	for i, n := range m.Remove {
		name, err := headerName(string(n), fld.Child("remove").Index(i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.remove(name)
	}
	return errs
}

// header checks h's name and quotes its value for nginx.
func header(h v1.HTTPHeader, fld *field.Path) (name, value string, _ *field.Error) {
	name, err := headerName(string(h.Name), fld.Child("name"))
	if err != nil {
		return "", "", err
	}
	value, qerr := nginxArgument(string(h.Value))
	if qerr != nil {
		return "", "", field.Invalid(fld.Child("value"), h.Value, qerr.Error())
	}
	return name, value, nil
}

// headerName checks a header name the renderer writes as a bare nginx
// argument and in a variable's name ($http_...): letters, digits and '-'.
func headerName(n string, fld *field.Path) (string, *field.Error) {
	ok := n != "" && len(n) <= maxNginxArgument
	for i := 0; ok && i < len(n); i++ {
		c := n[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
	}
	if !ok {
		return "", field.Invalid(fld, n, "the renderer writes only header names of letters, digits and '-'")
	}
	return n, nil
}

// nginxArgument quotes s as one nginx argument, or refuses it: it never
// escapes. Inside double quotes nginx reads '"' as the end, '\' as an
// escape and '$' as a variable (which the images' envsubst may also
// replace); everything else printable is text, ';', '{', '}' and '#'
// included. Control characters (a newline ends nothing inside quotes, but
// reaches a header) and bytes past ASCII are refused too, and so is an
// argument longer than nginx reads (maxNginxArgument).
func nginxArgument(s string) (string, error) {
	if len(s) > maxNginxArgument {
		return "", fmt.Errorf("is %d bytes: the renderer writes at most %d in one nginx argument", len(s), maxNginxArgument)
	}
	for i := range len(s) {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '$' {
			return "", fmt.Errorf("holds %q at byte %d: the renderer writes only printable ASCII without '\"', '\\' or '$' in an nginx argument", c, i)
		}
	}
	return `"` + s + `"`, nil
}

// rewriteLines are the rewrite directives of a location of a Prefix route
// with rewritePrefix p that matched path (routepath.MatchPath): the
// location's request path loses the matched prefix and gains p, and
// "break" keeps the request in the location, whose proxy_pass then sends
// nginx's normalised path, escaped again, with the query as sent.
//
// path is written inside \Q...\E (PCRE's literal text) in a quoted nginx
// string: its decoded alphabet (routepath.CheckDecoded) is IsPathByte's
// ASCII and non-ASCII letters and symbols, so it holds no '\' (which alone
// could end \Q...\E), '"', '$', '{', '}', ';', '?' or whitespace. (?s) lets
// '.' match a newline a client percent-encoded (%0A), so that such a path
// is rewritten too.
func rewriteLines(l location, path, p string) string {
	base := strings.TrimSuffix(p, "/")
	switch {
	case l.sortKey == "/":
		return fmt.Sprintf("%srewrite \"^/$\" %s break;\n%srewrite \"(?s)^(/.*)\" \"%s$1\" break;\n", indent, nginxQuoted(p), indent, base)
	case strings.HasPrefix(l.match, "= "):
		return fmt.Sprintf("%srewrite \"^\\Q%s\\E$\" %s break;\n", indent, path, nginxQuoted(p))
	default:
		return fmt.Sprintf("%srewrite \"(?s)^\\Q%s\\E(/.*)\" \"%s$1\" break;\n", indent, path, base)
	}
}
