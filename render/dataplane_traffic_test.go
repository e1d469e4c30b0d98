package render

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// The traffic settings through the real nginx, with real HTTP on loopback:
// the same harness as TestDataPlane (startNginx, startServiceDNS, echo
// backends), one gateway per setting.

// startTrafficGateway starts the named echo backends and nginx serving the
// gateway routes builds from their ports.
func startTrafficGateway(t *testing.T, routes func(ports map[string]int32) []v1.Route, extra map[string]int32, services ...string) *nginxProcess {
	t.Helper()
	bin := nginxBinary(t)
	ports := startEchoBackends(t, services...)
	for name, port := range extra {
		ports[name] = port
	}
	gw := gateway("traffic", routes(ports)...)
	return startNginx(t, bin, func(opts Options) (string, error) { return Config(gw, opts) }, startServiceDNS(t))
}

// gatewayClient is an HTTP client of the gateway that connects from the
// loopback address from (each address its own client for the rate limit)
// and keeps connections alive.
func gatewayClient(from string) *http.Client {
	dialer := &net.Dialer{Timeout: dataPlaneWait, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return &http.Client{
		Timeout:   dataPlaneWait,
		Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16},
	}
}

// send makes one request to the gateway at addr for host and returns the
// response, its body read.
func send(t *testing.T, c *http.Client, addr, method, target string, header http.Header, body io.Reader) (*http.Response, string) {
	t.Helper()
	resp, data, err := do(c, addr, method, "api.example.com", target, header, body)
	require.NoError(t, err)
	return resp, data
}

// do is send without a test, for goroutines.
func do(c *http.Client, addr, method, host, target string, header http.Header, body io.Reader) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, "http://"+addr+target, body)
	if err != nil {
		return nil, "", err
	}
	req.Host = host
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp, string(data), err
}

// echoed decodes an echo backend's answer.
func echoed(t *testing.T, body string) echoReply {
	t.Helper()
	var got echoReply
	require.NoError(t, json.Unmarshal([]byte(body), &got), "body: %s", body)
	return got
}

// TestDataPlaneTrafficTimeouts: a backend slower than the route's
// readSeconds gets the client a 504 from the gateway; the same backend on
// a route that waits longer answers 200, as does a fast backend on a route
// with the short timeout. Only status codes are asserted.
func TestDataPlaneTrafficTimeouts(t *testing.T) {
	// Answers after 3 s (three times readSeconds), or as soon as nginx
	// gives up and closes the connection.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
			_, _ = io.WriteString(w, "late")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		short := &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](1), ReadSeconds: ptr.To[int32](1)}
		impatient := route("api.example.com", "/slow", v1.PathTypeExact, "slow", ports["slow"])
		impatient.Timeouts = short
		patient := route("api.example.com", "/patient", v1.PathTypeExact, "slow", ports["slow"])
		patient.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](30)}
		fast := route("api.example.com", "/fast", v1.PathTypeExact, "fast", ports["fast"])
		fast.Timeouts = short
		return []v1.Route{impatient, patient, fast}
	}, map[string]int32{"slow": int32(slow.Listener.Addr().(*net.TCPAddr).Port)}, "fast")
	c := gatewayClient("127.0.0.1")
	tests := map[string]struct {
		path   string
		status int
	}{
		"a slow backend past readSeconds":   {path: "/slow", status: http.StatusGatewayTimeout},
		"the same backend with more time":   {path: "/patient", status: http.StatusOK},
		"a fast backend within readSeconds": {path: "/fast", status: http.StatusOK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp, body := send(t, c, nginx.httpAddr, http.MethodGet, tc.path, nil, nil)
			assert.Equal(t, tc.status, resp.StatusCode, "body: %s\n%s", body, nginx.logs())
		})
	}
}

