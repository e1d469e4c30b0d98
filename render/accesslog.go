package render

import (
	"fmt"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// The access log (spec.accessLog, issue 36): off unless a gateway asks,
// then one JSON object per request on the gateway container's standard
// output.
//
// Off is written, not left to the image: the nginx images' nginx.conf
// logs every request at http level in their "main" format, request line
// and query string included, to /var/log/nginx/access.log, a link to
// /dev/stdout. access_log off in the same http context switches that
// off; a server that logs names its own log, which nginx then uses
// instead of the http context's.
//
// /dev/stdout is the nginx master's standard output: the reloader runs
// nginx as its child with its own output (the container's), so nothing is
// written to the read-only root filesystem. The master opens it at each
// (re)load, as the images' link is opened; each line is one write(2),
// which a pipe keeps whole up to PIPE_BUF (4 KiB): a longer line (a path
// or host of kilobytes) may interleave with another worker's.
//
// Every value is an nginx variable, escaped by escape=json; the one
// tenant string, the route's name, is set per location by a quoted "set"
// that routeName refuses to write unless it is quotable as it stands.
const (
	// accessLogFormat names the log_format.
	accessLogFormat = "gateway_json"
	// routeVariable is the name of the route a location serves
	// (validation.RouteMatch), set in each route's locations; "" where no
	// route answered.
	routeVariable = "gateway_route"
	// requestPathVariable is the request's path as the client sent it,
	// without the query string.
	requestPathVariable = "gateway_request_path"
	// accessLogTarget is where the lines go.
	accessLogTarget = "/dev/stdout"
)

// accessLogOn reports whether spec asks for the access log: accessLog in
// the one format there is. (Admission and the schema refuse any other.)
func accessLogOn(spec *v1.APIGatewaySpec) bool {
	return spec.AccessLog != nil && spec.AccessLog.Format == v1.AccessLogJSON
}

// accessLogFields are the keys of a line and the variables they hold, in
// the order written. The path is $request_uri up to its '?', as the client
// sent it (percent-encoded): not $uri, which is decoded and normalised
// and, after a route's rewritePrefix, the backend's path; not all of
// $request_uri, whose query string carries tokens. The client is
// $remote_addr, which the realip module has set from X-Forwarded-For when
// the peer is a trusted proxy (writeRealIP). request_id is the
// X-Request-ID the request came with (ingress-nginx adds one), which the
// backend receives too; the gateway neither sets nor changes it. No
// header that carries credentials (Authorization, Cookie,
// Proxy-Authorization), no Referer (it holds other pages' query
// strings), and no body is ever written.
var accessLogFields = []struct{ key, variable string }{
	{"time", "time_iso8601"},
	{"route", routeVariable},
	{"host", "host"},
	{"method", "request_method"},
	{"path", requestPathVariable},
	{"status", "status"},
	{"bytes_sent", "bytes_sent"},
	{"request_length", "request_length"},
	{"request_time", "request_time"},
	{"upstream_addr", "upstream_addr"},
	{"upstream_status", "upstream_status"},
	{"upstream_response_time", "upstream_response_time"},
	{"client", "remote_addr"},
	{"request_id", "http_x_request_id"},
}

// writeAccessLog writes the http-level lines: access_log off, and with
// the log on, its format and the request path's map. Every value is
// written as a JSON string: escape=json leaves a variable nginx has no
// value for empty, and a status nginx never set reads "000", which is no
// JSON number, so every line parses.
func writeAccessLog(b *strings.Builder, on bool) {
	b.WriteString("# No access log but the gateway's own (spec.accessLog): the images'\n" +
		"# nginx.conf would log each request line, query string included.\n" +
		"access_log off;\n")
	if !on {
		b.WriteString("\n")
		return
	}
	b.WriteString("# One JSON object per request (spec.accessLog.format JSON); the path\n" +
		"# as sent, without the query string.\n")
	fmt.Fprintf(b, "map $request_uri $%s {\n    \"~^([^?]*)\" $1;\n}\n", requestPathVariable)
	fmt.Fprintf(b, "log_format %s escape=json\n", accessLogFormat)
	for i, f := range accessLogFields {
		open, end := `"`, `,'`
		if i == 0 {
			open = `{"`
		}
		if i == len(accessLogFields)-1 {
			end = `}';`
		}
		fmt.Fprintf(b, "    '%s%s\":\"$%s\"%s\n", open, f.key, f.variable, end)
	}
	b.WriteString("\n")
}

// accessLogLine is a server's access_log directive with the log on, ""
// with it off (the http-level off applies, and the server's metrics log,
// which nginx uses instead). A request no route answers (an unknown
// host, an uncovered or ambiguous path) leaves the route's name unset:
// the line reads "" (metricsServerLines turns nginx's warning off).
func accessLogLine(on bool) string {
	if !on {
		return ""
	}
	return fmt.Sprintf("    access_log %s %s;\n", accessLogTarget, accessLogFormat)
}

// routeName is r's name (validation.RouteMatch: pathType, host and
// normalised path, such as "Prefix api.example.com/users") as a quoted
// nginx argument, for a route that passed validation.ValidateRoute. Its
// parts are a pathType, a DNS name and a decoded path whose alphabet
// (routepath.CheckDecoded) holds no '"', '\', '$', control character or
// whitespace; the check here refuses such a byte anyway, so a name that
// slipped past validation is refused, never escaped. Unlike
// nginxArgument, it keeps the non-ASCII letters a decoded path may hold:
// escape=json writes UTF-8 as it is.
func routeName(r *v1.Route) (string, error) {
	name, ok := validation.RouteMatch(r)
	if !ok {
		return "", fmt.Errorf("has no normal form to name the route by")
	}
	if len(name) > maxNginxArgument {
		return "", fmt.Errorf("names the route with %d bytes: the renderer writes at most %d in one nginx argument", len(name), maxNginxArgument)
	}
	for i := range len(name) {
		if c := name[i]; c < ' ' || c == 0x7f || c == '"' || c == '\\' || c == '$' {
			return "", fmt.Errorf("names the route with %q at byte %d: the renderer writes no control character, '\"', '\\' or '$' in the route's name", c, i)
		}
	}
	return nginxQuoted(name), nil
}

// accessLogBytes bounds what the log adds to a configuration besides its
// per-server and per-location lines: the comments, the map and the
// log_format (some 900 bytes).
const accessLogBytes = 1024
