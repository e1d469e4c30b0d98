package render

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
)

// The metrics log (issue 36): per-route request counts and latencies
// from stock nginx, without a third-party module. Every gateway server
// sends one compact line per request, over syslog, to the reloader, the
// container's first process, which counts it (package reloader) and
// serves the counts to Prometheus.
//
// The rendered configuration names no socket: each gateway server holds
// MetricsLogMarker, a comment, which the reloader replaces with the
// access_log directive (ExpandMetricsLog) for the socket it listens on.
// A reloader from before the metrics (a pod template is kept across
// operator upgrades) leaves the comment alone: nginx then sends nothing,
// instead of failing to connect at every request. A reloader run without
// metrics does the same, so a pod without them pays nothing per request.
//
// The line holds no request data: the route's name (the "set" of
// routeVariable, as the access log has it), the backend Service and
// port (a map from the upstream nginx proxied to, written from the
// gateway's own backends), the status, and two times. Each is written by
// nginx from the configuration or as digits, so escape=none is safe and
// the reloader can refuse any other value.
const (
	metricsLogFormat = "gateway_metrics"
	// backendVariable names the backend a request was proxied to, as a
	// metrics label: "name:port" of the Service, "" when none was.
	backendVariable = "gateway_backend"
	// MetricsLogMarker is the line, in each gateway server, that the
	// reloader replaces with the metrics log's directive.
	MetricsLogMarker = "    # apigateway-reloader: metrics log\n"
	// MetricsLogTag is the syslog tag of the lines: nginx writes
	// "<PRI>Mmm dd hh:mm:ss gw: " before each.
	MetricsLogTag = "gw"
	// MetricsLogFields is how many tab-separated fields a line holds:
	// route, backend, status, request time, upstream response time.
	MetricsLogFields = 5
)

// metricsLogFields are the variables of a line, in order.
var metricsLogFields = [MetricsLogFields]string{routeVariable, backendVariable, "status", "request_time", "upstream_response_time"}

// writeMetricsLog writes the http-level lines of the metrics log: its
// format and the map naming each backend. backends maps what a location
// proxies to (backendOf's value) to its label.
func writeMetricsLog(b *strings.Builder, backends map[string]string) {
	b.WriteString("# Per-route metrics: one line per request to the reloader (see the\n" +
		"# servers' metrics log line); a route's name, its backend, status, times.\n")
	vars := make([]string, len(metricsLogFields))
	for i, f := range metricsLogFields {
		vars[i] = "$" + f
	}
	fmt.Fprintf(b, "log_format %s escape=none \"%s\";\n", metricsLogFormat, strings.Join(vars, `\t`))
	keys := make([]string, 0, len(backends))
	for k := range backends {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(b, "map $proxy_host $%s {\n    default \"\";\n", backendVariable)
	for _, k := range keys {
		fmt.Fprintf(b, "    %s %s;\n", nginxQuoted(proxyHost(k)), nginxQuoted(backends[k]))
	}
	b.WriteString("}\n\n")
}

// mapHashBucketSize fits the metrics map's longest key, a backend host
// name of 63+1+63+5+253+6 bytes (Service, namespace, ".svc.", cluster
// domain, port), with nginx's 10 bytes of overhead, aligned; nginx's
// default (64) holds 53. It is written before any map: nginx fixes the
// size at the first.
const mapHashBucketSize = 512

// usedBackends are the entries of labels whose backend a location of
// servers proxies to, alone, in a split of httpBlocks, or as one of its
// rules': a backend named by a route that lost its locations, or of
// weight 0, is left out.
func usedBackends(labels map[string]string, servers map[string]map[string]location, httpBlocks string) map[string]string {
	used := map[string]string{}
	for _, locs := range servers {
		for _, l := range locs {
			if l.traffic.split == "" && !l.noFallback {
				used[l.backend] = labels[l.backend]
			}
			for _, r := range l.rules {
				used[r.backend] = labels[r.backend]
			}
		}
	}
	for value, label := range labels {
		if strings.Contains(httpBlocks, " "+nginxQuoted(value)+";\n") {
			used[value] = label
		}
	}
	return used
}

// proxyHost is what nginx's $proxy_host reads for proxy_pass
// http://value: the value as it stands, but without ":80", the port
// nginx leaves out of it.
func proxyHost(value string) string {
	return strings.TrimSuffix(value, ":80")
}

// backendLabel is the metrics label of Service name on port.
func backendLabel(name v1.ServiceName, port int32) string {
	return string(name) + ":" + strconv.Itoa(int(port))
}

// metricsLogBytes bounds the metrics log's http-level lines besides the
// map's entries (counted per backend in sizeBound), and its lines in each
// server: the marker and uninitialized_variable_warn.
const metricsLogBytes = 512

// metricsServerLines is what every gateway server holds for the metrics
// log: the marker, and no warning of the route's name left unset where no
// route answers (the default server, the 404 location), which the images'
// error log would otherwise show at every such request.
const metricsServerLines = MetricsLogMarker + "    uninitialized_variable_warn off;\n"

// ExpandMetricsLog is config with each MetricsLogMarker replaced by the
// directive sending the metrics log to server, a syslog server as nginx
// names it: "unix:/path" or "127.0.0.1:port". server is refused unless it
// is one nginx argument that cannot end the syslog parameters.
func ExpandMetricsLog(config []byte, server string) ([]byte, error) {
	if !syslogServer.MatchString(server) {
		return nil, fmt.Errorf("metrics log server %q is not unix:/path or host:port of letters, digits and ./_-", server)
	}
	directive := fmt.Sprintf("    access_log syslog:server=%s,nohostname,tag=%s %s;\n", server, MetricsLogTag, metricsLogFormat)
	return bytes.ReplaceAll(config, []byte(MetricsLogMarker), []byte(directive)), nil
}

var syslogServer = regexp.MustCompile(`^(unix:/[A-Za-z0-9./_-]+|[A-Za-z0-9.-]+:[0-9]{1,5}|\[[0-9A-Fa-f:.]+\]:[0-9]{1,5})$`)

var (
	routeSet = regexp.MustCompile(`(?m)^\s*set \$` + routeVariable + ` "([^"\n]*)";$`)
	mapEntry = regexp.MustCompile(`^\s*"[^"\n]*" "([^"\n]*)";$`)
)

// MetricsLabels are the route names and backend labels a configuration
// rendered here can write into its metrics log: what a reloader accepts
// from nginx while the configuration serves.
func MetricsLabels(config []byte) (routes, backends []string) {
	seen := map[string]bool{}
	for _, m := range routeSet.FindAllSubmatch(config, -1) {
		if r := string(m[1]); !seen[r] {
			seen[r] = true
			routes = append(routes, r)
		}
	}
	start := []byte(fmt.Sprintf("map $proxy_host $%s {\n", backendVariable))
	i := bytes.Index(config, start)
	if i < 0 {
		return routes, nil
	}
	body := config[i+len(start):]
	if end := bytes.Index(body, []byte("\n}\n")); end >= 0 {
		body = body[:end]
	}
	for line := range bytes.Lines(body) {
		if m := mapEntry.FindSubmatch(bytes.TrimRight(line, "\n")); m != nil && !seen["\x00"+string(m[1])] {
			seen["\x00"+string(m[1])] = true
			backends = append(backends, string(m[1]))
		}
	}
	return routes, backends
}
