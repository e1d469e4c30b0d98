package reloader_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/test/clusterdns"
	"example.com/apigateway-operator/test/dataplane"
	"example.com/apigateway-operator/test/gatewaypod"
	"example.com/apigateway-operator/test/netns"
)

// The data-plane tests run in a network namespace of their own (as root),
// where a gateway pod's nginx binds the ports its pod would: 8080, 8081
// and the reloader's 8082, and the DNS server port 53 on loopback. The
// test binary is also the reloader the pods run (RunReloaderIfAsked).
func TestMain(m *testing.M) {
	gatewaypod.RunReloaderIfAsked()
	code, done, err := netns.Enter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if done {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// wait bounds every wait of these tests; none measures time.
const wait = 30 * time.Second

const host = "dp.example.com"

// backends are the test's Services: "users" and "fresh" echo the path
// they were asked for, "stream" streams until released, "chat" echoes
// WebSocket messages.
type backends struct {
	echo, stream, chat int32
	release            chan struct{}
	// delayed receives a request that asked to be answered late.
	delayed chan struct{}
}

func startBackends(t *testing.T) *backends {
	t.Helper()
	b := &backends{release: make(chan struct{}), delayed: make(chan struct{}, 1)}
	serve := func(h http.HandlerFunc) int32 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: wait}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return int32(ln.Addr().(*net.TCPAddr).Port)
	}
	b.echo = serve(func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
			b.delayed <- struct{}{}
			time.Sleep(d)
		}
		_, _ = io.WriteString(w, "path="+r.URL.Path)
	})
	b.stream = serve(gatewaypod.StreamHandler(b.release, 20*time.Millisecond))
	b.chat = dataplane.StartWebSocketEcho(t, "127.0.0.1:0")
	return b
}

// gatewayWith is the test gateway with extra Prefix routes to "fresh".
func (b *backends) gatewayWith(extra ...string) *v1.APIGateway {
	r := func(path, svc string, port int32) v1.Route {
		return v1.Route{Host: host, Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
	}
	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Name: "dp", Namespace: "team"},
		Spec: v1.APIGatewaySpec{Routes: []v1.Route{
			r("/users", "users", b.echo),
			r("/stream", "stream", b.stream),
			r("/chat", "chat", b.chat),
		}},
	}
	for _, p := range extra {
		gw.Spec.Routes = append(gw.Spec.Routes, r(p, "fresh", b.echo))
	}
	return gw
}

// render is what the operator writes for gw: the pod spec and the
// ConfigMap's data, and its hash.
func render(t *testing.T, gw *v1.APIGateway) (corev1.PodSpec, map[string]string, string) {
	t.Helper()
	spec, data, err := gatewaypod.FromGateway(gw, controller.ChildOptions{DefaultImage: "nginx", ReloaderImage: "operator"})
	require.NoError(t, err)
	require.Len(t, data, 1)
	for _, v := range data {
		return spec, data, reloader.Hash([]byte(v))
	}
	return spec, data, ""
}

// fixture is one running gateway pod and what it needs.
type fixture struct {
	t    *testing.T
	b    *backends
	pod  *gatewaypod.Pod
	dir  string
	logs *syncBuffer
}

// startPod starts the gateway pod of gw, with its pod template changed
// by tune, and waits until it is ready. Service names resolve to
// loopback through a DNS server on 127.0.0.1:53, the pod's resolv.conf.
func startPod(t *testing.T, b *backends, gw *v1.APIGateway, tune ...func(*corev1.PodSpec)) *fixture {
	t.Helper()
	_, stop, err := clusterdns.Serve("127.0.0.1:53", "cluster.local", net.IPv4(127, 0, 0, 1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop() })
	f := &fixture{t: t, b: b, dir: gatewaypod.TempDir(t, "gwpod"), logs: &syncBuffer{}}
	spec, data, _ := render(t, gw)
	for _, fn := range tune {
		fn(&spec)
	}
	f.start(spec, data)
	return f
}

func (f *fixture) start(spec corev1.PodSpec, data map[string]string) {
	t := f.t
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		nginx = "/usr/sbin/nginx"
	}
	pod, err := gatewaypod.Start(f.dir, spec, data, gatewaypod.Options{
		Binary: os.Args[0], TestBinary: true, Nginx: nginx, ResolvConf: "nameserver 127.0.0.1\n", Output: f.logs,
	})
	require.NoError(t, err)
	f.pod = pod
	t.Cleanup(func() { _ = pod.Stop(wait) })
	require.Eventually(t, func() bool { return pod.Ready(context.Background()) }, wait, 20*time.Millisecond, "not ready:\n%s", f.logs)
}