// TestDataPlaneTrafficSplit sends 10,000 requests to a route whose
// backendService keeps 80%, a canary takes 20% and a drained backend 0%:
// the counts fall within five standard deviations of the binomial mean
// (sd = sqrt(10000 × 0.8 × 0.2) = 40, so 8000 ± 200 and 2000 ± 200; a
// correct split fails this about once in 1.7 million runs), and the drained
// backend gets exactly none. A blue/green route whose two additional
// backends take 100% leaves backendService nothing.
func TestDataPlaneTrafficSplit(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		canary := route("api.example.com", "/", v1.PathTypePrefix, "primary", ports["primary"])
		canary.AdditionalBackends = []v1.WeightedBackend{
			{Name: "canary", Port: v1.PortNumber(ports["canary"]), Weight: 20},
			{Name: "drained", Port: v1.PortNumber(ports["drained"]), Weight: 0},
		}
		blueGreen := route("bg.example.com", "/", v1.PathTypePrefix, "primary", ports["primary"])
		blueGreen.AdditionalBackends = []v1.WeightedBackend{{Name: "blue", Port: v1.PortNumber(ports["blue"]), Weight: 50}, {Name: "green", Port: v1.PortNumber(ports["green"]), Weight: 50}}
		return []v1.Route{canary, blueGreen}
	}, nil, "primary", "canary", "drained", "blue", "green")

	const n, workers = 10000, 4
	counts := countBackends(t, nginx, "api.example.com", n, workers)
	t.Logf("10,000 requests, 80/20/0: %v", counts)
	assert.Equal(t, n, counts["primary"]+counts["canary"], "every request reached primary or canary: %v", counts)
	assert.InDelta(t, 8000, counts["primary"], 200, "primary")
	assert.InDelta(t, 2000, counts["canary"], 200, "canary")
	assert.Zero(t, counts["drained"], "the drained backend")

	counts = countBackends(t, nginx, "bg.example.com", 1000, workers)
	t.Logf("1,000 requests, blue/green 50/50 and primary 0: %v", counts)
	assert.Zero(t, counts["primary"], "backendService when the others take 100%")
	assert.Equal(t, 1000, counts["blue"]+counts["green"])
	// sd = sqrt(1000 × 0.5 × 0.5) ≈ 15.8; five of them.
	assert.InDelta(t, 500, counts["blue"], 80, "blue")
}

// countBackends sends n GET requests for host over keep-alive connections
// from workers goroutines and counts the answers by the backend that gave
// them ("status ..." for an answer other than 200, "error" for none).
func countBackends(t *testing.T, nginx *nginxProcess, host string, n, workers int) map[string]int {
	t.Helper()
	c := gatewayClient("127.0.0.1")
	var mu sync.Mutex
	counts := map[string]int{}
	var firstErr error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				key, err := backendOf(c, nginx.httpAddr, host)
				mu.Lock()
				counts[key]++
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(t, firstErr, "%v\n%s", counts, nginx.logs())
	return counts
}

// backendOf is the Service that answered one request for host.
func backendOf(c *http.Client, addr, host string) (string, error) {
	resp, body, err := do(c, addr, http.MethodGet, host, "/x", nil, nil)
	if err != nil {
		return "error", err
	}
	if resp.StatusCode != http.StatusOK {
		return "status " + resp.Status, nil
	}
	var got echoReply
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		return "error", err
	}
	return got.Service, nil
}

