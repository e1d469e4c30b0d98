package render

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/routepath"
)

const (
	// HTTPPort is the unprivileged port the gateway pods serve routes on.
	HTTPPort = 8080
	// HealthPort serves HealthPath only, so probes never reach a route and
	// no route can shadow the probe.
	HealthPort = 8081
	// HealthPath answers 200 while nginx runs.
	HealthPath = "/healthz"

	// ConfigKey is the ConfigMap key of the configuration template. The
	// nginx images render /etc/nginx/templates/*.template with envsubst into
	// /etc/nginx/conf.d/, which their nginx.conf includes inside http {}.
	ConfigKey = "gateway.conf.template"
	// ResolverVariable is exported by the images' 15-local-resolvers.envsh
	// (when NGINX_ENTRYPOINT_LOCAL_RESOLVERS is set) from the pod's
	// /etc/resolv.conf: the cluster DNS, known only inside the pod.
	ResolverVariable = "NGINX_LOCAL_RESOLVERS"
)

// Options are the operator's settings the configuration is rendered
// with: how it reaches cluster DNS and which front proxies it believes.
type Options struct {
	// Resolvers are the DNS servers, each an IP address or IP:port. Empty
	// means ${NGINX_LOCAL_RESOLVERS}, filled in by the image's entrypoint.
	Resolvers []string
	// ClusterDomain is the Services' DNS suffix; empty means cluster.local.
	ClusterDomain string
	// TrustedProxies are the addresses (IPs or CIDRs) whose
	// X-Forwarded-For the gateway believes: see controller.ChildOptions.
	TrustedProxies []string
	// ServiceAddresses, when set, gives the backend Services' ClusterIPs:
	// connections to those are pooled (upstream.go). Nil: every backend
	// is resolved by name per request.
	ServiceAddresses ServiceAddresses
	// ServiceEndpoints, when set, gives the backend Services' ready
	// endpoints: a route with retries sends a failed request to another
	// of them, and a Service without any answers 503 (retries.go). Nil:
	// no backend is known to have none, and retries stay on the
	// ClusterIP or the name.
	ServiceEndpoints ServiceEndpoints

	// listenAddress, httpPort and healthPort say where the servers listen.
	// The zero values are the pods' (every interface, HTTPPort and
	// HealthPort); the data-plane test binds loopback on reserved ports (test/ports).
	listenAddress        string
	httpPort, healthPort int
}

// Check refuses options the renderer cannot write: a resolver that is not
// an IP address (or IP:port), a trusted proxy that is not an IP address or
// CIDR. The reconciler checks them once at start, so a bad flag stops the
// operator instead of every gateway's render.
func (o Options) Check() error {
	if _, err := resolverArgs(o.Resolvers); err != nil {
		return err
	}
	_, err := TrustedProxies(o.TrustedProxies)
	return err
}

// listen is a listen directive's address for port, or def when port is 0.
func (o Options) listen(port, def int) string {
	if port == 0 {
		port = def
	}
	if o.listenAddress == "" {
		return strconv.Itoa(port)
	}
	return net.JoinHostPort(o.listenAddress, strconv.Itoa(port))
}

