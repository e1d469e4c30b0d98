package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/render/rendertest"
	"example.com/apigateway-operator/test/dataplane"
)

const (
	// b10Rows, in the bench run B10 starts in a network namespace, names
	// the file its row goes to.
	b10Rows = "APIGATEWAY_BENCH_B10_ROWS"
	b10Host = "b10.example.com"
	// b10Clients keep-alive clients load one configuration at a time.
	b10Clients = 16
	// b10Window is how long each configuration and body size is loaded
	// in a round; b10Rounds rounds alternate the three configurations,
	// short windows so that the shared machine's drift hits each alike.
	// 6 windows a round: some 50 s in all.
	b10Window = time.Second
	b10Rounds = 8
	// b10Refill is the start of each window in which the pool of (a)
	// refills: the rendered keepalive_timeout (1 s) closes it in the
	// other configurations' windows. Connections opened after it are the
	// steady state the target is about.
	b10Refill = 100 * time.Millisecond
	// b10MaxPerClient bounds a client's requests in one window, whatever
	// the machine's speed.
	b10MaxPerClient = 1_000_000
	// b10Workers is both nginx's worker_processes: the same for (a) and (b).
	b10Workers = 1
	// b10TunedPort is where (b) listens: the namespace is the bench's
	// own, and the rendered configuration (a) takes the pods' ports,
	// render.HTTPPort and render.HealthPort.
	b10TunedPort = 9080
	b10LargeBody = 64 << 10
)

// b10Sizes are the bodies the backend answers, by path.
var b10Sizes = []struct{ name, path string }{{"small (3 B)", "/b10/small"}, {"64 KiB", "/b10/large"}}

// b10Configs are the three ways to the backend: (a) the gateway's
// rendered configuration, (b) nginx as its documentation recommends, (c)
// the backend directly.
var b10Configs = []string{"a", "b", "c"}

// benchB10 loads a Go backend through the gateway's rendered nginx
// configuration, through a hand-tuned nginx reverse proxy, and directly,
// in interleaved rounds. The rendered configuration binds the pods'
// ports, so B10 runs in a network namespace of its own, as B8 does.
func benchB10(scale float64) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, _ *harness) ([]row, error) {
		if out := os.Getenv(b10Rows); out != "" {
			r, err := runB10(ctx)
			if err != nil {
				r = row{ID: "B10", What: "error", Figures: err.Error(), Met: "error"}
			}
			return []row{r}, errors.Join(err, writeRows(out, []row{r}))
		}
		return rowsInNamespace(ctx, "B10", b10Rows, "-budget-scale", strconv.FormatFloat(scale, 'f', -1, 64))
	}
}

// b10Backend is the Go backend: one listener per configuration, so that
// the connections each opens are counted apart.
type b10Backend struct {
	servers []*http.Server
	ports   map[string]int32
	opened  map[string]*atomic.Int64
}

func startB10Backend() (*b10Backend, error) {
	small, large := []byte("ok\n"), bytes.Repeat([]byte("x"), b10LargeBody)
	mux := http.NewServeMux()
	body := func(b []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			_, _ = w.Write(b)
		}
	}
	mux.Handle(b10Sizes[0].path, body(small))
	mux.Handle(b10Sizes[1].path, body(large))
	b := &b10Backend{ports: map[string]int32{}, opened: map[string]*atomic.Int64{}}
	for _, c := range b10Configs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.stop()
			return nil, err
		}
		n := &atomic.Int64{}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute, ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		}}
		b.servers = append(b.servers, srv)
		b.ports[c], b.opened[c] = int32(ln.Addr().(*net.TCPAddr).Port), n
		go func() { _ = srv.Serve(ln) }()
	}
	return b, nil
}

func (b *b10Backend) stop() {
	for _, s := range b.servers {
		_ = s.Close()
	}
}

// b10Rendered is configuration (a): what the renderer writes for a
// gateway whose one route's backend Service has the backend's address as
// its ClusterIP, as the operator renders it in a cluster.
func b10Rendered(port int32) (string, error) {
	gw := rendertest.Gateway("b10", rendertest.Route(b10Host, "/", v1.PathTypePrefix, "backend", port))
	return render.Config(gw, render.Options{Resolvers: []string{"127.0.0.1"},
		ServiceAddresses: func(namespace, name string, p int32) (netip.Addr, bool) {
			return netip.AddrFrom4([4]byte{127, 0, 0, 1}), namespace == gw.Namespace && name == "backend" && p == port
		}})
}