// TestDataPlaneTrafficRewrite: a Prefix route's rewritePrefix replaces the
// matched prefix, and the backend receives exactly the rewritten path,
// normalised and percent-encoded again by nginx (non-ASCII stays encoded,
// an encoded '?' stays in the path), with the query as sent. The 400 rules
// of "What a backend receives" still apply first.
func TestDataPlaneTrafficRewrite(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		r := func(host, path, prefix string) v1.Route {
			svc := strings.Split(host, ".")[0]
			rt := route(host, path, v1.PathTypePrefix, svc, ports[svc])
			rt.RewritePrefix = v1.HTTPPath(prefix)
			return rt
		}
		return []v1.Route{
			r("root.example.com", "/api", "/"),
			r("v2.example.com", "/api", "/v2"),
			r("slash.example.com", "/api/", "/v2/"),
			r("all.example.com", "/", "/v2"),
		}
	}, nil, "root", "v2", "slash", "all")
	tests := map[string]struct {
		host, target string
		status       int
		uri, path    string // at the backend: the request URI and its decoded path
	}{
		"below the prefix, to /":             {host: "root.example.com", target: "/api/users/1", uri: "/users/1", path: "/users/1"},
		"the prefix itself, to /":            {host: "root.example.com", target: "/api", uri: "/", path: "/"},
		"the prefix and a slash, to /":       {host: "root.example.com", target: "/api/", uri: "/", path: "/"},
		"the query is kept":                  {host: "root.example.com", target: "/api?x=1", uri: "/?x=1", path: "/"},
		"an encoded query is kept as sent":   {host: "root.example.com", target: "/api/users/1?next=%2Fa%3Fb", uri: "/users/1?next=%2Fa%3Fb", path: "/users/1"},
		"non-ASCII stays percent-encoded":    {host: "root.example.com", target: "/api/x%C3%A9", uri: "/x%C3%A9", path: "/x\u00e9"},
		"an encoded ? is no query":           {host: "root.example.com", target: "/api/a%3Fb?q=1", uri: "/a%3Fb?q=1", path: "/a?b"},
		"an encoded letter is normalised":    {host: "root.example.com", target: "/api/%75sers", uri: "/users", path: "/users"},
		"an encoded newline is rewritten":    {host: "root.example.com", target: "/api/a%0Ab", uri: "/a%0Ab", path: "/a\nb"},
		"a literal percent stays encoded":    {host: "root.example.com", target: "/api/100%25", uri: "/100%25", path: "/100%"},
		"below the prefix, to /v2":           {host: "v2.example.com", target: "/api/x", uri: "/v2/x", path: "/v2/x"},
		"the prefix itself, to /v2":          {host: "v2.example.com", target: "/api", uri: "/v2", path: "/v2"},
		"non-ASCII, to /v2":                  {host: "v2.example.com", target: "/api/x%C3%A9", uri: "/v2/x%C3%A9", path: "/v2/x\u00e9"},
		"an encoded ?, to /v2":               {host: "v2.example.com", target: "/api/a%3Fb?q=1", uri: "/v2/a%3Fb?q=1", path: "/v2/a?b"},
		"a trailing slash in the prefix":     {host: "slash.example.com", target: "/api", uri: "/v2/", path: "/v2/"},
		"below, with a trailing slash":       {host: "slash.example.com", target: "/api/x", uri: "/v2/x", path: "/v2/x"},
		"the root route, /":                  {host: "all.example.com", target: "/", uri: "/v2", path: "/v2"},
		"the root route, below":              {host: "all.example.com", target: "/x/y?z=1", uri: "/v2/x/y?z=1", path: "/v2/x/y"},
		"Prefix is still element-wise":       {host: "root.example.com", target: "/apix", status: http.StatusNotFound},
		"a dot segment is still refused":     {host: "root.example.com", target: "/api/../x", status: http.StatusBadRequest},
		"an encoded slash is still refused":  {host: "v2.example.com", target: "/api/..%2Fx", status: http.StatusBadRequest},
		"a path parameter is still refused":  {host: "v2.example.com", target: "/api/x;y", status: http.StatusBadRequest},
		"a double encoding is still refused": {host: "all.example.com", target: "/%252e", status: http.StatusBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			status, body, err := rawRequest(nginx.httpAddr, "GET "+tc.target+" HTTP/1.1", tc.host)
			require.NoError(t, err, nginx.logs())
			if tc.status != 0 {
				assert.Equal(t, tc.status, status, "body: %s", body)
				assert.NotContains(t, body, `"service"`, "a refused request reached a backend")
				return
			}
			require.Equal(t, http.StatusOK, status, "body: %s", body)
			got := echoed(t, body)
			assert.Equal(t, strings.Split(tc.host, ".")[0], got.Service)
			assert.Equal(t, tc.uri, got.RequestURI, "the request URI at the backend")
			assert.Equal(t, tc.path, got.Path, "the decoded path at the backend")
		})
	}
}

// headerReply is what the header backend answers: the request headers it
// received.
type headerReply struct {
	Headers http.Header `json:"headers"`
	Host    string      `json:"host"`
}

// startHeaderBackend answers every request with the headers it received,
// and sends X-Frame-Options, X-Powered-By and X-Version of its own.
func startHeaderBackend(t *testing.T) int32 {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Frame-Options", "SAMEORIGIN")
		w.Header().Set("X-Powered-By", "backend")
		w.Header().Set("X-Version", "1")
		_ = json.NewEncoder(w).Encode(headerReply{Headers: r.Header, Host: r.Host})
	}))
	t.Cleanup(srv.Close)
	return int32(srv.Listener.Addr().(*net.TCPAddr).Port)
}

