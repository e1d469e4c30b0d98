package render

import (
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkDataPlaneExternalAuth is what an external authentication adds
// to each request on loopback: the same GET through the real nginx to the
// same backend, on a route without externalAuth and on one with it (the
// authentication server answering 200 with two identity headers), one
// keep-alive client, one request at a time. It reports the median and
// 99th percentile latency of each; the difference is the auth
// subrequest's cost. Services by name (resolved per request through the
// resolver, cached 30 s; a connection per request) and pooled (the
// ClusterIP path: upstream blocks with keepalive).
func BenchmarkDataPlaneExternalAuth(b *testing.B) {
	auth := startAuthServer(b)
	var hits atomic.Int64
	backend := hitBackend(b, &hits)
	routes := authRoutes(auth.port, backend, closedPort(b))
	plain := route("api.example.com", "/plain", "Exact", "backend", backend)
	gw := gateway("auth", append(routes, plain)...)
	loopback := func(string, string, int32) (netip.Addr, bool) { return netip.MustParseAddr("127.0.0.1"), true }
	for _, pooling := range []struct {
		name  string
		addrs ServiceAddresses
	}{{"by name", nil}, {"pooled", loopback}} {
		nginx := startNginx(b, nginxBinary(b), func(opts Options) (string, error) {
			opts.ServiceAddresses = pooling.addrs
			return Config(gw, opts)
		}, startServiceDNS(b))
		c := gatewayClient("127.0.0.1")
		for _, tc := range []struct{ name, target string }{{"without auth", "/plain"}, {"with auth", "/api"}} {
			b.Run(pooling.name+"/"+tc.name, func(b *testing.B) { measureLatency(b, c, nginx.httpAddr, tc.target) })
		}
	}
}

// measureLatency sends GETs of target one at a time and reports their
// median and 99th percentile.
func measureLatency(b *testing.B, c *http.Client, addr, target string) {
	header := http.Header{"Authorization": {"Bearer ok"}}
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		resp, body, err := do(c, addr, http.MethodGet, "api.example.com", target, header, nil)
		took = append(took, time.Since(start))
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("%v %v: %s", err, resp, body)
		}
	}
	slices.Sort(took)
	quantile := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) }
	b.ReportMetric(quantile(0.5), "p50-µs")
	b.ReportMetric(quantile(0.99), "p99-µs")
}
