package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Retries to another endpoint (issue 37 item 2), and the 503 of a
// backend without endpoints (item 3).
//
// nginx sends a failed request to the next server of the upstream{}
// block it was proxied to (proxy_next_upstream), never to the same one
// again. A ClusterIP is one server, so a route with retries is proxied
// to an upstream of its backend Services' ready endpoints
// (Options.ServiceEndpoints), its own block: the routes without retries
// keep the ClusterIP, and nginx's default proxy_next_upstream (error
// timeout) cannot start retrying their requests. The endpoints are IP
// addresses, as ClusterIPs are, so nginx needs no DNS to load them;
// they change with the backend's pods, and the operator renders and
// pushes the configuration again (nginx reloads in place; Debian's nginx
// 1.22 has no "server ... resolve", which would re-resolve a headless
// Service's name itself).
//
// A Service the lookup knows to have no ready endpoint answers 503 at
// once, whichever route names it, instead of a connect that kube-proxy
// refuses (502) or that times out: its backend value is a name no
// upstream has (noEndpointsPrefix), which the location answers before
// proxy_pass.

const (
	// maxRetryEndpoints bounds the servers of a retried backend's
	// upstream, so the configuration's size has a bound admission can
	// state (sizeBound); a Service with more ready endpoints gets the
	// first ones in address order.
	maxRetryEndpoints = 16
	// maxRetryServers bounds the endpoints a gateway writes in all: past
	// it, a retried backend keeps its ClusterIP (its requests are not
	// sent to another endpoint). 64 lines of at most retryServerBound
	// bytes: 4 KiB, so retries on every route of a gateway of 300
	// Services still fit the bound admission checks without rendering.
	maxRetryServers = 64
	// noEndpointsPrefix starts the backend value of a Service without a
	// ready endpoint: no upstream's name (upstream_, retry_) and no
	// Service's host name (which has a dot) starts with it.
	noEndpointsPrefix = "noendpoints_"
	// retryServerBound bounds one more server line of a retried
	// backend's upstream: "    server [v6]:65535;\n" is 59 bytes.
	retryServerBound = 64
)

// ServiceEndpoints gives the ready endpoints of Service name in
// namespace behind its port port (the endpoints' own port, the
// Service's targetPort resolved), and false when the gateway does not
// know them (the Service does not exist or is not watched): then the
// backend is pooled or resolved as without them. True with none: the
// Service has no ready endpoint.
type ServiceEndpoints func(namespace, name string, port int32) ([]netip.AddrPort, bool)

// retryDirectives are nginx's proxy_next_upstream conditions, one per
// condition the API lists: the only way a condition reaches the
// configuration, so a value that bypassed validation writes nothing.
var retryDirectives = map[v1.RetryCondition]string{
	v1.RetryOnConnectError: "error",
	v1.RetryOnTimeout:      "timeout",
	v1.RetryOnHTTP502:      "http_502",
	v1.RetryOnHTTP503:      "http_503",
	v1.RetryOnHTTP504:      "http_504",
}

// writeRetries writes r's retries: the conditions, non_idempotent only
// when asked, and the tries, the first one and the attempts.
func writeRetries(w *trafficWriter, r *v1.Route, fld *field.Path) field.ErrorList {
	rt := r.Retries
	if rt == nil {
		return nil
	}
	var errs field.ErrorList
	if bounds := rt.Attempts; bounds < 1 || bounds > 5 {
		errs = append(errs, field.Invalid(fld.Child("attempts"), rt.Attempts, "the renderer writes from 1 to 5 attempts"))
	}
	conditions := make([]string, 0, len(retryDirectives)+1)
	for i, c := range validation.RetryConditions(rt) {
		d, ok := retryDirectives[c]
		if !ok {
			errs = append(errs, field.Invalid(fld.Child("on").Index(i), c, "the renderer writes only connectError, timeout, http502, http503 and http504"))
			continue
		}
		if !slices.Contains(conditions, d) {
			conditions = append(conditions, d)
		}
	}
	if len(errs) > 0 {
		return errs.WithOrigin(validation.RuleRetries)
	}
	if rt.NonIdempotent {
		conditions = append(conditions, "non_idempotent")
	}
	fmt.Fprintf(&w.loc, "%sproxy_next_upstream %s;\n%sproxy_next_upstream_tries %d;\n",
		indent, strings.Join(conditions, " "), indent, rt.Attempts+1)
	return nil
}

