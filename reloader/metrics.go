package reloader

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"example.com/apigateway-operator/render"
)

// Per-route metrics (issue 36). nginx sends one line per request of every
// gateway server to the reloader over syslog (render.ExpandMetricsLog);
// the reloader counts each into Prometheus metrics it serves on its
// metrics port. The reloader outlives every nginx reload, so the counters
// run on across route changes; nginx's new workers open the socket again.
//
// The series are bounded by the configuration: a line counts only with a
// route name and a backend that the served configuration (or the one
// served before it, whose workers may still finish requests, or the one
// being loaded) can write (render.MetricsLabels); any other line is
// dropped and counted in DroppedMetric. Labels are escaped by
// client_golang and cut to maxLabel bytes.

// MetricsPath is where the metrics server answers.
const MetricsPath = "/metrics"

// The metrics' names.
const (
	// RequestsMetric counts requests by route, backend and status class.
	RequestsMetric = "apigateway_gateway_requests_total"
	// DurationMetric is the histogram of $request_time by route.
	DurationMetric = "apigateway_gateway_request_duration_seconds"
	// UpstreamMetric is the histogram of $upstream_response_time by
	// route, for requests that reached a backend.
	UpstreamMetric = "apigateway_gateway_upstream_response_duration_seconds"
	// DroppedMetric counts lines not counted, by reason.
	DroppedMetric = "apigateway_gateway_metrics_lines_dropped_total"
)

// Reasons of DroppedMetric.
const (
	DropMalformed      = "malformed"
	DropUnknownRoute   = "unknown_route"
	DropUnknownBackend = "unknown_backend"
)

const (
	// maxLine bounds a line: a route's name is at most some 4,000 bytes
	// (render's maxNginxArgument), the rest under 200. A longer datagram
	// is cut by the read and dropped.
	maxLine = 8 << 10
	// maxLabel bounds a label's value; a longer route name is cut and
	// given a hash of the whole, so two names never share a label.
	maxLabel = 256
	// maxTimes bounds the times in $upstream_response_time (one per
	// upstream tried, and per internal redirect).
	maxTimes = 16
)

// durationBuckets reach past the default proxy timeouts (60 s).
var durationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Metrics counts the metrics log's lines.
type Metrics struct {
	registry           *prometheus.Registry
	requests, dropped  *prometheus.CounterVec
	duration, upstream *prometheus.HistogramVec

	mu sync.RWMutex
	// served, previous and candidate are the labels of the configuration
	// nginx serves, of the one before, and of one being loaded; routes
	// and backends their union, raw value to label.
	served, previous, candidate labelSet
	routes, backends            map[string]string
	// series are the counter and histograms of each route and backend
	// seen, raw values to series, resolved once: a line then costs two
	// map reads instead of hashing its labels three times
	// (WithLabelValues), the reloader's share of what the metrics cost
	// each request (B11). relabel empties it.
	series map[string]map[string]*routeSeries
}

// routeSeries are one route's and backend's series: the requests
// counter by status class and the upstream histogram, each resolved at
// its first line, and the route's duration histogram. The fields are
// written under Metrics.mu's write lock only.
type routeSeries struct {
	requests           [len(statusClasses)]prometheus.Counter
	duration, upstream prometheus.Observer
}

// labelSet is what a configuration's lines may name.
type labelSet struct{ routes, backends []string }

// NewMetrics returns Metrics that accept no route yet.
func NewMetrics() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RequestsMetric,
			Help: "Requests the gateway pod's nginx answered, by route (pathType host/path, \"\" for none), backend Service:port (\"\" for none) and status class.",
		}, []string{"route", "backend", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: DurationMetric, Buckets: durationBuckets,
			Help: "Time from the request's first byte to the response's last, as nginx's $request_time, by route.",
		}, []string{"route"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: UpstreamMetric, Buckets: durationBuckets,
			Help: "Time spent with the backend, as nginx's $upstream_response_time (summed over the backends tried), by route.",
		}, []string{"route"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: DroppedMetric,
			Help: "Metrics log lines not counted: malformed, or naming a route or backend the configuration has not.",
		}, []string{"reason"}),
	}
	m.registry.MustRegister(m.requests, m.duration, m.upstream, m.dropped)
	for _, reason := range []string{DropMalformed, DropUnknownRoute, DropUnknownBackend} {
		m.dropped.WithLabelValues(reason)
	}
	m.relabel()
	return m
}

// Loading accepts the labels of config, a rendered configuration about
// to be loaded, besides those of what is served: its new workers may
// answer before the reloader sees them serve.
func (m *Metrics) Loading(config []byte) {
	routes, backends := render.MetricsLabels(config)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.candidate = labelSet{routes, backends}
	m.relabel()
}

// Serving says nginx serves config now: its labels and those of the
// configuration served before it are accepted, and series of any other
// route or backend are deleted.
func (m *Metrics) Serving(config []byte) {
	routes, backends := render.MetricsLabels(config)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.previous, m.served, m.candidate = m.served, labelSet{routes, backends}, labelSet{}
	m.relabel()
}