const (
	// serverNamesHashBucketSize fits a 253-character host, the longest
	// admission admits: nginx needs 8 bytes plus the name plus 2, aligned
	// to 8, plus 8 per bucket, so 272 (rounded up to the cache line), and
	// its default of 64 refuses hosts of 47 characters or more. 1024 holds
	// three such names per bucket, so nginx builds the hash of 100 of them
	// without searching past server_names_hash_max_size (measured with
	// nginx 1.22: 320 or 512 with the default maximum warn "could not build
	// optimal server_names_hash" for 100 maximal hosts; 1024 never did).
	serverNamesHashBucketSize = 1024
	// serverNamesHashMaxSize bounds the hash table nginx searches for; 100
	// hosts (the route limit) fit well below it.
	serverNamesHashMaxSize = 1024

	// ambiguousRequestPath matches a request URI whose path part (before
	// '?') a backend could read as another path than the one nginx routed.
	// nginx matches locations on the decoded, normalised path but proxies
	// the raw URI, so the path part may hold none of:
	//   - an encoded '/', '\' or '.', a '\', a '#' (it ends the path nginx
	//     matches, yet is proxied with the rest), an empty segment, or a
	//     "." or ".." segment;
	//   - a path parameter, ';' or "%3B": servlet stacks (Tomcat, Jetty,
	//     Spring) strip ";..." from each segment, so /public/..;/internal
	//     is routed by /public/ but served as /internal;
	//   - a double encoding, "%25" and two hex digits: a backend that
	//     decodes twice reads "%252e" as '.';
	//   - an overlong or otherwise invalid UTF-8 sequence, percent-encoded
	//     (lead bytes C0, C1 and F5-FF, E0 with 80-9F, F0 with 80-8F, and
	//     the surrogates ED A0-BF): lenient decoders read "%C0%AE" as '.';
	//   - any raw byte above 7F: a request target is ASCII (RFC 9112), and
	//     a raw overlong sequence would reach the backend as it came.
	// For every other path the raw form decodes to exactly the path nginx
	// matched. The query is not checked: encoded slashes are normal there.
	// It is written in a quoted nginx string, where only \\, \", \', \t,
	// \r and \n are escapes, none of which it holds; nginx's PCRE runs
	// without UTF mode, so \xNN is a byte.
	ambiguousRequestPath = `^[^?]*(%2[FfEe]|%5[Cc]|\x5C|#|//|/\.\.?(/|\?|$)` +
		`|;|%3[Bb]` +
		`|%25[0-9A-Fa-f]{2}` +
		`|%[Cc][01]|%[Ee]0%[89]|%[Ff]0%8|%[Ee][Dd]%[AaBb]|%[Ff][5-9A-Fa-f]` +
		`|[\x80-\xFF])`
)

// location is one nginx location block: match is the location's argument
// (modifier and quoted path), backend the host:port it proxies to.
type location struct {
	match   string
	sortKey string
	backend string
	exact   bool // made from an Exact route: wins a collision with a Prefix one
	// traffic is the route's traffic settings, shared by its locations,
	// and rewrite this location's rewrite directives (rewriteLines).
	traffic *routeTraffic
	rewrite string
	// redirect is this location's redirect lines (redirectLines).
	redirect string
	// route is the route's name, quoted (routeName).
	route string
	// rules are the route's rules, tried before its backendService;
	// noFallback is set for a route without one, whose location answers
	// 404 to what no rule takes, and for one whose redirect answers every
	// request. dispatch and named are the rules' lines
	// at the location's top and their named locations (planMatches).
	rules           []ruleTarget
	noFallback      bool
	dispatch, named string
}

// Config renders gw's routes into the nginx configuration template
// mounted from the ConfigMap: one server per host, one location per route
// (two for a Prefix route, so /users matches /users and /users/... but not
// /usersX), backends resolved at request time so the configuration loads
// without cluster DNS. Same spec, same bytes: hosts and locations are
// sorted. Strings outside the API's whitelists are refused, never escaped.
func Config(gw *v1.APIGateway, opts Options) (string, error) { return Resolve(gw, opts).Config() }

// Config is the configuration of the resolved gateway m (see the package
// function Config).
func (m *Gateway) Config() (string, error) {
	config, err := m.render()
	if err != nil {
		return "", err
	}
	if errs := validateConfigSize(len(config)); len(errs) > 0 {
		return "", apierrors.NewInvalid(v1.GroupVersion.WithKind("APIGateway").GroupKind(), m.Name, errs)
	}
	return config, nil
}

