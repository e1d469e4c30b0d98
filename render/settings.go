package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// A trafficSetting is one field of a Route that is not part of its match:
// whether a route sets it, the directives it writes, and the bytes those
// may add to the configuration. The renderer (buildTraffic), the size
// bound (routeSizeBound) and whether a route has traffic settings at all
// (hasTraffic) read trafficSettings, so a new setting is one entry here;
// TestTrafficSettingsAreComplete fails for a field of Route without one,
// or an entry that writes nothing or counts no size.
type trafficSetting struct {
	// field is the Route field's JSON name, also its field path's last
	// element in the renderer's errors.
	field string
	// set reports whether r sets the field: a route that sets none of
	// them renders as one without traffic settings.
	set func(r *v1.Route) bool
	// write writes the field's directives for r, which passed
	// validation.ValidateRoute, and refuses what the renderer would have
	// to escape (fld is the field's path).
	write func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList
	// bound bounds the bytes write adds: in each of the route's
	// locations, and once at http level, in a gateway whose Services'
	// DNS suffix is suffix bytes long (backendBound).
	bound func(r *v1.Route, suffix int) (location, http int)
}

// trafficSettings are the route's traffic settings, in the order their
// directives are written.
var trafficSettings = []trafficSetting{
	{
		field: "additionalBackends",
		set:   func(r *v1.Route) bool { return len(r.AdditionalBackends) > 0 },
		write: func(w *trafficWriter, r *v1.Route, _ *field.Path) field.ErrorList {
			backend := func(name v1.ServiceName, port int32) string {
				value := w.backend(name, port)
				w.t.splitUnready = w.t.splitUnready || strings.HasPrefix(value, noEndpointsPrefix)
				return value
			}
			w.t.split = writeSplit(&w.http, r, backend, w.id)
			w.t.splitUnready = w.t.splitUnready && w.t.split != ""
			return nil
		},
		bound: func(r *v1.Route, suffix int) (int, int) {
			if len(r.AdditionalBackends) == 0 {
				return 0, 0
			}
			// split_clients and its closing brace, and every backend
			// (their upstreams: sizeBound); in the location, the 503
			// of a Service without endpoints (writeNoEndpoints).
			http := 2*lineBytes + backendBound(r.BackendService.Name, suffix)
			for _, b := range r.AdditionalBackends {
				http += backendBound(b.Name, suffix)
			}
			return noEndpointsSplitBound, http
		},
	},
	{
		field: "timeouts",
		set:   func(r *v1.Route) bool { return r.Timeouts != nil },
		write: func(w *trafficWriter, r *v1.Route, _ *field.Path) field.ErrorList {
			writeTimeouts(&w.loc, r.Timeouts)
			return nil
		},
		bound: func(r *v1.Route, _ int) (int, int) {
			if r.Timeouts == nil {
				return 0, 0
			}
			return 2 * lineBytes, 0
		},
	},
	{
		field: "maxBodySize",
		set:   func(r *v1.Route) bool { return r.MaxBodySize != "" },
		write: func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
			return writeBodySize(&w.loc, r.MaxBodySize, fld)
		},
		bound: func(r *v1.Route, _ int) (int, int) {
			if r.MaxBodySize == "" {
				return 0, 0
			}
			// client_max_body_size, and proxy_request_buffering off.
			return 2*lineBytes + len(r.MaxBodySize), 0
		},
	},
	{
		field: "sourceRanges",
		set:   func(r *v1.Route) bool { return r.SourceRanges != nil },
		write: func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
			return writeSourceRanges(w.t, r.SourceRanges, fld)
		},
		bound: func(r *v1.Route, _ int) (int, int) { return sourceRangesBound(r) },
	},
	{
		field: "cors",
		set:   func(r *v1.Route) bool { return r.CORS != nil },
		write: writeCORS,
		bound: func(r *v1.Route, _ int) (int, int) { return corsBound(r) },
	},
	{
		field: "basicAuth",
		set:   func(r *v1.Route) bool { return r.BasicAuth != nil },
		write: func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
			return writeBasicAuth(&w.loc, r.BasicAuth, fld)
		},
		bound: func(r *v1.Route, _ int) (int, int) { return basicAuthBound(r) },
	},
	{
		field: "rateLimit",
		set:   func(r *v1.Route) bool { return r.RateLimit != nil },
		write: func(w *trafficWriter, r *v1.Route, _ *field.Path) field.ErrorList {
			writeRateLimit(&w.http, &w.loc, r.RateLimit, w.id)
			return nil
		},
		bound: func(r *v1.Route, _ int) (int, int) {
			if r.RateLimit == nil {
				return 0, 0
			}
			return 2 * lineBytes, 2 * lineBytes
		},
	},
	{
		field: "requestHeaders",
		set:   func(r *v1.Route) bool { return r.RequestHeaders != nil },
		write: func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
			w.headersHash(r.RequestHeaders)
			return writeRequestHeaders(&w.http, &w.loc, r.RequestHeaders, w.id, fld)
		},
		bound: func(r *v1.Route, _ int) (int, int) {
			m := r.RequestHeaders
			if m == nil {
				return 0, 0
			}
			// The gateway's own request headers, repeated, then the
			// route's; an added header's map at http level.
			location := len(sentHeaders)*lineBytes + headersBound(m.Set, 1, 1) + headersBound(m.Add, 2, 0) + namesBound(m.Remove)
			http := 0
			for _, h := range m.Add {
				http += 4*lineBytes + 2*len(h.Name) + 2*len(h.Value)
			}
			return location, http
		},
	},
	{
		field: "responseHeaders",
		set:   func(r *v1.Route) bool { return r.ResponseHeaders != nil },
		write: func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
			w.headersHash(r.ResponseHeaders)
			return writeResponseHeaders(&w.loc, r.ResponseHeaders, fld)
		},
		bound: func(r *v1.Route, _ int) (int, int) {
			m := r.ResponseHeaders
			if m == nil {
				return 0, 0
			}
			// Set hides the backend's header and adds its own: two lines.
			return headersBound(m.Set, 2, 1) + headersBound(m.Add, 1, 1) + namesBound(m.Remove), 0
		},
	},
	{
		field: "externalAuth",
		set:   func(r *v1.Route) bool { return r.ExternalAuth != nil },
		write: writeExternalAuth,
		bound: authBound,
	},
	{
		field: "retries",
		set:   func(r *v1.Route) bool { return r.Retries != nil },
		write: writeRetries,
		bound: retriesBound,
	},
	{
		field: "rewritePrefix",
		set:   func(r *v1.Route) bool { return r.RewritePrefix != "" },
		write: func(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
			p := string(r.RewritePrefix)
			if p == "" {
				return nil
			}
			w.t.rewritePrefix = p
			if !isPath(p) {
				return field.ErrorList{field.Invalid(fld, p, "the renderer writes only a path of letters, digits and - . _ ~ / ! & ( ) * + , = : @")}
			}
			return nil
		},
		bound: func(r *v1.Route, _ int) (int, int) {
			// The rewrite lines write it (for "/" twice); their own
			// bytes are the location's (routeSizeBound).
			return 2 * len(r.RewritePrefix), 0
		},
	},
	{
		field: "redirect",
		set:   func(r *v1.Route) bool { return r.Redirect != nil },
		write: writeRedirect,
		bound: func(r *v1.Route, _ int) (int, int) { return redirectBound(r) },
	},
}