// relabel recomputes the accepted labels and deletes the series of
// those no longer accepted. The caller holds mu (or m is new).
func (m *Metrics) relabel() {
	routes, backends := map[string]string{"": ""}, map[string]string{"": ""}
	for _, s := range []labelSet{m.served, m.previous, m.candidate} {
		for _, r := range s.routes {
			routes[r] = labelValue(r)
		}
		for _, b := range s.backends {
			backends[b] = labelValue(b)
		}
	}
	for r, label := range m.routes {
		if _, ok := routes[r]; !ok {
			m.requests.DeletePartialMatch(prometheus.Labels{"route": label})
			m.duration.DeleteLabelValues(label)
			m.upstream.DeleteLabelValues(label)
		}
	}
	for b, label := range m.backends {
		if _, ok := backends[b]; !ok {
			m.requests.DeletePartialMatch(prometheus.Labels{"backend": label})
		}
	}
	m.routes, m.backends = routes, backends
	m.series = map[string]map[string]*routeSeries{}
}

// labelValue is s cut to maxLabel bytes on a character boundary, with a
// hash of all of s when cut.
func labelValue(s string) string {
	if len(s) <= maxLabel {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "..." + hex.EncodeToString(sum[:8])
	cut := s[:maxLabel-len(suffix)]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + suffix
}

// Record counts one line of the metrics log.
func (m *Metrics) Record(line []byte) {
	l, err := parseLine(line)
	if err != nil {
		m.dropped.WithLabelValues(DropMalformed).Inc()
		return
	}
	m.mu.RLock()
	s := m.series[string(l.route)][string(l.backend)]
	var requests prometheus.Counter
	var upstream prometheus.Observer
	if s != nil {
		requests, upstream = s.requests[l.class], s.upstream
	}
	m.mu.RUnlock()
	if requests == nil || (l.upstream && upstream == nil) {
		var reason string
		if s, reason = m.resolve(l); reason != "" {
			m.dropped.WithLabelValues(reason).Inc()
			return
		}
		requests, upstream = s.requests[l.class], s.upstream
	}
	requests.Inc()
	s.duration.Observe(l.requestTime)
	if l.upstream {
		upstream.Observe(l.upstreamTime)
	}
}

// resolve finds or makes the series of l's route, backend and class (and
// upstream histogram, for a line that reached a backend: a series appears
// with its first line, as before), or says why the line is dropped: a
// route or backend the configurations have not.
func (m *Metrics) resolve(l logLine) (s *routeSeries, dropped string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	route, routeOK := m.routes[string(l.route)]
	backend, backendOK := m.backends[string(l.backend)]
	switch {
	case !routeOK:
		return nil, DropUnknownRoute
	case !backendOK:
		return nil, DropUnknownBackend
	}
	byBackend := m.series[string(l.route)]
	if byBackend == nil {
		byBackend = map[string]*routeSeries{}
		m.series[string(l.route)] = byBackend
	}
	s = byBackend[string(l.backend)]
	if s == nil {
		s = &routeSeries{duration: m.duration.WithLabelValues(route)}
		byBackend[string(l.backend)] = s
	}
	if s.requests[l.class] == nil {
		s.requests[l.class] = m.requests.WithLabelValues(route, backend, statusClasses[l.class])
	}
	if l.upstream && s.upstream == nil {
		s.upstream = m.upstream.WithLabelValues(route)
	}
	return s, ""
}

// statusClasses are the status_class labels, by the status's first digit.
var statusClasses = [...]string{1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Listen receives the metrics log on server, as nginx's syslog names it,
// until stop is called: a UDP host:port (on loopback, in the pod's own
// network namespace) or unix:/path, a datagram socket.
//
// nginx's socket never blocks a worker: a line it cannot send is lost.
// A Unix datagram socket queues at most net.unix.max_dgram_qlen
// datagrams (10 by default), and nginx warns in its error log of every
// line that finds the queue full; UDP queues as many as the receive
// buffer holds (some 200 at the default net.core.rmem_max, the cap of
// the 4 MiB asked for here), and a full buffer drops a line silently.
func (m *Metrics) Listen(server string, log *slog.Logger) (stop func(), err error) {
	var conn net.PacketConn
	if path, ok := strings.CutPrefix(server, "unix:"); ok {
		// A socket left by a previous run of the container.
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		conn, err = net.ListenPacket("unixgram", path)
	} else {
		conn, err = net.ListenPacket("udp", server)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics log: %w", err)
	}
	if b, ok := conn.(interface{ SetReadBuffer(bytes int) error }); ok {
		_ = b.SetReadBuffer(4 << 20)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, maxLine+1)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					log.Error("metrics log", "error", err)
				}
				return
			}
			m.Record(buf[:n])
		}
	}()
	return func() { _ = conn.Close(); <-done }, nil
}

// serveMetrics serves GET MetricsPath on addr until stop is called:
// nothing else, so the port can be opened to Prometheus without opening
// the status port's pushes.
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, h)
	return serve(ln, mux, "metrics server", log), nil
}