// render is Config without the size bound.
func (m *Gateway) render() (string, error) {
	opts := m.Options
	servers, httpBlocks, pools, err := m.buildServers()
	if err != nil {
		return "", err
	}
	matchBlocks, serverLines := planMatches(servers)
	httpBlocks = matchBlocks + httpBlocks
	resolver, err := resolverArgs(opts.Resolvers)
	if err != nil {
		return "", err
	}
	trusted, err := TrustedProxies(opts.TrustedProxies)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by apigateway-operator for APIGateway %s/%s. Do not edit:\n", m.Namespace, m.Name)
	b.WriteString("# the operator puts every change back.\n\n")
	fmt.Fprintf(&b, "resolver %s valid=30s;\nresolver_timeout 5s;\n\n", resolver)
	// http-level directives, allowed here because the image's nginx.conf
	// includes this file inside http {}.
	fmt.Fprintf(&b, "# Room for 253-character hosts (nginx's default fits 46) and 100 of them;\n"+
		"# for the metrics map's backend names.\n"+
		"server_names_hash_bucket_size %d;\nserver_names_hash_max_size %d;\nmap_hash_bucket_size %d;\n\n",
		serverNamesHashBucketSize, serverNamesHashMaxSize, mapHashBucketSize)
	writeAccessLog(&b, m.AccessLog)
	writeMetricsLog(&b, usedBackends(pools.labels, servers, httpBlocks))
	writeRealIP(&b, trusted)
	writeForwarded(&b, trusted)
	writeUpgrade(&b)
	pools.write(&b)
	if httpBlocks != "" {
		b.WriteString("# Per-route traffic settings: weighted backends, rate limits, added request headers.\n")
		b.WriteString(httpBlocks)
		b.WriteString("\n")
	}
	writeHealthServer(&b, opts.listen(opts.healthPort, HealthPort))
	writeDefaultServer(&b, opts.listen(opts.httpPort, HTTPPort), m.AccessLog)
	hosts := make([]string, 0, len(servers))
	for h := range servers {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		writeServer(&b, opts.listen(opts.httpPort, HTTPPort), h, servers[h], m.AccessLog, serverLines[h])
	}
	return b.String(), nil
}

// buildServers validates every route and groups its locations by host. It
// also returns the http-level blocks of the routes' traffic settings, of
// the routes that serve some location, in the routes' sorted order.
//
// The renderer does not trust admission, which a write made while the
// webhook was down never met: every string it writes into the file passes
// the same rules again, by calling the same functions (package validation
// for the name and the routes, apimachinery's namespace rule), so a string
// that slipped past admission still cannot inject configuration.
func (m *Gateway) buildServers() (map[string]map[string]location, string, *upstreams, error) {
	opts := m.Options
	routesPath := field.NewPath("spec", "routes")
	errs := validation.ValidateName(m.Name, m.GenerateName, field.NewPath("metadata", "name"))
	for _, msg := range apivalidation.ValidateNamespaceName(m.Namespace, false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), m.Namespace, msg))
	}
	domain := m.ClusterDomain
	if !validation.IsDNSName(domain) {
		errs = append(errs, field.Invalid(field.NewPath("clusterDomain"), domain, "must be a DNS name such as cluster.local"))
	}
	if opts.listenAddress != "" && net.ParseIP(opts.listenAddress) == nil {
		errs = append(errs, field.Invalid(field.NewPath("listenAddress"), opts.listenAddress, "must be an IP address"))
	}
	routes := m.Sorted()
	servers := map[string]map[string]location{}
	pools := &upstreams{lookup: opts.ServiceAddresses, endpoints: opts.ServiceEndpoints, namespace: m.Namespace,
		servers: map[string][]string{}, labels: map[string]string{}}
	byName := func(name v1.ServiceName, port int32) string {
		return fmt.Sprintf("%s.%s.svc.%s:%d", name, m.Namespace, domain, port)
	}
	pooledOf := func(name v1.ServiceName, port int32) string { return pools.backend(name, port, byName(name, port)) }
	retriedOf := func(name v1.ServiceName, port int32) string { return pools.retried(name, port, byName(name, port)) }
	traffic := make([]*routeTraffic, 0, len(routes))
	for _, r := range routes {
		if routeErrs := validation.ValidateRoute(r.Route, routesPath, r.Index); len(routeErrs) > 0 {
			errs = append(errs, routeErrs...)
			continue
		}
		backendOf := pooledOf
		if r.Retries != nil {
			backendOf = retriedOf
		}
		t, trafficErrs := buildTraffic(r.Route, backendOf, routesPath.Index(r.Index))
		if len(trafficErrs) > 0 {
			errs = append(errs, trafficErrs...)
			continue
		}
		if ruleErrs := checkRules(r.Route, routesPath.Index(r.Index).Child("rules")); len(ruleErrs) > 0 {
			errs = append(errs, ruleErrs...)
			continue
		}
		traffic = append(traffic, &t)
		locs, err := locationsFor(*r.Route, backendOf(r.BackendService.Name, int32(r.BackendService.Port)), &t)
		if err != nil {
			errs = append(errs, field.Invalid(routesPath.Index(r.Index).Child("path"), r.Path, err.Error()))
			continue
		}
		withRules(locs, r.Route, backendOf)
		// The route's name, for the metrics log and the access log.
		name, err := routeName(r.Route)
		if err != nil {
			errs = append(errs, field.Invalid(routesPath.Index(r.Index).Child("path"), r.Path, err.Error()))
			continue
		}
		for i := range locs {
			locs[i].route = name
		}
		if servers[string(r.Host)] == nil {
			servers[string(r.Host)] = map[string]location{}
		}
		for _, l := range locs {
			servers[string(r.Host)][l.match] = place(servers[string(r.Host)][l.match], l)
		}
	}
	if len(errs) > 0 {
		return nil, "", nil, apierrors.NewInvalid(v1.GroupVersion.WithKind("APIGateway").GroupKind(), m.Name, errs)
	}
	return servers, usedHTTPBlocks(servers, traffic), pools, nil
}

