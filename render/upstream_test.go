package render

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/dataplane"
)

// addresses is a ServiceAddresses of fixed ClusterIPs in namespace shop.
func addresses(ips map[string]string) ServiceAddresses {
	return func(namespace, name string, _ int32) (netip.Addr, bool) {
		ip, ok := ips[name]
		if namespace != "shop" || !ok {
			return netip.Addr{}, false
		}
		return netip.MustParseAddr(ip), true
	}
}

// TestPooledUpstreams: a backend whose Service has an address gets an
// upstream block with a bounded pool, named in its location and its
// split; one without keeps the name resolved per request; nginx loads
// both, and no name is ever in an upstream block (one nginx could not
// resolve at load would refuse the whole configuration).
func TestPooledUpstreams(t *testing.T) {
	canary := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
	canary.AdditionalBackends = []v1.WeightedBackend{{Name: "web-canary", Port: 80, Weight: 10}, {Name: "ghost", Port: 80, Weight: 10}}
	gw := gateway("pool", canary,
		route("api.example.com", "/v6", v1.PathTypePrefix, "v6", 8080),
		route("api.example.com", "/mapped", v1.PathTypePrefix, "mapped", 9000),
		route("api.example.com", "/zoned", v1.PathTypePrefix, "zoned", 9000))
	config, err := Config(gw, Options{Resolvers: []string{"127.0.0.1"}, ServiceAddresses: addresses(map[string]string{
		"web": "10.96.0.10", "web-canary": "10.96.0.11", "v6": "fd00::a", "mapped": "::ffff:10.96.0.12", "zoned": "fe80::1%eth0",
	})})
	require.NoError(t, err)
	pool := "    keepalive 32;\n    keepalive_timeout 1s;\n    keepalive_time 60s;\n}\n"
	for backend, server := range map[string]string{"web:80": "10.96.0.10:80", "web-canary:80": "10.96.0.11:80", "v6:8080": "[fd00::a]:8080", "mapped:9000": "10.96.0.12:9000"} {
		name, port, _ := strings.Cut(backend, ":")
		var p int32
		_, _ = fmt.Sscan(port, &p)
		id := upstreamName(v1.ServiceName(name), p)
		assert.Contains(t, config, "upstream "+id+" {\n    server "+server+";\n"+pool, backend)
		assert.Contains(t, config, `"`+id+`"`, "%s is named where it is used", backend)
	}
	assert.Equal(t, 4, strings.Count(config, "upstream upstream_"), "one upstream per Service and port with an address")
	assert.Contains(t, config, `"ghost.shop.svc.cluster.local:80"`, "a Service without an address is resolved by name")
	assert.Contains(t, config, `set $backend "zoned.shop.svc.cluster.local:9000"`, "an address with a zone is no ClusterIP")
	out, err := nginxTest(t, nginxBinary(t), config)
	require.NoError(t, err, "nginx -t:\n%s\n%s", out, config)

	without, err := Config(gw, Options{Resolvers: []string{"127.0.0.1"}})
	require.NoError(t, err)
	assert.NotContains(t, without, "upstream ", "without addresses every backend is resolved by name")
}

// countingBackend is an HTTP backend that counts the connections opened
// to it and reports, per request, the protocol and Connection header it
// received.
type countingBackend struct {
	port   int32
	opened atomic.Int64
	mu     sync.Mutex
	seen   map[string]int
}

