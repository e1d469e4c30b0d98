package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/render"
)

const (
	// b11Rows, in the bench run B11 starts in a network namespace, names
	// the file its row goes to.
	b11Rows = "APIGATEWAY_BENCH_B11_ROWS"
	// b11Rounds rounds of b10Window alternate the two configurations.
	b11Rounds = 10
	// b11Port and b11HealthPort are where (m) listens: (a) takes the
	// pods' ports.
	b11Port, b11HealthPort = 9180, 9181
	// b11Log is where (m) sends its metrics log, as the pods' reloader
	// takes it (controller's --metrics-log): UDP on loopback.
	b11Log = "127.0.0.1:9184"
)

// benchB11 is the metrics' cost per request: B10's rendered
// configuration (a) as the pods' reloader runs it without metrics (the
// marker left a comment), and (m) the same with the metrics log
// expanded, sent to the reloader's own counter (package reloader's
// Metrics) in this process, in interleaved windows.
func benchB11(scale float64) func(context.Context, *harness) ([]row, error) {
	return func(ctx context.Context, _ *harness) ([]row, error) {
		if out := os.Getenv(b11Rows); out != "" {
			r, err := runB11(ctx)
			if err != nil {
				r = row{ID: "B11", What: "error", Figures: err.Error(), Met: "error"}
			}
			return []row{r}, errors.Join(err, writeRows(out, []row{r}))
		}
		return rowsInNamespace(ctx, "B11", b11Rows, "-budget-scale", strconv.FormatFloat(scale, 'f', -1, 64))
	}
}

func runB11(ctx context.Context) (row, error) {
	load0 := loadAverage()
	backend, err := startB10Backend()
	if err != nil {
		return row{}, err
	}
	defer backend.stop()
	dir, err := os.MkdirTemp("", "bench-b11-")
	if err != nil {
		return row{}, err
	}
	defer os.RemoveAll(dir)
	plain, err := b10Rendered(backend.ports["a"])
	if err != nil {
		return row{}, err
	}
	withMetrics, err := b11WithMetrics(backend.ports["b"], b11Log)
	if err != nil {
		return row{}, err
	}
	metrics := reloader.NewMetrics()
	stop, err := metrics.Listen(b11Log, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return row{}, err
	}
	defer stop()
	metrics.Serving([]byte(withMetrics))
	addrs := map[string]string{
		"a": net.JoinHostPort("127.0.0.1", strconv.Itoa(render.HTTPPort)),
		"m": net.JoinHostPort("127.0.0.1", strconv.Itoa(b11Port)),
	}
	for _, c := range []struct{ name, config string }{{"a", plain}, {"m", withMetrics}} {
		n, err := startB10Nginx(ctx, dir, c.name, c.config, addrs[c.name])
		if err != nil {
			return row{}, err
		}
		defer n.stop()
	}
	counted0 := b11Counted(metrics)
	results := map[string]*b10Result{"a": {}, "m": {}}
	order := []string{"a", "m"}
	for round := -1; round < b11Rounds; round++ {
		for i := range order {
			if err := ctx.Err(); err != nil {
				return row{}, err
			}
			c := order[(i+max(round, 0))%len(order)]
			t0 := time.Now()
			m, err := b10Load(addrs[c], b10Host, b10Sizes[0].path, b10Clients, b10Window)
			if err != nil {
				return row{}, fmt.Errorf("(%s): %w", c, err)
			}
			if round < 0 {
				counted0 = b11Settled(metrics)
				continue
			}
			results[c].requests += m.requests
			results[c].took += time.Since(t0)
			results[c].lat = append(results[c].lat, m.lat...)
		}
	}
	counted := b11Settled(metrics) - counted0
	return b11Row(results["a"], results["m"], counted, load0, loadAverage()), nil
}

// b11WithMetrics is B10's rendered configuration on B11's ports with
// the metrics log sent to server, as the reloader expands it.
func b11WithMetrics(port int32, server string) (string, error) {
	config, err := b10Rendered(port)
	if err != nil {
		return "", err
	}
	config = strings.NewReplacer(
		"listen "+strconv.Itoa(render.HTTPPort)+" default_server;", "listen 127.0.0.1:"+strconv.Itoa(b11Port)+" default_server;",
		"listen "+strconv.Itoa(render.HTTPPort)+";", "listen 127.0.0.1:"+strconv.Itoa(b11Port)+";",
		"listen "+strconv.Itoa(render.HealthPort)+";", "listen 127.0.0.1:"+strconv.Itoa(b11HealthPort)+";",
	).Replace(config)
	expanded, err := render.ExpandMetricsLog([]byte(config), server)
	return string(expanded), err
}

// b11Counted is the sum of the requests counter's series.
func b11Counted(m *reloader.Metrics) float64 {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", reloader.MetricsPath, nil))
	total := 0.0
	sc := bufio.NewScanner(rec.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, reloader.RequestsMetric+"{") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			total += v
		}
	}
	return total
}

// b11Settled is b11Counted once it stops growing: the last lines reach
// the counter a little after their responses.
func b11Settled(m *reloader.Metrics) float64 {
	last := b11Counted(m)
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		now := b11Counted(m)
		if now == last {
			return now
		}
		last = now
	}
	return last
}

func b11Row(a, m *b10Result, counted float64, load0, load1 string) row {
	rate, p99 := m.rate()/a.rate(), float64(m.lat.percentile(0.99))/float64(a.lat.percentile(0.99))
	lost := 1 - counted/float64(max(m.requests, 1))
	ok := rate >= 0.9 && p99 <= 1.2 && lost <= 0.001
	return row{ID: "B11",
		What: fmt.Sprintf("%d keep-alive clients, %d rounds of %v per configuration, 3-byte bodies, nginx %d worker: (m) B10's rendered configuration with the metrics log to the reloader's counter vs (a) without",
			b10Clients, b11Rounds, b10Window, b10Workers),
		Figures: fmt.Sprintf("(a) %.0f req/s (%s); (m) %.0f req/s (%s); (m)/(a) %.3f, p99 (m)/(a) %.2f; %d of %d requests through (m) counted (%.3f%% lost); load average %s → %s",
			a.rate(), a.lat, m.rate(), m.lat, rate, p99, int64(counted), m.requests, 100*lost, load0, load1),
		Target: "(m)/(a) ≥ 0.9 in requests/s, p99 (m)/(a) ≤ 1.2, ≤ 0.1% of lines lost",
		Met:    met(ok)}
}