// place puts l, a location of route r, into slot, the location of its
// match so far (the zero location when none): an Exact route beats the
// exact location a Prefix route adds; otherwise the first route in sorted
// order keeps the location.
func place(slot, l location) location {
	if slot.traffic == nil || (l.exact && !slot.exact) {
		return l
	}
	return slot
}

// withRules gives r's locations its rules, each rule's backend named
// as a route's is (backendOf: pooled when its Service has an address),
// and marks them for a 404 when r has no backendService.
func withRules(locs []location, r *v1.Route, backendOf func(v1.ServiceName, int32) string) {
	if len(r.Rules) == 0 {
		return
	}
	targets := make([]ruleTarget, len(r.Rules))
	for i, rule := range r.Rules {
		targets[i] = ruleTarget{matches: rule.Matches, backend: backendOf(rule.BackendService.Name, int32(rule.BackendService.Port))}
	}
	for i := range locs {
		locs[i].rules = targets
		locs[i].noFallback = r.BackendService == (v1.BackendService{})
	}
}

// usedHTTPBlocks joins the http-level blocks of the routes in traffic that
// serve a location in servers: a route that lost every location to
// another (the same match) needs none, and its names would repeat the
// winner's. Routes with the same source ranges share one geo block, and
// routes with the same CORS its maps; the
// sign-in redirects' escaping maps and CORS's echo maps are written
// once.
func usedHTTPBlocks(servers map[string]map[string]location, traffic []*routeTraffic) string {
	used := map[*routeTraffic]bool{}
	for _, locs := range servers {
		for _, l := range locs {
			used[l.traffic] = true
		}
	}
	var b strings.Builder
	geos := map[string]bool{}
	signIn, corsEcho := false, false
	for _, t := range traffic {
		if used[t] {
			b.WriteString(t.http)
			for _, shared := range []string{t.sourceGeo, t.corsMaps} {
				if shared != "" && !geos[shared] {
					geos[shared] = true
					b.WriteString(shared)
				}
			}
			signIn = signIn || t.auth != nil && t.auth.signIn
			corsEcho = corsEcho || t.corsEcho
		}
	}
	if signIn {
		writeAuthRedirectMaps(&b)
	}
	if corsEcho {
		writeCORSEchoMaps(&b)
	}
	return b.String()
}