// TestDataPlaneTrafficHeaders: the backend sees the request headers a
// route sets and adds and not those it removes, still with the gateway's
// own Host, X-Real-IP and X-Forwarded-For (a location's proxy_set_header
// lines replace the server's, so the renderer repeats them); the client
// sees the response headers the route sets and adds and not those it
// removes. ';', braces and '#' in a value arrive as written.
func TestDataPlaneTrafficHeaders(t *testing.T) {
	const odd = "a; } server { # {x} 'y'"
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		r := route("api.example.com", "/h", v1.PathTypePrefix, "headers", ports["headers"])
		r.RequestHeaders = &v1.HeaderModifier{
			Set:    []v1.HTTPHeader{{Name: "X-Team", Value: "payments"}, {Name: "X-Odd", Value: odd}},
			Add:    []v1.HTTPHeader{{Name: "X-Trace", Value: "gateway"}},
			Remove: []v1.HTTPHeaderName{"X-Debug"},
		}
		r.ResponseHeaders = &v1.HeaderModifier{
			Set:    []v1.HTTPHeader{{Name: "X-Frame-Options", Value: "DENY"}},
			Add:    []v1.HTTPHeader{{Name: "Cache-Control", Value: "no-store"}},
			Remove: []v1.HTTPHeaderName{"X-Powered-By"},
		}
		return []v1.Route{r, route("api.example.com", "/plain", v1.PathTypePrefix, "headers", ports["headers"])}
	}, map[string]int32{"headers": startHeaderBackend(t)})
	c := gatewayClient("127.0.0.1")

	client := http.Header{
		"X-Team": {"client"}, "X-Trace": {"client-trace"}, "X-Debug": {"1"}, "X-Kept": {"yes"},
		"X-Forwarded-For": {"6.6.6.6"}, "X-Real-Ip": {"6.6.6.6"},
	}
	resp, body := send(t, c, nginx.httpAddr, http.MethodGet, "/h/x", client, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var got headerReply
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	assert.Equal(t, []string{"payments"}, got.Headers.Values("X-Team"), "set replaces the client's value")
	assert.Equal(t, []string{odd}, got.Headers.Values("X-Odd"), "the value as written")
	assert.Equal(t, []string{"client-trace, gateway"}, got.Headers.Values("X-Trace"), "add keeps the client's value")
	assert.Empty(t, got.Headers.Values("X-Debug"), "removed")
	assert.Equal(t, []string{"yes"}, got.Headers.Values("X-Kept"), "other client headers pass")
	assert.Equal(t, []string{"127.0.0.1"}, got.Headers.Values("X-Forwarded-For"), "the gateway's X-Forwarded-For, not the client's")
	assert.Equal(t, []string{"127.0.0.1"}, got.Headers.Values("X-Real-Ip"), "the gateway's X-Real-IP")
	assert.Equal(t, "api.example.com", got.Host, "the gateway's Host")

	assert.Equal(t, []string{"DENY"}, resp.Header.Values("X-Frame-Options"), "set replaces the backend's value")
	assert.Equal(t, []string{"no-store"}, resp.Header.Values("Cache-Control"), "added")
	assert.Empty(t, resp.Header.Values("X-Powered-By"), "removed")
	assert.Equal(t, []string{"1"}, resp.Header.Values("X-Version"), "other backend headers pass")

	t.Run("add without a client value", func(t *testing.T) {
		resp, body := send(t, c, nginx.httpAddr, http.MethodGet, "/h", nil, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		var got headerReply
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		assert.Equal(t, []string{"gateway"}, got.Headers.Values("X-Trace"))
	})
	t.Run("a route without header changes", func(t *testing.T) {
		resp, body := send(t, c, nginx.httpAddr, http.MethodGet, "/plain", client, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		var got headerReply
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		assert.Equal(t, []string{"client"}, got.Headers.Values("X-Team"))
		assert.Equal(t, []string{"1"}, got.Headers.Values("X-Debug"))
		assert.Equal(t, []string{"127.0.0.1"}, got.Headers.Values("X-Forwarded-For"))
		assert.Equal(t, []string{"SAMEORIGIN"}, resp.Header.Values("X-Frame-Options"))
		assert.Equal(t, []string{"backend"}, resp.Header.Values("X-Powered-By"))
	})
}

// chunked hides a reader's length, so the client sends it chunked.
type chunked struct{ io.Reader }

// TestDataPlaneTrafficMaxBodySize: a body over the route's maxBodySize
// gets 413 from the gateway, whether its length is announced or chunked,
// and never reaches the backend; one at the limit gets 200, and another
// route keeps nginx's default (1m).
func TestDataPlaneTrafficMaxBodySize(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		small := route("api.example.com", "/upload", v1.PathTypePrefix, "upload", ports["upload"])
		small.MaxBodySize = "1k"
		return []v1.Route{small, route("api.example.com", "/other", v1.PathTypePrefix, "upload", ports["upload"])}
	}, nil, "upload")
	c := gatewayClient("127.0.0.1")
	tests := map[string]struct {
		path   string
		body   io.Reader
		status int
	}{
		"at the limit":              {path: "/upload", body: bytes.NewReader(make([]byte, 1024)), status: http.StatusOK},
		"one byte over":             {path: "/upload", body: bytes.NewReader(make([]byte, 1025)), status: http.StatusRequestEntityTooLarge},
		"chunked, over":             {path: "/upload", body: chunked{bytes.NewReader(make([]byte, 4096))}, status: http.StatusRequestEntityTooLarge},
		"chunked, under":            {path: "/upload", body: chunked{bytes.NewReader(make([]byte, 512))}, status: http.StatusOK},
		"another route, 64 KiB":     {path: "/other", body: bytes.NewReader(make([]byte, 64<<10)), status: http.StatusOK},
		"another route, over 1 MiB": {path: "/other", body: bytes.NewReader(make([]byte, 1<<20+1)), status: http.StatusRequestEntityTooLarge},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, body := send(t, c, nginx.httpAddr, http.MethodPost, tc.path, nil, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode, "body: %s", body)
			if tc.status != http.StatusOK {
				assert.NotContains(t, body, `"service"`, "a refused request reached the backend")
			}
		})
	}
}

