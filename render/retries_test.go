package render

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// endpoints serves ServiceEndpoints from a table of the Services of
// namespace shop: a Service listed with no address has no ready
// endpoint; one not listed is unknown.
func endpoints(table map[string][]string) ServiceEndpoints {
	return func(namespace, name string, _ int32) ([]netip.AddrPort, bool) {
		list, ok := table[name]
		if namespace != "shop" || !ok {
			return nil, false
		}
		out := make([]netip.AddrPort, len(list))
		for i, s := range list {
			out[i] = netip.MustParseAddrPort(s)
		}
		return out, true
	}
}

// TestRetries: a route with retries writes its conditions (non_idempotent
// only when asked) and tries, and is proxied to an upstream of its
// Service's ready endpoints, sorted, without duplicates, at most
// maxRetryEndpoints; a route without retries naming the same Service
// keeps the ClusterIP; an unknown Service keeps the name; a Service
// without a ready endpoint answers 503, also in a split.
func TestRetries(t *testing.T) {
	many := make([]string, maxRetryEndpoints+4)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.1.%d:8080", 100-i)
	}
	opts := Options{
		ServiceAddresses: addresses(map[string]string{"web": "10.96.0.1", "empty": "10.96.0.2", "many": "10.96.0.3"}),
		ServiceEndpoints: endpoints(map[string][]string{"web": {"10.0.0.3:8080", "10.0.0.1:8080", "[::ffff:10.0.0.1]:8080", "[fd00::1]:9090"}, "empty": {}, "many": many}),
	}
	retried := func(path, svc string, rt v1.RouteRetries) v1.Route {
		r := route("api.example.com", path, v1.PathTypePrefix, svc, 80)
		r.Retries = &rt
		return r
	}
	split := route("api.example.com", "/split", v1.PathTypePrefix, "web", 80)
	split.AdditionalBackends = []v1.WeightedBackend{{Name: "empty", Port: 80, Weight: 50}}
	gw := gateway("gw",
		retried("/get", "web", v1.RouteRetries{Attempts: 2}),
		retried("/post", "web", v1.RouteRetries{Attempts: 5, On: []v1.RetryCondition{"http503", "connectError"}, NonIdempotent: true}),
		retried("/unknown", "unknown", v1.RouteRetries{Attempts: 1}),
		retried("/many", "many", v1.RouteRetries{Attempts: 1}),
		route("api.example.com", "/plain", v1.PathTypePrefix, "web", 80),
		route("api.example.com", "/empty", v1.PathTypePrefix, "empty", 80),
		split)
	config, err := Config(gw, opts)
	require.NoError(t, err)
	web := "retry_" + upstreamHash("web", 80)
	for _, want := range []string{
		"upstream " + web + " {\n    server 10.0.0.1:8080;\n    server 10.0.0.3:8080;\n    server [fd00::1]:9090;\n    keepalive",
		"proxy_next_upstream error timeout;\n        proxy_next_upstream_tries 3;\n",
		"proxy_next_upstream http_503 error non_idempotent;\n        proxy_next_upstream_tries 6;\n",
		`set $backend "` + web + `";`,
		`set $backend "` + upstreamName("web", 80) + `";`,
		`set $backend "unknown.shop.svc.cluster.local:80";`,
	} {
		assert.Contains(t, config, want)
	}
	assert.Equal(t, 4*2, strings.Count(config, "proxy_next_upstream_tries"), "only the routes with retries retry, in both their locations")
	assert.Equal(t, maxRetryEndpoints, strings.Count(config, "server 10.0.1."), "a Service's endpoints past maxRetryEndpoints")
	assert.Contains(t, config, "server 10.0.1.96:8080;\n    keepalive", "the first in address order are kept")
	assert.NotContains(t, config, "10.0.1.97:")
	assert.Contains(t, config, "location \"/empty/\" {\n        set $gateway_route \"Prefix api.example.com/empty\";\n        return 503;\n    }")
	assert.Regexp(t, `if \(\$backend_[0-9a-f]+ ~ \^noendpoints_\) \{\n\s+return 503;\n\s+\}\n\s+proxy_pass`, config)
	assert.NotContains(t, config, "upstream "+noEndpointsPrefix)
}