// hasTraffic reports whether r sets any traffic setting.
func hasTraffic(r *v1.Route) bool {
	for _, s := range trafficSettings {
		if s.set(r) {
			return true
		}
	}
	return false
}

// trafficBound bounds the bytes r's traffic settings add: in each of its
// locations, and once at http level.
func trafficBound(r *v1.Route, suffix int) (location, http int) {
	for _, s := range trafficSettings {
		l, h := s.bound(r, suffix)
		location += l
		http += h
	}
	return location, http
}

// trafficWriter is what a route's settings write into: the location's
// lines, the http-level blocks, and the route's traffic.
type trafficWriter struct {
	loc, http strings.Builder
	t         *routeTraffic
	// id names the route's http-level blocks (routeID).
	id      string
	backend func(v1.ServiceName, int32) string
	// hashed is set once the location sized its header hashes.
	hashed bool
}

// headersHash sizes the location's header hashes before the first header
// change of m, once per location: the request and the response headers
// share it.
func (w *trafficWriter) headersHash(m *v1.HeaderModifier) {
	if w.hashed || !changesHeaders(m) {
		return
	}
	w.hashed = true
	fmt.Fprintf(&w.loc, "%sproxy_headers_hash_bucket_size %d;\n", indent, proxyHeadersHashBucketSize)
}
