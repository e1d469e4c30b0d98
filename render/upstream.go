package render

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
)

// Pooled connections to backends (issue 37). nginx keeps connections to a
// backend open between requests only for an upstream{} block with
// keepalive, and resolves an upstream's server names once, when it loads
// the configuration: a name that does not resolve then (a Service not yet
// created, or deleted) would make nginx refuse the whole gateway's
// configuration. So the gateway pools only to addresses it is given, the
// Services' ClusterIPs (Options.ServiceAddresses), written as IP
// addresses that need no DNS; a backend without one (no such Service, a
// headless or ExternalName Service) keeps the name resolved per request
// through the resolver, as before, and loads whatever DNS says.
//
// A location names its backend in $backend either way: nginx's proxy_pass
// with a variable uses the upstream{} block of that name when there is
// one, and resolves the value as a host name otherwise.

const (
	// upstreamKeepalive is the most idle connections each nginx worker
	// keeps to one backend Service; busier moments open more, which close
	// after their request.
	upstreamKeepalive = 32
	// upstreamIdle closes a pooled connection idle this long, before the
	// shortest idle timeout common backends default to (gunicorn 2 s;
	// Node.js, uvicorn and Apache 5 s): a backend that closes first races
	// the next request nginx sends on the connection, and a POST that
	// meets the close is a 502 nginx does not retry.
	upstreamIdle = "1s"
	// upstreamLifetime closes a pooled connection this long after it
	// opened, once its request ends: kube-proxy picks a backend pod per
	// connection, so the pool spreads again over the pods a scale-up adds.
	upstreamLifetime = "60s"
)

// ServiceAddresses gives the ClusterIP of the Service name in namespace
// for its port, and false for a Service the gateway cannot pool to: one
// that does not exist, has no ClusterIP (headless, ExternalName), or no
// such port (its ClusterIP would refuse the connection, as the name does
// in a cluster).
type ServiceAddresses func(namespace, name string, port int32) (netip.Addr, bool)

// upstreams are the pooled backends of one gateway: upstream name to the
// server it holds.
type upstreams struct {
	lookup    ServiceAddresses
	endpoints ServiceEndpoints
	namespace string
	// servers are each upstream's servers, one for a ClusterIP, the
	// ready endpoints for a retried backend (retries.go).
	servers map[string][]string
	// retryServers counts the endpoints in servers (maxRetryServers).
	retryServers int
	// labels maps each value backend returned to its metrics label
	// (backendLabel).
	labels map[string]string
}

// backend is what a location's $backend (or a split_clients value) holds
// for Service name on port: the name of its upstream block when the
// Service has an address, else byName, its host:port for the resolver.
// The port passed validation (1 to 65535).
func (u *upstreams) backend(name v1.ServiceName, port int32, byName string) string {
	value := u.unready(name, port)
	if value == "" {
		value = u.pooled(name, port)
	}
	if value == "" {
		value = byName
	}
	u.labels[value] = backendLabel(name, port)
	return value
}

// pooled is the name of the upstream block of Service name on port, ""
// when it has no address to pool to.
func (u *upstreams) pooled(name v1.ServiceName, port int32) string {
	if u.lookup == nil || port < 1 || port > 65535 {
		return ""
	}
	addr, ok := u.lookup(u.namespace, string(name), port)
	if !ok || !addr.IsValid() || addr.Zone() != "" {
		return ""
	}
	id := upstreamName(name, port)
	// An IP address and a port, nothing else: netip writes
	// 10.96.0.10:80 or [fd00::a]:80.
	u.servers[id] = []string{netip.AddrPortFrom(addr.Unmap(), uint16(port)).String()}
	return id
}

// upstreamName names the upstream of Service name on port: 64 bits of a
// SHA-256, so only lower-case letters, digits and '_', stable across
// renders and distinct per Service and port.
func upstreamName(name v1.ServiceName, port int32) string {
	return "upstream_" + upstreamHash(name, port)
}

// write writes the upstream blocks, sorted by name.
func (u *upstreams) write(b *strings.Builder) {
	if len(u.servers) == 0 {
		return
	}
	names := make([]string, 0, len(u.servers))
	for n := range u.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		switch {
		case i == 0 && strings.HasPrefix(n, "retry_"):
			b.WriteString("# Backends of routes with retries: their ready endpoints, pooled.\n")
		case strings.HasPrefix(n, "upstream_") && (i == 0 || !strings.HasPrefix(names[i-1], "upstream_")):
			b.WriteString("# Backends with a ClusterIP: connections pooled per worker, reused across requests.\n")
		}
		fmt.Fprintf(b, "upstream %s {\n", n)
		for _, s := range u.servers[n] {
			fmt.Fprintf(b, "    server %s;\n", s)
		}
		fmt.Fprintf(b, "    keepalive %d;\n    keepalive_timeout %s;\n    keepalive_time %s;\n}\n",
			upstreamKeepalive, upstreamIdle, upstreamLifetime)
	}
	b.WriteString("\n")
}

// longestAddresses gives every Service the longest address there is, so a
// render with it is at least as long as any the operator makes
// (ValidateRenderedSize).
func longestAddresses(string, string, int32) (netip.Addr, bool) {
	return netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), true
}
