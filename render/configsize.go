package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// MaxConfigBytes bounds a gateway's rendered nginx configuration. It is
// the whole data of the gateway's ConfigMap, which the API server refuses
// past 1 MiB (the sum of its values), less 64 KiB: admission measures the
// configuration rendered with the default options (cluster.local, the
// pod's resolvers, no trusted proxies), and the operator's own options
// make it longer by a little per backend name or trusted proxy. A backend
// is named at most 8 times per route (a split_clients of 7 weighted
// backends and backendService), 800 times in 100 routes, so the margin
// covers a cluster domain 80 characters longer than cluster.local: a
// gateway admitted under the bound still fits when the operator renders
// it, and one past it is refused at admission, naming the bound, rather
// than by the API server when the operator applies its ConfigMap.
const MaxConfigBytes = 1<<20 - 64<<10

// ValidateRenderedSize refuses gw when its nginx configuration, rendered
// with the default options, is longer than MaxConfigBytes. Admission calls
// it; the renderer applies the same bound to what it renders. A gateway
// the renderer refuses for other reasons gets no error here: the
// validation rules report those. It renders only when sizeBound
// exceeds MaxConfigBytes: the common gateway, far below the bound, pays a
// walk of its routes instead of a render (BenchmarkValidate).
func ValidateRenderedSize(gw *v1.APIGateway) field.ErrorList {
	m := Resolve(gw, sizeOptions)
	if m.sizeBound() <= MaxConfigBytes {
		return nil
	}
	config, err := m.render()
	if err != nil {
		return nil
	}
	return validateConfigSize(len(config))
}

// sizeOptions are the options admission measures a gateway with: the
// defaults, with every backend Service pooled at the longest address
// there is, as long as the operator's render of it can be.
var sizeOptions = Options{ServiceAddresses: longestAddresses}

// The terms of sizeBound, measured on what render writes (the
// renderer's tests hold the bound above the exact size:
// TestRenderedSizeBoundIsAbove).
const (
	// fileBytes bounds the lines outside the routes' servers and blocks:
	// the header (without the gateway's names), the resolver, the hash
	// sizes, the forwarded-header and upgrade maps, the traffic blocks'
	// comment, the access log's off, the health and default servers (some
	// 1600 bytes).
	fileBytes = 2048
	// serverBytes bounds a host's server block without its name and its
	// routes' locations: the ambiguous-path check, the gateway's request
	// headers with their comments, the 404 location (some 1650 bytes).
	serverBytes = 2048
	// lineBytes bounds what one line holds besides the tenant strings
	// counted on their own: indentation, the directive's name, quotes,
	// numbers, a route id of 16 hex digits, a list index; most hold 30 to
	// 60 bytes. The few longer ones count as two: limit_req_zone (80),
	// limit_req with a burst of 10000 (67, with limit_req_status), the
	// location of an added request header (63 with two digits of index).
	lineBytes = 64
	// routeLocations is the most locations a route renders to: a Prefix
	// route has the exact path and the path and below.
	routeLocations = 2
	// metricsMapEntryBytes bounds a metrics map entry besides its names:
	// indentation, quotes, ".svc.", two ports and the separators (33).
	metricsMapEntryBytes = 40
)

// sizeBound is an upper bound of the length of m's configuration,
// computed from the
// lengths of the strings render writes, each times the most it writes it,
// plus lineBytes per directive: it renders nothing. It counts what a
// render would write even for a route it then drops (a duplicate match),
// so it is never below the exact size.
func (m *Gateway) sizeBound() int {
	ns := len(m.Namespace)
	total := fileBytes + ns + len(m.Name)
	hosts := make(map[v1.Hostname]struct{}, len(m.Routes))
	backends := map[backendKey]struct{}{}
	geos := map[string]struct{}{}
	// The sign-in redirects' escaping maps, once per gateway, and the
	// internal locations of external authentications, once per server.
	authMaps, auths := 0, authBlocks{}
	// CORS's echo maps of a "*", once per gateway; each distinct CORS's
	// maps once per gateway and its named location once per server.
	corsEchoMaps, corsBlocksSeen := 0, map[string]bool{}
	for i := range m.Routes {
		r := m.Routes[i].Route
		if s := r.SourceRanges; s != nil {
			// Routes with the same ranges share a geo block.
			key := validation.SourceRangesString(s)
			if _, seen := geos[key]; !seen {
				geos[key] = struct{}{}
				total += sourceGeoBound(s)
			}
		}
		if _, ok := hosts[r.Host]; !ok {
			hosts[r.Host] = struct{}{}
			// A wildcard's server_name escapes each '.'.
			total += serverBytes + 2*len(r.Host)
		}
		total += routeSizeBound(r, ns+len(m.ClusterDomain))
		// Each location's "set" of the route's name
		// (validation.RouteMatch), and each rule's named location's.
		total += (1 + len(r.Rules)) * routeLocations * (lineBytes + len(r.PathType) + len(r.Host) + len(r.Path) + 1)
		routeBackends(r, backends)
		if corsUsesEcho(r.CORS) {
			corsEchoMaps = corsEchoMapsBytes()
		}
		total += corsShared(r, corsBlocksSeen)
		if a := r.ExternalAuth; a != nil {
			authMaps = authRedirectMapsBytes()
			total += auths.add(r, ns+len(m.ClusterDomain))
		}
	}
	total += authMaps + corsEchoMaps + retryUpstreamsBound(m.Routes)
	// The metrics log: its http-level lines, two lines
	// (metricsServerLines) in each host's server and the default server,
	// and one map entry per backend: `"name.namespace.svc.domain:port"
	// "name:port";`, its name twice and the Services' DNS suffix once.
	total += metricsLogBytes + 2*(len(hosts)+1)*lineBytes
	for b := range backends {
		total += 2*len(b.name) + ns + len(m.ClusterDomain) + metricsMapEntryBytes
	}
	if m.AccessLog {
		// Its http-level lines, and a line (accessLogLine) in each host's
		// server and the default server.
		total += accessLogBytes + (len(hosts)+1)*lineBytes
	}
	return total + len(backends)*upstreamBound
}