// retriesBound bounds writeRetries' lines: every condition and
// non_idempotent on one, the tries on the other.
func retriesBound(r *v1.Route, _ int) (location, http int) {
	if r.Retries == nil {
		return 0, 0
	}
	return len(retriesLongest), 0
}

// retriesLongest are the longest lines writeRetries writes.
const retriesLongest = indent + "proxy_next_upstream error timeout http_502 http_503 http_504 non_idempotent;\n" +
	indent + "proxy_next_upstream_tries 6;\n"

// noEndpointsSplitBound bounds writeNoEndpoints in a location whose
// split_clients variable is $backend_ and a route id.
var noEndpointsSplitBound = func() int {
	var b strings.Builder
	writeNoEndpoints(&b, "$backend_0123456789abcdef")
	return b.Len()
}()

// retried is backend for a route with retries: the upstream of the
// Service's ready endpoints when the lookup knows them, else what
// backend gives (no endpoint: the 503; a ClusterIP; the name).
func (u *upstreams) retried(name v1.ServiceName, port int32, byName string) string {
	endpoints, ok := u.ready(name, port)
	if !ok || len(endpoints) == 0 {
		return u.backend(name, port, byName)
	}
	servers := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		if s := e.String(); e.IsValid() && e.Addr().Zone() == "" && e.Port() != 0 && !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
	}
	id := "retry_" + upstreamHash(name, port)
	if _, written := u.servers[id]; !written {
		servers = servers[:min(len(servers), maxRetryServers-u.retryServers)]
		if len(servers) < 2 {
			// No other endpoint to send a request to.
			return u.backend(name, port, byName)
		}
		u.retryServers += len(servers)
	}
	u.servers[id] = servers
	u.labels[id] = backendLabel(name, port)
	return id
}

// unready is the backend value of a Service the lookup knows to have no
// ready endpoint, "" otherwise.
func (u *upstreams) unready(name v1.ServiceName, port int32) string {
	if endpoints, ok := u.ready(name, port); !ok || len(endpoints) > 0 {
		return ""
	}
	return noEndpointsPrefix + upstreamHash(name, port)
}

// ready is the Service's ready endpoints, sorted by address and at most
// maxRetryEndpoints, and whether the lookup knows them.
func (u *upstreams) ready(name v1.ServiceName, port int32) ([]netip.AddrPort, bool) {
	if u.endpoints == nil || port < 1 || port > 65535 {
		return nil, false
	}
	endpoints, ok := u.endpoints(u.namespace, string(name), port)
	if !ok {
		return nil, false
	}
	endpoints = slices.Clone(endpoints)
	for i, e := range endpoints {
		endpoints[i] = netip.AddrPortFrom(e.Addr().Unmap(), e.Port())
	}
	slices.SortFunc(endpoints, func(a, b netip.AddrPort) int { return a.Compare(b) })
	endpoints = slices.Compact(endpoints)
	return endpoints[:min(len(endpoints), maxRetryEndpoints)], true
}

// upstreamHash is 64 bits of a SHA-256 of Service name and port, in hex:
// stable across renders and distinct per Service and port.
func upstreamHash(name v1.ServiceName, port int32) string {
	sum := sha256.Sum256([]byte(string(name) + ":" + strconv.Itoa(int(port))))
	return hex.EncodeToString(sum[:8])
}

// writeNoEndpoints answers 503 in a location whose backend variable
// (pass, "$backend" or a split's) names a Service without a ready
// endpoint, before proxy_pass would try it.
func writeNoEndpoints(b *strings.Builder, pass string) {
	fmt.Fprintf(b, "%sif (%s ~ ^%s) {\n%s    return 503;\n%s}\n", indent, pass, noEndpointsPrefix, indent, indent)
}

// retryUpstreamsBound bounds the upstreams of the retried backends of
// routes: the endpoint lines, at most maxRetryServers in a gateway, and
// the upstreams themselves. sizeBound counts one upstream (upstreamBound)
// per Service and port; one that routes with and without retries both
// name may have two, its ClusterIP's and its endpoints'.
func retryUpstreamsBound(routes []Route) int {
	retried, pooled := map[backendKey]struct{}{}, map[backendKey]struct{}{}
	for _, ref := range routes {
		if ref.Retries != nil {
			routeBackends(ref.Route, retried)
		} else {
			routeBackends(ref.Route, pooled)
		}
	}
	if len(retried) == 0 {
		return 0
	}
	both := 0
	for k := range retried {
		if _, ok := pooled[k]; ok {
			both++
		}
	}
	return both*upstreamBound + maxRetryServers*retryServerBound
}