// locationsFor turns a validated route into nginx locations. nginx matches
// locations against the percent-decoded, normalised request path, so the
// route's path is decoded the same way and refused when the decoded form
// could never match or holds characters unsafe in a quoted nginx string.
func locationsFor(r v1.Route, backend string, t *routeTraffic) ([]location, error) {
	exact := r.PathType == v1.PathTypeExact
	path, err := routepath.MatchPath(string(r.Path), !exact)
	if err != nil {
		return nil, err
	}
	var locs []location
	switch {
	case exact:
		locs = []location{{match: "= " + nginxQuoted(path), sortKey: path + "\x00=", backend: backend, exact: true, traffic: t}}
	case path == "/":
		locs = []location{{match: nginxQuoted("/"), sortKey: "/", backend: backend, traffic: t}}
	default:
		// Prefix matching is element-wise: /users (or /users/) matches
		// /users and everything below /users/, but not /usersX.
		locs = []location{
			{match: "= " + nginxQuoted(path), sortKey: path + "\x00=", backend: backend, traffic: t},
			{match: nginxQuoted(path + "/"), sortKey: path + "/", backend: backend, traffic: t},
		}
	}
	if t.rewritePrefix != "" {
		for i := range locs {
			locs[i].rewrite = rewriteLines(locs[i], path, t.rewritePrefix)
		}
	}
	if t.redirect != nil {
		for i := range locs {
			locs[i].redirect = redirectLines(locs[i], t.redirect)
			// A redirect that answers every request: no backend.
			locs[i].noFallback = t.redirect.scheme == ""
		}
	}
	return locs, nil
}

// nginxQuoted makes a whitelisted path one nginx token. The whitelist has no
// quote, backslash or '$', so quoting needs no escapes.
func nginxQuoted(s string) string { return `"` + s + `"` }

// resolverArgs are the resolver directive's arguments: IP addresses, each
// with an optional port (a name would itself need DNS at load time), or the
// variable the image's entrypoint fills in.
func resolverArgs(resolvers []string) (string, error) {
	if len(resolvers) == 0 {
		return "${" + ResolverVariable + "}", nil
	}
	out := make([]string, len(resolvers))
	for i, s := range resolvers {
		arg, err := resolverArg(s)
		if err != nil {
			return "", err
		}
		out[i] = arg
	}
	return strings.Join(out, " "), nil
}

// resolverArg is one resolver as nginx writes it: 10.0.0.1, [fd00::1],
// 10.0.0.1:53 or [fd00::1]:53.
func resolverArg(s string) (string, error) {
	if ip := net.ParseIP(s); ip != nil {
		return resolverIP(ip), nil
	}
	host, port, err := net.SplitHostPort(s)
	ip := net.ParseIP(host)
	n, perr := strconv.Atoi(port)
	if err != nil || ip == nil || perr != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("resolver %q is not an IP address or IP:port", s)
	}
	return resolverIP(ip) + ":" + strconv.Itoa(n), nil
}

func resolverIP(ip net.IP) string {
	if ip.To4() == nil {
		return "[" + ip.String() + "]"
	}
	return ip.String()
}

// TrustedProxies checks and canonicalises the front proxies whose
// X-Forwarded-For the gateway believes: each an IP address or a CIDR,
// written as nginx's set_real_ip_from reads it.
func TrustedProxies(proxies []string) ([]string, error) {
	out := make([]string, len(proxies))
	for i, s := range proxies {
		if ip := net.ParseIP(s); ip != nil {
			out[i] = ip.String()
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is not an IP address or CIDR", s)
		}
		out[i] = n.String()
	}
	return out, nil
}

// writeRealIP makes nginx take the client's address from X-Forwarded-For
// when, and only when, the connection comes from a trusted proxy (the
// realip module, walking the header from the right past trusted hops).
// Without trusted proxies $remote_addr stays the connection's peer: a
// client's own X-Forwarded-For is never believed.
func writeRealIP(b *strings.Builder, trusted []string) {
	if len(trusted) == 0 {
		return
	}
	b.WriteString("# The client address from X-Forwarded-For, set by these front proxies only.\n")
	for _, p := range trusted {
		fmt.Fprintf(b, "set_real_ip_from %s;\n", p)
	}
	b.WriteString("real_ip_header X-Forwarded-For;\nreal_ip_recursive on;\n\n")
}

const (
	// trustedPeerVariable is 1 when the connection comes from a trusted
	// proxy, 0 otherwise; forwardedProtoVariable and forwardedPortVariable
	// are the X-Forwarded-Proto and X-Forwarded-Port the gateway sends.
	trustedPeerVariable    = "gateway_trusted_peer"
	forwardedProtoVariable = "gateway_forwarded_proto"
	forwardedPortVariable  = "gateway_forwarded_port"
)