// status is the reloader's report.
func (f *fixture) status() reloader.Status {
	st, err := f.pod.Status(context.Background(), "reloader")
	require.NoError(f.t, err, f.logs.String())
	return st
}

// waitLoaded waits until the pod reports serving hash.
func (f *fixture) waitLoaded(hash string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		st, err := f.pod.Status(context.Background(), "reloader")
		return err == nil && st.Loaded == hash
	}, wait, 10*time.Millisecond, "the pod did not load %.12s:\n%s", hash, f.logs)
}

// get sends GET path to the pod's HTTP port on a fresh connection.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+path, nil)
	require.NoError(f.t, err)
	req.Host = host
	resp, err := fresh.Do(req)
	require.NoError(f.t, err, f.logs.String())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp.StatusCode, string(body)
}

var fresh = &http.Client{Timeout: wait, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// masterPID is nginx's master process, from its pid file.
func (f *fixture) masterPID() string {
	data, err := os.ReadFile(filepath.Join(f.dir, "nginx.pid"))
	require.NoError(f.t, err)
	return strings.TrimSpace(string(data))
}

// TestReloadKeepsServing: route changes reach a running pod, whose nginx
// is never restarted, while keep-alive clients see no failed request and
// streams opened before the changes run to their end.
func TestReloadKeepsServing(t *testing.T) {
	b := startBackends(t)
	f := startPod(t, b, b.gatewayWith())
	_, _, hash := render(t, b.gatewayWith())
	f.waitLoaded(hash)
	assert.Equal(t, reloader.Status{Loaded: hash}, f.status())
	master := f.masterPID()

	streams := openStreams(t, 4)
	load := startLoad(t, 4)
	const changes = 5
	for i := range changes {
		path := "/new-" + strconv.Itoa(i)
		_, data, hash := render(t, b.gatewayWith(path))
		require.NoError(t, f.pod.Project(data))
		f.waitLoaded(hash)
		status, body := f.get(path + "/x")
		assert.Equal(t, http.StatusOK, status, body)
		assert.Equal(t, "path="+path+"/x", body)
		status, _ = f.get("/new-" + strconv.Itoa(i-1) + "/x")
		assert.Equal(t, http.StatusNotFound, status, "a route taken out still answers")
	}
	sent, failed := load.Stop()
	assert.Positive(t, sent)
	assert.Empty(t, failed, "requests failed on keep-alive connections across %d reloads", changes)

	close(b.release)
	for i, s := range streams {
		assert.NoError(t, s.Wait(wait), "stream %d was cut", i)
	}
	assert.Equal(t, master, f.masterPID(), "nginx was restarted, not reloaded")
}

// TestRefusedConfigurationKeepsTheOldOne: a configuration nginx refuses
// (here one naming a directive this nginx does not know, as a template
// rendered for a newer nginx would) is reported with nginx's words, and
// the pod keeps serving the previous one, on disk too, until a good one
// comes.
func TestRefusedConfigurationKeepsTheOldOne(t *testing.T) {
	b := startBackends(t)
	f := startPod(t, b, b.gatewayWith("/before"))
	_, _, good := render(t, b.gatewayWith("/before"))
	f.waitLoaded(good)
	onDisk, err := os.ReadFile(filepath.Join(f.dir, "v", "conf-d", "gateway.conf"))
	require.NoError(t, err)

	_, data, _ := render(t, b.gatewayWith("/after"))
	for k := range data {
		data[k] += "\nnewer_nginx_directive on;\n"
	}
	bad := reloader.Hash([]byte(data[firstKey(data)]))
	require.NoError(t, f.pod.Project(data))
	require.Eventually(t, func() bool { st := f.status(); return st.Refused != nil }, wait, 10*time.Millisecond, f.logs.String())
	st := f.status()
	assert.Equal(t, good, st.Loaded)
	assert.Equal(t, bad, st.Refused.Hash)
	assert.Equal(t, reloader.ReasonNginxTestFailed, st.Refused.Reason)
	assert.Contains(t, st.Refused.Message, `unknown directive "newer_nginx_directive"`)

	status, body := f.get("/before/x")
	assert.Equal(t, http.StatusOK, status, "the previous configuration stopped serving: %s", body)
	status, _ = f.get("/after/x")
	assert.Equal(t, http.StatusNotFound, status)
	after, err := os.ReadFile(filepath.Join(f.dir, "v", "conf-d", "gateway.conf"))
	require.NoError(t, err)
	assert.Equal(t, string(onDisk), string(after), "the refused file stayed on disk for the next test or start")

	_, data, next := render(t, b.gatewayWith("/after"))
	require.NoError(t, f.pod.Project(data))
	f.waitLoaded(next)
	assert.Nil(t, f.status().Refused, "a configuration that loads clears the refusal")
	status, _ = f.get("/after/x")
	assert.Equal(t, http.StatusOK, status)

	t.Run("a container restart starts on the last good configuration", func(t *testing.T) {
		require.NoError(t, f.pod.Stop(wait))
		spec, _, _ := render(t, b.gatewayWith())
		f.t = t
		f.start(spec, data2(data, "\nnewer_nginx_directive on;\n"))
		f.waitLoaded(next)
		st := f.status()
		require.NotNil(t, st.Refused)
		assert.Equal(t, reloader.ReasonNginxTestFailed, st.Refused.Reason)
		status, _ := f.get("/after/x")
		assert.Equal(t, http.StatusOK, status)
	})
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// data2 is data with suffix appended to its one key.
func data2(data map[string]string, suffix string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		out[k] = v + suffix
	}
	return out
}

// TestConnectionsEndAtTheShutdownBound: a stream and a WebSocket on a
// replaced configuration are not cut by the reload (the WebSocket still
// echoes); they end when worker_shutdown_timeout (here shortened to 2s)
// closes them.
func TestConnectionsEndAtTheShutdownBound(t *testing.T) {
	b := startBackends(t)
	f := startPod(t, b, b.gatewayWith(), setArg("--shutdown-timeout=", "2s"))
	s := openStreams(t, 1)[0]
	ws, err := dataplane.DialWebSocket("127.0.0.1:8080", host, "/chat/room")
	require.NoError(t, err, f.logs)
	defer ws.Close()
	got, err := dataplane.EchoOver(ws, []byte("before"))
	require.NoError(t, err)
	require.Equal(t, []byte("before"), got)

	_, data, hash := render(t, b.gatewayWith("/x"))
	require.NoError(t, f.pod.Project(data))
	f.waitLoaded(hash)
	after := s.Chunks.Load()
	require.Eventually(t, func() bool { return s.Chunks.Load() > after }, wait, 10*time.Millisecond,
		"the stream stopped with the reload")
	got, err = dataplane.EchoOver(ws, []byte("after"))
	require.NoError(t, err, "the WebSocket was cut by the reload")
	assert.Equal(t, []byte("after"), got)

	select {
	case err := <-s.Done():
		assert.Error(t, err, "the stream ended cleanly, yet the backend never finished it")
	case <-time.After(wait):
		t.Fatal("worker_shutdown_timeout did not close the stream")
	}
	// The old worker is gone by now, and its WebSocket with it: the
	// read fails (closed, or reset) rather than at the read deadline.
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(wait)))
	var msg []byte
	err = websocket.Message.Receive(ws, &msg)
	var timeout net.Error
	require.Error(t, err, "the WebSocket still carried a message")
	assert.False(t, errors.As(err, &timeout) && timeout.Timeout(), "worker_shutdown_timeout did not close the WebSocket: %v", err)
}