// TestRetriesRefused: the renderer writes no condition it has no
// directive for and no attempts out of bounds, whatever admission did,
// with the rule's id.
func TestRetriesRefused(t *testing.T) {
	for name, rt := range map[string]v1.RouteRetries{
		"attempts 0":            {Attempts: 0},
		"attempts 6":            {Attempts: 6},
		"a condition injected":  {Attempts: 1, On: []v1.RetryCondition{"timeout; return 200"}},
		"nginx's own condition": {Attempts: 1, On: []v1.RetryCondition{"non_idempotent"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
			r.Retries = &rt
			w := &trafficWriter{t: &routeTraffic{}}
			errs := writeRetries(w, &r, field.NewPath("retries"))
			require.NotEmpty(t, errs)
			assert.Equal(t, validation.RuleRetries, errs[0].Origin)
			assert.Zero(t, w.loc.Len())
			_, err := Config(gateway("gw", r), Options{})
			assert.Error(t, err)
		})
	}
}

// retryBackend is one of a Service's endpoints on loopback: it counts
// the requests it receives and can be killed; a dropping one closes each
// connection once it has read a request, without an answer, as a pod
// that dies in the middle of a request.
type retryBackend struct {
	srv    *httptest.Server
	served atomic.Int64
	addr   string
}

func startRetryBackend(t *testing.T, dropping bool) *retryBackend {
	t.Helper()
	b := &retryBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b.served.Add(1)
		if dropping {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(b.srv.Close)
	b.addr = b.srv.Listener.Addr().String()
	return b
}

// kill closes the backend's listener and every connection it has open,
// as a pod that dies: nginx's pooled connections to it fail too.
func (b *retryBackend) kill() {
	b.srv.CloseClientConnections()
	b.srv.Close()
}

// TestDataPlaneRetries checks through real nginx with three backends on
// loopback as one Service's endpoints: with retries, 0 of the GETs fail
// while one of the three is killed mid-load; a POST that meets the dead
// endpoint after it was sent is not sent again (502) unless
// nonIdempotent asks; and a
// Service without a ready endpoint answers 503 without a connection.
func TestDataPlaneRetries(t *testing.T) {
	bin := nginxBinary(t)
	resolver := startServiceDNS(t)
	backends := []*retryBackend{startRetryBackend(t, false), startRetryBackend(t, false), startRetryBackend(t, false)}
	// Two Services of the same two endpoints, so each upstream learns
	// on its own that the dropping one fails.
	dropping, alive := startRetryBackend(t, true), startRetryBackend(t, false)
	table := map[string][]string{
		"web":   {backends[0].addr, backends[1].addr, backends[2].addr},
		"half":  {dropping.addr, alive.addr},
		"half2": {dropping.addr, alive.addr},
		"none":  {},
	}
	retried := func(path, svc string, rt v1.RouteRetries) v1.Route {
		r := route("api.example.com", path, v1.PathTypePrefix, svc, 80)
		r.Retries = &rt
		return r
	}
	gw := gateway("retries",
		retried("/web", "web", v1.RouteRetries{Attempts: 2}),
		retried("/post", "half", v1.RouteRetries{Attempts: 2}),
		retried("/post-any", "half2", v1.RouteRetries{Attempts: 2, NonIdempotent: true}),
		route("api.example.com", "/none", v1.PathTypePrefix, "none", 80))
	nginx := startNginx(t, bin, func(opts Options) (string, error) {
		opts.ServiceEndpoints = endpoints(table)
		return Config(gw, opts)
	}, resolver)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: dataPlaneWait}
	send := func(method, path string) (int, error) {
		req, err := http.NewRequest(method, "http://"+nginx.httpAddr+path, strings.NewReader("body"))
		if err != nil {
			return 0, err
		}
		req.Host = "api.example.com"
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}

	t.Run("0 failed GETs while 1 of 3 endpoints is killed mid-load", func(t *testing.T) {
		const clients, each = 8, 150
		var failed, sent atomic.Int64
		var once sync.Once
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for range each {
					if sent.Add(1) == clients*each/3 {
						once.Do(backends[1].kill)
					}
					if status, err := send(http.MethodGet, "/web/x"); err != nil || status != http.StatusOK {
						failed.Add(1)
						t.Logf("GET: %d %v", status, err)
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d GETs, %d failed; served by the endpoints: %d, %d (killed after a third), %d",
			sent.Load(), failed.Load(), backends[0].served.Load(), backends[1].served.Load(), backends[2].served.Load())
		assert.Zero(t, failed.Load(), nginx.logs())
		for _, b := range backends {
			assert.Positive(t, b.served.Load())
		}
	})

	t.Run("a POST that meets a dead endpoint is not sent again", func(t *testing.T) {
		refused := 0
		dropped, answered := dropping.served.Load(), alive.served.Load()
		for range 10 {
			status, err := send(http.MethodPost, "/post/x")
			require.NoError(t, err)
			require.Contains(t, []int{http.StatusOK, http.StatusBadGateway}, status)
			if status == http.StatusBadGateway {
				refused++
			}
		}
		t.Logf("POSTs answered 502 of 10: %d", refused)
		assert.Positive(t, refused, "no POST met the dropping endpoint")
		assert.Equal(t, int64(refused), dropping.served.Load()-dropped, "each 502 is a POST the dropping endpoint received")
		assert.Equal(t, int64(10-refused), alive.served.Load()-answered, "a POST was sent again")
	})

	t.Run("with nonIdempotent, POSTs are sent again", func(t *testing.T) {
		dropped := dropping.served.Load()
		for range 10 {
			status, err := send(http.MethodPost, "/post-any/x")
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, status, nginx.logs())
		}
		assert.Positive(t, dropping.served.Load()-dropped, "no POST met the dropping endpoint")
	})

	t.Run("a Service without a ready endpoint answers 503", func(t *testing.T) {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			status, err := send(method, "/none/x")
			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, status)
		}
	})
}