// writeForwarded defines the scheme and port the gateway reports to
// backends: a trusted proxy's X-Forwarded-Proto (http or https, any case)
// and X-Forwarded-Port (digits), else the gateway's own $scheme and no
// port (the pod's port is not the one the client used: the Service maps
// it). The peer is judged by $realip_remote_addr, the connection's
// address before realip replaced $remote_addr, against the same list as
// set_real_ip_from: one trust decision for all the forwarded headers.
func writeForwarded(b *strings.Builder, trusted []string) {
	b.WriteString("# The scheme and port the client used, as a trusted front proxy reported\n" +
		"# them; from any other peer, the gateway's own scheme and no port.\n")
	fmt.Fprintf(b, "geo $realip_remote_addr $%s {\n    default 0;\n", trustedPeerVariable)
	for _, p := range trusted {
		fmt.Fprintf(b, "    %s 1;\n", p)
	}
	b.WriteString("}\n")
	fmt.Fprintf(b, `map "$%[1]s:$http_x_forwarded_proto" $%[2]s {
    default $scheme;
    "~*^1:https$" https;
    "~*^1:http$" http;
}
map "$%[1]s:$http_x_forwarded_port" $%[3]s {
    default "";
    "~^1:([0-9]{1,5})$" $1;
}

`, trustedPeerVariable, forwardedProtoVariable, forwardedPortVariable)
}

const (
	// upgradeVariable is the Upgrade header the gateway passes to the
	// backend, connectionVariable the Connection header that goes with it.
	upgradeVariable    = "gateway_upgrade"
	connectionVariable = "gateway_connection"
)

// writeUpgrade defines the Upgrade and Connection headers every proxied
// request carries (gatewayHeaders). nginx passes neither hop-by-hop header
// unless told, so without them a WebSocket handshake reaches the backend
// as a plain GET and the client never gets its 101. The client's Upgrade
// is passed on, and Connection says "upgrade" exactly when Upgrade is
// sent; nginx then relays the bytes both ways once the backend answers
// 101. A request without Upgrade is sent without Connection, which in
// HTTP/1.1 keeps the connection open: nginx then returns it to the
// backend's pool (upstream.go), whatever the client's HTTP version and
// Connection. (nginx's default is "Connection: close".)
//
// h2c is never passed on, alone or in a list: after a 101 to h2c the
// client speaks HTTP/2 to the backend through the tunnel, and each of
// those requests names any path on it, past the gateway's path checks,
// routes and limits ("h2c smuggling"). Such a request reaches the backend
// as a plain HTTP/1.1 request, as h2c's fallback intends.
func writeUpgrade(b *strings.Builder) {
	fmt.Fprintf(b, `# Upgrades (WebSocket) pass to the backend; h2c never does, since its
# requests would bypass the routes. Without Upgrade, no Connection header:
# a pooled connection to the backend stays open for the next request.
map $http_upgrade $%[1]s {
    default $http_upgrade;
    "~*h2c" "";
}
map $%[1]s $%[2]s {
    default upgrade;
    "" "";
}

`, upgradeVariable, connectionVariable)
}

func writeHealthServer(b *strings.Builder, listen string) {
	fmt.Fprintf(b, `# Probes only; no route is served here.
server {
    listen %s;
    access_log off;

    location = %s {
        default_type text/plain;
        return 200 "ok\n";
    }

    location / {
        return 404;
    }
}

`, listen, HealthPath)
}

func writeDefaultServer(b *strings.Builder, listen string, accessLog bool) {
	fmt.Fprintf(b, `# Requests for a host no route names.
server {
    listen %s default_server;
    server_name _;
%s%s    return 404;
}
`, listen, metricsServerLines, accessLogLine(accessLog))
}