// b10Tuned is configuration (b): a reverse proxy as nginx's
// documentation recommends for keep-alive upstream connections
// (ngx_http_upstream_module, "keepalive"), with the rendered pool size.
func b10Tuned(port int32, pool int) string {
	return fmt.Sprintf(`upstream b10_backend {
    server 127.0.0.1:%d;
    keepalive %d;
}
server {
    listen 127.0.0.1:%d;
    location / {
        proxy_pass http://b10_backend;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
    }
}
`, port, pool, b10TunedPort)
}

// b10Pool reads the per-worker pool size the rendered configuration gives
// its upstream, so the target follows what is rendered.
func b10Pool(config string) (int, error) {
	m := regexp.MustCompile(`(?m)^upstream [^{]+\{[^}]*\n\s*keepalive (\d+);`).FindStringSubmatch(config)
	if m == nil {
		return 0, errors.New("the rendered configuration has no pooled upstream (keepalive) for the backend")
	}
	return strconv.Atoi(m[1])
}

// b10MainConf is the main configuration both nginx run, the gateway
// image's (test/node's) with b10Workers workers and the prefix's paths.
const b10MainConf = `daemon off;
master_process on;
worker_processes WORKERS;
USER
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    keepalive_timeout 65;
    client_body_temp_path PREFIX/client_body;
    proxy_temp_path PREFIX/proxy;
    fastcgi_temp_path PREFIX/fastcgi;
    uwsgi_temp_path PREFIX/uwsgi;
    scgi_temp_path PREFIX/scgi;
    include PREFIX/conf.d/*.conf;
}
`

// b10Nginx is one nginx process.
type b10Nginx struct {
	cmd    *exec.Cmd
	exited chan struct{}
	prefix string
}

// startB10Nginx runs nginx on config (http-level) in a directory under
// dir and waits until GET path on addr answers 200.
func startB10Nginx(ctx context.Context, dir, name, config, addr string) (*b10Nginx, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	prefix := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(prefix, "conf.d"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(prefix, "conf.d", "gateway.conf"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers that can write the prefix
	}
	main := strings.NewReplacer("WORKERS", strconv.Itoa(b10Workers), "USER", user, "PREFIX", prefix).Replace(b10MainConf)
	mainPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(mainPath, []byte(main), 0o644); err != nil {
		return nil, err
	}
	n := &b10Nginx{cmd: exec.Command(bin, dataplane.Args(prefix, mainPath)...), exited: make(chan struct{}), prefix: prefix}
	if err := n.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	for deadline := time.Now().Add(dataplane.Wait); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
		select {
		case <-n.exited:
			return nil, fmt.Errorf("nginx (%s) exited: %s", name, n.errorLog())
		default:
		}
		if _, err := b10Load(addr, b10Host, b10Sizes[0].path, 1, 1); err == nil {
			return n, nil
		}
	}
	n.stop()
	return nil, fmt.Errorf("nginx (%s) did not answer on %s within %v: %s", name, addr, dataplane.Wait, n.errorLog())
}

func (n *b10Nginx) errorLog() string {
	data, _ := os.ReadFile(filepath.Join(n.prefix, "error.log"))
	return string(data)
}

// stop ends nginx (SIGTERM, its fast shutdown), killing it if it does not
// exit in time.
func (n *b10Nginx) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(dataplane.Wait):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
}

// b10Result is what one configuration and body size measured over the
// rounds.
type b10Result struct {
	requests int64
	took     time.Duration
	lat      latencies
	// opened backend connections, and of those steady (after b10Refill)
	// for the steady requests begun after it.
	opened, steady, steadyRequests int64
}

func (r b10Result) rate() float64 { return float64(r.requests) / r.took.Seconds() }

// b10Measure is what one window of load measured.
type b10Measure struct {
	requests int64
	lat      latencies
	// steady are the requests begun after b10Refill.
	steady int64
}