// TestRolloutStrategyNeverReloads: with --watch=false (the Rollout
// strategy) a pod serves the configuration it started with for life.
func TestRolloutStrategyNeverReloads(t *testing.T) {
	b := startBackends(t)
	gw := b.gatewayWith()
	gw.Spec.ConfigUpdateStrategy = v1.ConfigUpdateRollout
	f := startPod(t, b, gw)
	_, _, first := render(t, b.gatewayWith())
	f.waitLoaded(first)
	_, data, _ := render(t, b.gatewayWith("/x"))
	require.NoError(t, f.pod.Project(data))
	// Another change the reloader sees, and that it must ignore too.
	require.NoError(t, f.pod.Project(data2(data, "\n")))
	status, _ := f.get("/x/y")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, reloader.Status{Loaded: first}, f.status())
}

// TestShutdownFinishesRequests: the stop signal lets a request in flight
// finish, then the container exits cleanly.
func TestShutdownFinishesRequests(t *testing.T) {
	b := startBackends(t)
	f := startPod(t, b, b.gatewayWith())
	got := make(chan int, 1)
	go func() {
		status, _ := f.get("/users/slow?delay=500ms")
		got <- status
	}()
	select {
	case <-b.delayed:
	case <-time.After(wait):
		t.Fatal("the request did not reach the backend")
	}
	require.NoError(t, f.pod.Stop(wait))
	assert.Equal(t, http.StatusOK, <-got)
	assert.NoError(t, f.pod.Err(), f.logs.String())
}