// writeServer writes one host's server block, locations sorted by path:
// request lines whose raw path could reach a backend as a path other than
// the one matched are refused first (ambiguousRequestPath), and a path no
// route covers answers 404 instead of falling through to nginx's root.
func writeServer(b *strings.Builder, listen, host string, locs map[string]location, accessLog bool, matchLines string) {
	sorted := make([]location, 0, len(locs))
	for _, l := range locs {
		sorted = append(sorted, l)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].sortKey < sorted[j].sortKey })
	fmt.Fprintf(b, `
server {
    listen %s;
    server_name %s;
%s%s
    # 400 for a raw path a backend could read as another path than the
    # one routed here: encoded / \ or ., \, #, //, . or .. segments,
    # path parameters (; %%3B), double encodings (%%25XX), invalid UTF-8.
    if ($request_uri ~ "%s") {
        return 400;
    }

    proxy_http_version 1.1;
    proxy_max_temp_file_size %s;
`, listen, serverName(host), metricsServerLines, accessLogLine(accessLog), ambiguousRequestPath, maxTempFile)
	for _, h := range sentHeaders {
		for line := range strings.Lines(h.comment) {
			b.WriteString("    " + line)
		}
		fmt.Fprintf(b, "    proxy_set_header %s %s;\n", h.name, h.value)
	}
	b.WriteString(matchLines)
	for _, l := range sorted {
		writeLocation(b, l)
	}
	writeSharedLocations(b, sorted)
	if _, ok := locs[nginxQuoted("/")]; !ok {
		b.WriteString(`
    location / {
        return 404;
    }
`)
	}
	b.WriteString("}\n")
}

// writeLocation writes one location: the route's traffic directives, its
// backend, the rewrite, and proxy_pass. A variable in proxy_pass makes
// nginx resolve the name per request through the resolver instead of once
// at load time. The rewrite comes after "set": "rewrite ... break" ends
// the location's rewrite-module directives, set among them.
func writeLocation(b *strings.Builder, l location) {
	writeLocationBody(b, l.match, l)
	b.WriteString(l.named)
}

// writeLocationBody writes l as the location named by match (its own, or
// a rule's named location's "@..."): the route's name for the metrics and
// access logs, the 403 of its source ranges, its CORS, its external
// authentication,
// the dispatch to the rules,
// then the route's backendService, or 404 when it has none.
func writeLocationBody(b *strings.Builder, match string, l location) {
	fmt.Fprintf(b, "\n    location %s {\n", match)
	// First: "rewrite ... break" ends the rewrite-module directives.
	fmt.Fprintf(b, "%sset $%s %s;\n", indent, routeVariable, l.route)
	b.WriteString(l.traffic.sourceCheck)
	// A preflight is answered before authentication and redirects.
	b.WriteString(l.traffic.cors)
	if a := l.traffic.auth; a != nil {
		b.WriteString(a.lines)
	}
	b.WriteString(l.redirect)
	b.WriteString(l.dispatch)
	switch {
	case l.noFallback && l.traffic.redirect != nil && l.traffic.redirect.scheme == "":
		// The redirect answered; its answer gets the response headers.
		b.WriteString(l.traffic.directives)
		b.WriteString("    }\n")
		return
	case l.noFallback:
		fmt.Fprintf(b, "%sreturn 404;\n    }\n", indent)
		return
	}
	b.WriteString(l.traffic.directives)
	pass := "$backend"
	switch {
	case l.traffic.split != "":
		pass = "$" + l.traffic.split
		if l.traffic.splitUnready {
			writeNoEndpoints(b, pass)
		}
	case strings.HasPrefix(l.backend, noEndpointsPrefix):
		fmt.Fprintf(b, "%sreturn 503;\n    }\n", indent)
		return
	default:
		fmt.Fprintf(b, "%sset $backend %s;\n", indent, nginxQuoted(l.backend))
	}
	b.WriteString(l.rewrite)
	fmt.Fprintf(b, "%sproxy_pass http://%s;\n    }\n", indent, pass)
}

// serverName maps a route host to nginx's server_name. A "*.example.com"
// route matches exactly one more label (as an Ingress host does), while
// nginx's own "*.example.com" would also match a.b.example.com, so a
// wildcard becomes an anchored regular expression.
func serverName(host string) string {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return `"~^[^.]+\.` + strings.ReplaceAll(rest, ".", `\.`) + `$"`
	}
	return host
}