// TestDataPlaneTrafficRateLimit: with 1 request per second and a burst of
// 2, a client's first three requests made at once are served and the next
// ones get 429, without reaching the backend; another client address, and
// another route, are served meanwhile. Each attempt uses a fresh loopback
// address (a fresh count); an attempt whose five requests did not all go
// out within 900 ms (a loaded machine: nginx grants one more request per
// second) proves nothing and is made again, at most three times.
func TestDataPlaneTrafficRateLimit(t *testing.T) {
	nginx := startTrafficGateway(t, func(ports map[string]int32) []v1.Route {
		limited := route("api.example.com", "/limited", v1.PathTypePrefix, "limited", ports["limited"])
		limited.RateLimit = &v1.RateLimit{RequestsPerSecond: 1, Burst: 2}
		return []v1.Route{limited, route("api.example.com", "/free", v1.PathTypePrefix, "limited", ports["limited"])}
	}, nil, "limited")
	want := []int{200, 200, 200, 429, 429}
	var statuses []int
	for attempt := range 3 {
		client := gatewayClient(net.IPv4(127, 0, 1, byte(attempt+1)).String())
		statuses = statuses[:0]
		start := time.Now()
		for range len(want) {
			resp, body := send(t, client, nginx.httpAddr, http.MethodGet, "/limited/x", nil, nil)
			statuses = append(statuses, resp.StatusCode)
			if resp.StatusCode == http.StatusTooManyRequests {
				assert.NotContains(t, body, `"service"`, "a limited request reached the backend")
			}
		}
		if time.Since(start) < 900*time.Millisecond {
			break
		}
		t.Logf("attempt %d took %s, too long to test a burst; again from another address", attempt+1, time.Since(start))
		statuses = nil
	}
	require.NotNil(t, statuses, "no attempt made its requests at once")
	assert.Equal(t, want, statuses)

	other := gatewayClient("127.0.2.1")
	resp, _ := send(t, other, nginx.httpAddr, http.MethodGet, "/limited/x", nil, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another client address has its own count")
	resp, _ = send(t, gatewayClient("127.0.1.1"), nginx.httpAddr, http.MethodGet, "/free", nil, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a route without rateLimit is not limited")
}