// b10Load sends requests for path on clients keep-alive connections to
// addr for d (or, with d 0, one request each) and returns what answered.
// A client whose connection nginx closes (keepalive_requests) opens
// another, outside the request's time.
func b10Load(addr, host, path string, clients int, d time.Duration) (b10Measure, error) {
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: apigateway-bench\r\n\r\n")
	t0 := time.Now()
	deadline, refilled := t0.Add(d), t0.Add(b10Refill)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		all   b10Measure
		first error
	)
	for range clients {
		wg.Go(func() {
			lat, steady, err := b10Client(addr, req, deadline, refilled)
			mu.Lock()
			defer mu.Unlock()
			all.requests += int64(len(lat))
			all.steady += steady
			all.lat = append(all.lat, lat...)
			if first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	return all, first
}

// b10Client is one keep-alive client: requests until deadline (at least
// one), each bounded by dataplane.Wait, steady those begun after
// refilled.
func b10Client(addr string, req []byte, deadline, refilled time.Time) (lat latencies, steady int64, err error) {
	var (
		conn net.Conn
		br   *bufio.Reader
	)
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	for i := 0; i < b10MaxPerClient && (i == 0 || time.Now().Before(deadline)); i++ {
		if conn == nil {
			if conn, err = net.DialTimeout("tcp", addr, dataplane.Wait); err != nil {
				return lat, steady, err
			}
			br = bufio.NewReaderSize(conn, 32<<10)
		}
		t0 := time.Now()
		_ = conn.SetDeadline(t0.Add(dataplane.Wait))
		if _, err = conn.Write(req); err != nil {
			return lat, steady, err
		}
		closed, err := b10ReadResponse(br)
		if err != nil {
			return lat, steady, err
		}
		lat = append(lat, time.Since(t0))
		if t0.After(refilled) {
			steady++
		}
		if closed {
			_ = conn.Close()
			conn = nil
		}
	}
	return lat, steady, nil
}

// b10ReadResponse reads one 200 response with a Content-Length, its body
// discarded, and whether the server closes the connection after it.
func b10ReadResponse(br *bufio.Reader) (closed bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return false, err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return false, fmt.Errorf("answered %q", bytes.TrimSpace(line))
	}
	length := -1
	for {
		if line, err = br.ReadSlice('\n'); err != nil {
			return false, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		k, v, _ := bytes.Cut(line, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return false, err
			}
		case bytes.EqualFold(k, []byte("Connection")):
			closed = bytes.EqualFold(v, []byte("close"))
		}
	}
	if length < 0 {
		return false, errors.New("a response without Content-Length")
	}
	_, err = br.Discard(length)
	return closed, err
}

// runB10 is B10 inside its namespace.
func runB10(ctx context.Context) (row, error) {
	load0 := loadAverage()
	backend, err := startB10Backend()
	if err != nil {
		return row{}, err
	}
	defer backend.stop()
	rendered, err := b10Rendered(backend.ports["a"])
	if err != nil {
		return row{}, err
	}
	pool, err := b10Pool(rendered)
	if err != nil {
		return row{}, err
	}
	dir, err := os.MkdirTemp("", "bench-b10-nginx-")
	if err != nil {
		return row{}, err
	}
	defer os.RemoveAll(dir)
	addrs := map[string]string{
		"a": net.JoinHostPort("127.0.0.1", strconv.Itoa(render.HTTPPort)),
		"b": net.JoinHostPort("127.0.0.1", strconv.Itoa(b10TunedPort)),
		"c": net.JoinHostPort("127.0.0.1", strconv.Itoa(int(backend.ports["c"]))),
	}
	for _, c := range []struct{ name, config string }{{"a", rendered}, {"b", b10Tuned(backend.ports["b"], pool)}} {
		n, err := startB10Nginx(ctx, dir, c.name, c.config, addrs[c.name])
		if err != nil {
			return row{}, err
		}
		defer n.stop()
	}
	results, err := b10Measured(ctx, addrs, backend)
	if err != nil {
		return row{}, err
	}
	return b10Row(results, pool, load0, loadAverage()), nil
}

// b10Measured loads each configuration and body size for b10Window per
// round, the configurations' order rotating each round so that drift
// and order hit each alike, after one unrecorded warm-up round.
func b10Measured(ctx context.Context, addrs map[string]string, backend *b10Backend) (map[string]*b10Result, error) {
	results := map[string]*b10Result{}
	for round := -1; round < b10Rounds; round++ {
		for _, size := range b10Sizes {
			for i := range b10Configs {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				c := b10Configs[(i+max(round, 0))%len(b10Configs)]
				window := b10Window
				if round < 0 {
					window = b10Window / 4
				}
				opened0, t0 := backend.opened[c].Load(), time.Now()
				var refilled atomic.Int64
				fired := make(chan struct{})
				timer := time.AfterFunc(b10Refill, func() { refilled.Store(backend.opened[c].Load()); close(fired) })
				m, err := b10Load(addrs[c], b10Host, size.path, b10Clients, window)
				if timer.Stop() {
					close(fired) // a window that ended first: nothing steady
					refilled.Store(backend.opened[c].Load())
				}
				<-fired
				if err != nil {
					return nil, fmt.Errorf("(%s) %s: %w", c, size.name, err)
				}
				if round < 0 {
					continue
				}
				r := results[c+size.path]
				if r == nil {
					r = &b10Result{}
					results[c+size.path] = r
				}
				r.requests += m.requests
				r.took += time.Since(t0)
				r.lat = append(r.lat, m.lat...)
				opened := backend.opened[c].Load()
				r.opened += opened - opened0
				r.steady += opened - refilled.Load()
				r.steadyRequests += m.steady
			}
		}
	}
	return results, nil
}

// b10Row is the table's row: per body size, each configuration's
// requests/s and latency, and the ratios the targets hold.
func b10Row(results map[string]*b10Result, pool int, load0, load1 string) row {
	ok := true
	var figures []string
	var openedA, requestsA, steadyA, steadyRequestsA int64
	for _, size := range b10Sizes {
		a, b, c := results["a"+size.path], results["b"+size.path], results["c"+size.path]
		rate, p99 := a.rate()/b.rate(), float64(a.lat.percentile(0.99))/float64(b.lat.percentile(0.99))
		ok = ok && rate >= 0.95 && p99 <= 1.1
		figures = append(figures, fmt.Sprintf("%s: (a) %.0f req/s (%s), (b) %.0f req/s (%s), (c) %.0f req/s (%s); (a)/(b) %.2f, p99 (a)/(b) %.2f, (a)/(c) %.2f",
			size.name, a.rate(), a.lat, b.rate(), b.lat, c.rate(), c.lat, rate, p99, a.rate()/c.rate()))
		openedA += a.opened
		requestsA += a.requests
		steadyA += a.steady
		steadyRequestsA += a.steadyRequests
	}
	perTenK := func(n, requests int64) float64 { return float64(n) * 10_000 / float64(max(requests, 1)) }
	steady := perTenK(steadyA, steadyRequestsA)
	ok = ok && steady <= float64(pool*b10Workers)
	figures = append(figures, fmt.Sprintf("backend connections through (a): %.1f per 10,000 requests once the pool is filled (%d for %d), %.1f counting each window's first %v (%d for %d); load average %s → %s",
		steady, steadyA, steadyRequestsA, perTenK(openedA, requestsA), b10Refill, openedA, requestsA, load0, load1))
	return row{ID: "B10",
		What: fmt.Sprintf("%d keep-alive clients, %d rounds of %v per configuration and body, nginx %d worker: (a) the rendered configuration (pooled upstream), (b) nginx tuned as its documentation recommends, (c) the backend directly",
			b10Clients, b10Rounds, b10Window, b10Workers),
		Figures: strings.Join(figures, "; "),
		Target:  fmt.Sprintf("(a)/(b) ≥ 0.95 in requests/s and p99 (a)/(b) ≤ 1.1, both bodies; ≤ %d backend connections per 10,000 requests once the pool is filled (pool %d × %d worker)", pool*b10Workers, pool, b10Workers),
		Met:     met(ok)}
}

// loadAverage is the machine's 1-minute load average.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