// FuzzRenderRetries: whatever a route's retry condition and attempts
// hold, the configuration is refused or has the directives of harmless
// retries: no condition ends a directive or adds one.
func FuzzRenderRetries(f *testing.F) {
	for _, s := range hostileStrings() {
		f.Add(s, int32(2))
		f.Add("timeout"+s, int32(1))
	}
	f.Add("http502", int32(5))
	f.Add("error", int32(6))
	f.Fuzz(func(t *testing.T, condition string, attempts int32) {
		gw := func(c string, n int32) *v1.APIGateway {
			r := route("fuzz.example.com", "/", v1.PathTypePrefix, "web", 80)
			r.Retries = &v1.RouteRetries{Attempts: n, On: []v1.RetryCondition{v1.RetryCondition(c)}}
			return gateway("fuzz", r)
		}
		opts := Options{Resolvers: []string{"127.0.0.1"}, ServiceEndpoints: endpoints(map[string][]string{"web": {"10.0.0.1:80", "10.0.0.2:80"}})}
		config, err := Config(gw(condition, attempts), opts)
		if err != nil {
			require.Empty(t, config)
			return
		}
		want, err := Config(gw("timeout", 1), opts)
		require.NoError(t, err, "harmless retries")
		assert.Equal(t, directives(t, want), directives(t, config), "%s", config)
	})
}

// TestEndpointChurn: what a backend's rollout changes of a gateway's
// configuration, which the controller's endpoint events rely on
// (endpoints.Change) to bound reloads: a new set of ready endpoints only
// for a route with retries; for any route, only the Service losing its
// last or gaining its first ready endpoint. The sequence is a rolling
// restart of 3 replicas (maxSurge 1, maxUnavailable 0) as the Service's
// ready endpoints see it.
func TestEndpointChurn(t *testing.T) {
	rollout := [][]string{
		{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"},
		{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080"}, // a new pod ready
		{"10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080"},                  // an old one terminating
		{"10.0.0.2:8080", "10.0.0.3:8080", "10.0.0.4:8080", "10.0.0.5:8080"},
		{"10.0.0.3:8080", "10.0.0.4:8080", "10.0.0.5:8080"},
		{"10.0.0.3:8080", "10.0.0.4:8080", "10.0.0.5:8080", "10.0.0.6:8080"},
		{"10.0.0.4:8080", "10.0.0.5:8080", "10.0.0.6:8080"},
	}
	configs := func(r v1.Route, states [][]string) int {
		distinct := map[string]bool{}
		for _, eps := range states {
			config, err := Config(gateway("gw", r), Options{
				ServiceAddresses: addresses(map[string]string{"web": "10.96.0.1"}),
				ServiceEndpoints: endpoints(map[string][]string{"web": eps}),
			})
			require.NoError(t, err)
			distinct[config] = true
		}
		return len(distinct)
	}
	plain := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
	retried := plain
	retried.Retries = &v1.RouteRetries{Attempts: 1}
	assert.Equal(t, 1, configs(plain, rollout), "without retries a rollout changes nothing")
	assert.Equal(t, len(rollout), configs(retried, rollout), "with retries each new endpoint set is a configuration")
	assert.Equal(t, 2, configs(plain, [][]string{rollout[0], {}, rollout[1]}), "without retries: the last endpoint gone, and back")
}