// TestStatusServesOnlyTheStatus: the status port answers GET /status and
// nothing else.
func TestStatusServesOnlyTheStatus(t *testing.T) {
	b := startBackends(t)
	f := startPod(t, b, b.gatewayWith())
	for _, tc := range []struct{ method, path string }{{http.MethodPost, reloader.StatusPath}, {http.MethodGet, "/"}, {http.MethodGet, "/debug/pprof/"}} {
		req, err := http.NewRequest(tc.method, "http://127.0.0.1:8082"+tc.path, nil)
		require.NoError(t, err)
		resp, err := fresh.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Contains(t, []int{http.StatusNotFound, http.StatusMethodNotAllowed}, resp.StatusCode, "%s %s", tc.method, tc.path)
	}
	_, _, hash := render(t, b.gatewayWith())
	f.waitLoaded(hash)
	resp, err := fresh.Get("http://127.0.0.1:8082" + reloader.StatusPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var st reloader.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.Equal(t, reloader.Status{Loaded: hash}, st)
}

// setArg sets the value of the container command's flag named prefix.
func setArg(prefix, value string) func(*corev1.PodSpec) {
	return func(spec *corev1.PodSpec) {
		c := &spec.Containers[0]
		for i, a := range c.Command {
			if strings.HasPrefix(a, prefix) {
				c.Command[i] = prefix + value
			}
		}
	}
}

// openStreams opens n streams through the gateway.
func openStreams(t *testing.T, n int) []*gatewaypod.Stream {
	t.Helper()
	var out []*gatewaypod.Stream
	for i := range n {
		s, err := gatewaypod.OpenStream("127.0.0.1:8080", host, fmt.Sprintf("/stream/%d", i), wait)
		require.NoError(t, err)
		out = append(out, s)
	}
	return out
}

// startLoad sends requests on keep-alive connections until stopped.
func startLoad(t *testing.T, clients int) *gatewaypod.Load {
	l := gatewaypod.StartLoad("127.0.0.1:8080", host, clients, func(c, n int) string { return fmt.Sprintf("/users/%d-%d", c, n) })
	t.Cleanup(func() { _, _ = l.Stop() })
	return l
}

// syncBuffer collects the pod's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLogReachesThePodOutput: a gateway that asks for the access
// log has its lines on the gateway container's output, through the
// reloader that runs nginx (its /dev/stdout is the container's), one JSON
// object per request with the route's name, and no query string.
func TestAccessLogReachesThePodOutput(t *testing.T) {
	b := startBackends(t)
	gw := b.gatewayWith()
	gw.Spec.AccessLog = &v1.AccessLog{Format: v1.AccessLogJSON}
	f := startPod(t, b, gw)
	status, _ := f.get("/users/1?token=secret")
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, f.pod.Stop(wait))
	var entries []map[string]string
	for line := range strings.Lines(f.logs.String()) {
		if strings.HasPrefix(line, `{"time":`) {
			var e map[string]string
			require.NoError(t, json.Unmarshal([]byte(line), &e), line)
			entries = append(entries, e)
		}
	}
	require.Len(t, entries, 1, "one line for the one request:\n%s", f.logs)
	assert.Equal(t, "Prefix "+host+"/users", entries[0]["route"])
	assert.Equal(t, "/users/1", entries[0]["path"])
	assert.Equal(t, "200", entries[0]["status"])
	assert.NotContains(t, f.logs.String(), "secret")
}

// TestErrorLogHasNoQueryStrings: nginx logs a failed request's line, its
// upstream URI and its Referer whole; the pod's output has them without
// their query strings, where tokens travel.
func TestErrorLogHasNoQueryStrings(t *testing.T) {
	b := startBackends(t)
	// A backend that closes every connection unanswered: nginx answers
	// 502 and logs why, with the request.
	broken, err := netip.ParseAddrPort(dataplane.ServeConns(t, func(c net.Conn) { _ = c.Close() }))
	require.NoError(t, err)
	gw := b.gatewayWith()
	gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: host, Path: "/broken", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "broken", Port: v1.PortNumber(broken.Port())}})
	f := startPod(t, b, gw)
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:8080/broken/1?token=secret", nil)
	require.NoError(t, err)
	req.Host = host
	req.Header.Set("Referer", "https://elsewhere.example.com/login?code=secret")
	resp, err := fresh.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.NoError(t, f.pod.Stop(wait))
	logs := f.logs.String()
	assert.Contains(t, logs, `request: "GET /broken/1?[redacted] HTTP/1.1"`, "nginx logged the failed request")
	assert.Contains(t, logs, `referrer: "https://elsewhere.example.com/login?[redacted]"`)
	assert.NotContains(t, logs, "secret")
}