// routeSizeBound bounds what r writes in a gateway whose Services' DNS
// suffix (namespace.svc.domain) is suffix bytes long: its locations, each
// with the route's traffic directives, and its http-level blocks,
// written once.
func routeSizeBound(r *v1.Route, suffix int) int {
	// MatchPath decodes, which never lengthens, and makes "" "/".
	path := len(r.Path) + 1
	directives, blocks := trafficBound(r, suffix)
	// A location: its match (the path), the rewrite (the path) and
	// proxy_pass, "set $backend" (the backend's line), and the route's
	// directives.
	location := 3*lineBytes + 2*path + backendBound(r.BackendService.Name, suffix) + directives
	ruleLocations, ruleHTTP := rulesBound(r, location, suffix)
	location += ruleLocations
	// The http-level blocks: the comment naming the match, and the
	// settings' blocks.
	http := lineBytes + len(r.PathType) + len(r.Host) + path + blocks + ruleHTTP
	return routeLocations*location + http
}

// upstreamBound bounds one backend's upstream block: 167 bytes with the
// longest address and port (upstream.go writes nothing a tenant chose:
// a hashed name, an address, constants). A gateway writes at most one
// per Service and port its routes name (sizeBound counts them).
const upstreamBound = 192

// backendKey is a Service and port, which has one upstream.
type backendKey struct {
	name v1.ServiceName
	port v1.PortNumber
}

// routeBackends adds the Services and ports r names to keys: its
// backendService, its rules', its additional backends' and its
// authentication Service.
func routeBackends(r *v1.Route, keys map[backendKey]struct{}) {
	keys[backendKey{r.BackendService.Name, r.BackendService.Port}] = struct{}{}
	for _, rule := range r.Rules {
		keys[backendKey{rule.BackendService.Name, rule.BackendService.Port}] = struct{}{}
	}
	for _, b := range r.AdditionalBackends {
		keys[backendKey{b.Name, b.Port}] = struct{}{}
	}
	if a := r.ExternalAuth; a != nil {
		keys[backendKey{a.Service, a.Port}] = struct{}{}
	}
}

// backendBound bounds a line naming the backend Service name, written as
// name.namespace.svc.domain:port, where namespace.svc.domain is suffix
// bytes long.
func backendBound(name v1.ServiceName, suffix int) int { return len(name) + suffix + lineBytes }

// headersBound bounds directives of headers, each written on lines lines
// with its name once per line and its value values times.
func headersBound(headers []v1.HTTPHeader, lines, values int) int {
	total := 0
	for _, h := range headers {
		total += lines*(lineBytes+len(h.Name)) + values*len(h.Value)
	}
	return total
}

// namesBound bounds a directive per header name.
func namesBound(names []v1.HTTPHeaderName) int {
	total := 0
	for _, n := range names {
		total += lineBytes + len(n)
	}
	return total
}

// validateConfigSize is the error of a configuration of size bytes past
// MaxConfigBytes.
func validateConfigSize(size int) field.ErrorList {
	if size <= MaxConfigBytes {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "routes"), fmt.Sprintf("<%d bytes of nginx configuration>", size), fmt.Sprintf(
		"the gateway's nginx configuration would be %d bytes, over the bound of %d (MaxConfigBytes: 1 MiB, what a ConfigMap holds, less a 64 KiB margin); "+
			"use fewer routes or fewer and shorter header values, or split the routes between two gateways",
		size, MaxConfigBytes)).WithOrigin(validation.RuleConfigSize)}
}