func startCountingBackend(t *testing.T) *countingBackend {
	t.Helper()
	b := &countingBackend{seen: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.seen[r.Proto+" Connection="+r.Header.Get("Connection")]++
		b.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			b.opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	b.port = int32(srv.Listener.Addr().(*net.TCPAddr).Port)
	return b
}

// requests sends n GETs for path on each of clients connections (one
// connection per request for HTTP/1.0, which asks for no keep-alive) and
// returns how many connections the backend opened meanwhile.
func (b *countingBackend) requests(t *testing.T, addr, path, proto string, clients, n int, headers ...string) int64 {
	t.Helper()
	before := b.opened.Load()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			var conn net.Conn
			var br *bufio.Reader
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			for i := range n {
				if conn == nil || proto == "HTTP/1.0" {
					if conn != nil {
						conn.Close()
					}
					var err error
					conn, err = net.DialTimeout("tcp", addr, dataPlaneWait)
					if !assert.NoError(t, err) {
						return
					}
					br = bufio.NewReader(conn)
				}
				extra := ""
				for _, h := range headers {
					extra += h + "\r\n"
				}
				_, err := fmt.Fprintf(conn, "GET %s/%d/%d %s\r\nHost: api.example.com\r\n%s\r\n", path, c, i, proto, extra)
				if !assert.NoError(t, err) {
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if !assert.NoError(t, err) {
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !assert.NoError(t, err) || !assert.Equal(t, http.StatusOK, resp.StatusCode, string(body)) {
					return
				}
				if resp.Close && proto != "HTTP/1.0" {
					conn.Close()
					conn = nil
				}
			}
		})
	}
	wg.Wait()
	return b.opened.Load() - before
}

// TestDataPlanePooledConnections checks through real nginx what a user
// would count: 1,000 requests on 8 keep-alive clients open at most 8
// connections to a pooled backend (one per request before), HTTP/1.0
// clients and clients that close their connection reuse the pool too
// (the backend receives HTTP/1.1 without "Connection: close"), a
// WebSocket passes through a pooled route and leaves the pool working,
// and a backend without an address is still resolved per request.
func TestDataPlanePooledConnections(t *testing.T) {
	bin := nginxBinary(t)
	resolver := startServiceDNS(t)
	pooled, byName := startCountingBackend(t), startCountingBackend(t)
	chat := dataplane.StartWebSocketEcho(t, "127.0.0.1:0")
	gw := gateway("pool",
		route("api.example.com", "/pooled", v1.PathTypePrefix, "pooled", pooled.port),
		route("api.example.com", "/byname", v1.PathTypePrefix, "byname", byName.port),
		route("api.example.com", "/chat", v1.PathTypePrefix, "chat", chat))
	nginx := startNginx(t, bin, func(opts Options) (string, error) {
		opts.ServiceAddresses = addresses(map[string]string{"pooled": "127.0.0.1", "chat": "127.0.0.1"})
		return Config(gw, opts)
	}, resolver)

	t.Run("1,000 requests on 8 keep-alive clients", func(t *testing.T) {
		opened := pooled.requests(t, nginx.httpAddr, "/pooled", "HTTP/1.1", 8, 125)
		t.Logf("backend connections opened for 1,000 requests: %d", opened)
		assert.LessOrEqual(t, opened, int64(8), "more backend connections than concurrent requests")
		assert.Positive(t, opened)
	})
	t.Run("HTTP/1.0 clients and clients that close reuse the pool", func(t *testing.T) {
		opened := pooled.requests(t, nginx.httpAddr, "/pooled", "HTTP/1.0", 1, 100)
		opened += pooled.requests(t, nginx.httpAddr, "/pooled", "HTTP/1.1", 1, 100, "Connection: close")
		assert.LessOrEqual(t, opened, int64(1), "200 sequential requests from closing clients")
		pooled.mu.Lock()
		defer pooled.mu.Unlock()
		assert.Equal(t, map[string]int{"HTTP/1.1 Connection=": 1200}, pooled.seen, "what the backend received")
	})
	t.Run("a WebSocket passes through a pooled route", func(t *testing.T) {
		for range 2 {
			ws, err := dataplane.DialWebSocket(nginx.httpAddr, "api.example.com", "/chat/room")
			require.NoError(t, err, nginx.logs())
			got, err := dataplane.EchoOver(ws, []byte("hello"))
			require.NoError(t, err)
			assert.Equal(t, []byte("hello"), got)
			require.NoError(t, ws.Close())
		}
		assert.LessOrEqual(t, pooled.requests(t, nginx.httpAddr, "/pooled", "HTTP/1.1", 1, 10), int64(1))
	})
	t.Run("a backend without an address is resolved per request", func(t *testing.T) {
		opened := byName.requests(t, nginx.httpAddr, "/byname", "HTTP/1.1", 1, 20)
		assert.Equal(t, int64(20), opened, "no pool without an upstream block")
	})
}
