package reloader_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/reloader"
)

// TestDataPlaneMetrics: a gateway pod (the pod template's reloader over
// Debian's nginx) with the access log on answers 900 requests through a
// backend and 100 the backend fails with 503, on two routes, and 10 for
// a host no route names; its metrics port then reads exactly those
// counts, by route, backend and status class, and the access log still
// has its 1,010 lines. After a route change (a reload, nginx's workers
// replaced) the counters go on from there, and the removed route's
// series stays until the configuration after next.
func TestDataPlaneMetrics(t *testing.T) {
	b := startBackends(t)
	failing := serveStatus(t, http.StatusServiceUnavailable)
	gw := func(extra ...string) *v1.APIGateway {
		g := b.gatewayWith(extra...)
		g.Spec.AccessLog = &v1.AccessLog{Format: v1.AccessLogJSON}
		g.Spec.Routes = append(g.Spec.Routes, v1.Route{Host: host, Path: "/failing", PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "failing", Port: v1.PortNumber(failing)}})
		return g
	}
	f := startPod(t, b, gw())
	_, _, hash := render(t, gw())
	f.waitLoaded(hash)

	send := func(h, path string, n int) {
		c := &http.Client{Timeout: wait, Transport: &http.Transport{Proxy: nil}}
		for range n {
			req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+path, nil)
			require.NoError(t, err)
			req.Host = h
			resp, err := c.Do(req)
			require.NoError(t, err, f.logs.String())
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	send(host, "/users/x", 900)
	send(host, "/failing/x", 100)
	send("unknown.example.com", "/", 10)

	users := series("Prefix "+host+"/users", "users:"+strconv.Itoa(int(b.echo)), "2xx")
	failed := series("Prefix "+host+"/failing", "failing:"+strconv.Itoa(int(failing)), "5xx")
	none := series("", "", "4xx")
	want := map[string]float64{users: 900, failed: 100, none: 10}
	got := f.waitMetrics(want)
	assert.Equal(t, want, pick(got, reloader.RequestsMetric), "every requests series")
	assert.InDelta(t, 1000, got[reloader.DurationMetric+`_count{route="Prefix `+host+`/users"}`]+got[reloader.DurationMetric+`_count{route="Prefix `+host+`/failing"}`], 0)
	assert.InDelta(t, 100, got[reloader.UpstreamMetric+`_count{route="Prefix `+host+`/failing"}`], 0)
	for _, reason := range []string{reloader.DropMalformed, reloader.DropUnknownRoute, reloader.DropUnknownBackend} {
		assert.Zero(t, got[reloader.DroppedMetric+`{reason="`+reason+`"}`], reason)
	}
	assert.Equal(t, 1010, strings.Count(f.logs.String(), `"method":"GET"`), "the access log's lines")

	// A route change: nginx reloads, the reloader keeps counting.
	_, data, next := render(t, gw("/fresh"))
	require.NoError(t, f.pod.Project(data))
	f.waitLoaded(next)
	send(host, "/users/y", 10)
	send(host, "/fresh/y", 5)
	fresh := series("Prefix "+host+"/fresh", "fresh:"+strconv.Itoa(int(b.echo)), "2xx")
	got = f.waitMetrics(map[string]float64{users: 910, fresh: 5})
	assert.InDelta(t, 100, got[failed], 0)
}

// serveStatus is a backend answering every request with code.
func serveStatus(t *testing.T, code int) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }), ReadHeaderTimeout: wait}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// series is a requests series as the text exposition writes it, labels
// sorted.
func series(route, backend, class string) string {
	return fmt.Sprintf(`%s{backend=%q,route=%q,status_class=%q}`, reloader.RequestsMetric, backend, route, class)
}

// pick is the samples of got whose name is name.
func pick(got map[string]float64, name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, name+"{") {
			out[k] = v
		}
	}
	return out
}

// metrics reads the pod's metrics port: each sample's series and value.
func (f *fixture) metrics() (map[string]float64, error) {
	resp, err := fresh.Get("http://" + f.pod.Addr(controller.MetricsPort) + reloader.MetricsPath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// waitMetrics waits until every series of want has at least its value
// (the lines reach the reloader a little after the responses), and
// returns the samples then.
func (f *fixture) waitMetrics(want map[string]float64) map[string]float64 {
	f.t.Helper()
	var got map[string]float64
	require.Eventually(f.t, func() bool {
		var err error
		if got, err = f.metrics(); err != nil {
			return false
		}
		for k, v := range want {
			if got[k] < v {
				return false
			}
		}
		return true
	}, wait, 10*time.Millisecond, "metrics %v, want %v\n%s", &got, want, f.logs)
	for k, v := range want {
		assert.InDelta(f.t, v, got[k], 0, k)
	}
	return got
}
