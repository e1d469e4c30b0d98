package reloader

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/render/rendertest"
)

// header is nginx's syslog header for tag gw without host name.
const header = "<190>Nov  8 13:50:00 gw: "

func TestParseLine(t *testing.T) {
	long := strings.Repeat("a", maxLine)
	tests := map[string]struct {
		line string
		want *logLine // nil: malformed
	}{
		"proxied": {header + "Prefix api.example.com/users\tusers:8080\t200\t0.012\t0.010",
			&logLine{route: []byte("Prefix api.example.com/users"), backend: []byte("users:8080"), class: 2, requestTime: 0.012, upstreamTime: 0.010, upstream: true}},
		"no route, no backend": {header + "\t\t404\t0.000\t",
			&logLine{class: 4}},
		"no route, no backend, dashes": {header + "-\t-\t404\t0.000\t-",
			&logLine{class: 4}},
		"backends tried in turn": {header + "r\tb\t502\t1.500\t0.500, 1.000",
			&logLine{route: []byte("r"), backend: []byte("b"), class: 5, requestTime: 1.5, upstreamTime: 1.5, upstream: true}},
		"an internal redirect, a time missing": {header + "r\tb\t503\t0.002\t- : 0.001",
			&logLine{route: []byte("r"), backend: []byte("b"), class: 5, requestTime: 0.002, upstreamTime: 0.001, upstream: true}},
		"a two-digit day, a 3-digit priority": {"<190>Nov 28 13:50:00 gw: r\tb\t101\t10.000\t-",
			&logLine{route: []byte("r"), backend: []byte("b"), class: 1, requestTime: 10}},
		"non-ASCII route":       {header + "Prefix a.example.com/caf\u00e9\tb\t301\t0.000\t-", &logLine{route: []byte("Prefix a.example.com/caf\u00e9"), backend: []byte("b"), class: 3}},
		"too few fields":        {header + "r\tb\t200\t0.001", nil},
		"too many fields":       {header + "r\tb\t200\t0.001\t-\tx", nil},
		"empty backend":         {header + "r\t\t200\t0.001\t-", &logLine{route: []byte("r"), class: 2, requestTime: 0.001}},
		"control byte in route": {header + "r\x00\tb\t200\t0.001\t-", nil},
		"status 000":            {header + "r\tb\t000\t0.001\t-", nil},
		"status 600":            {header + "r\tb\t600\t0.001\t-", nil},
		"status of 4 digits":    {header + "r\tb\t2000\t0.001\t-", nil},
		"time without ms":       {header + "r\tb\t200\t1\t-", nil},
		"negative time":         {header + "r\tb\t200\t-1.000\t-", nil},
		"exponent":              {header + "r\tb\t200\t1e3.000\t-", nil},
		"huge time":             {header + "r\tb\t200\t12345678901.000\t-", nil},
		"bad separator":         {header + "r\tb\t200\t0.001\t0.001;0.002", nil},
		"trailing separator":    {header + "r\tb\t200\t0.001\t0.001, ", nil},
		"too many times":        {header + "r\tb\t200\t0.001\t" + strings.Repeat("0.001, ", maxTimes) + "0.001", nil},
		"a newline at the end":  {header + "r\tb\t200\t0.001\t-\n", nil},
		"another tag":           {"<190>Nov  8 13:50:00 nginx: r\tb\t200\t0.001\t-", nil},
		"a host name":           {"<190>Nov  8 13:50:00 pod gw: r\tb\t200\t0.001\t-", nil},
		"no priority":           {"Nov  8 13:50:00 gw: r\tb\t200\t0.001\t-", nil},
		"long priority":         {"<1900>Nov  8 13:50:00 gw: r\tb\t200\t0.001\t-", nil},
		"empty":                 {"", nil},
		"past maxLine":          {header + long + "\tb\t200\t0.001\t-", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseLine([]byte(tc.line))
			if tc.want == nil {
				assert.ErrorIs(t, err, errMalformed)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, string(tc.want.route), string(got.route))
			assert.Equal(t, string(tc.want.backend), string(got.backend))
			assert.Equal(t, tc.want.class, got.class)
			assert.InDelta(t, tc.want.requestTime, got.requestTime, 1e-9)
			assert.InDelta(t, tc.want.upstreamTime, got.upstreamTime, 1e-9)
			assert.Equal(t, tc.want.upstream, got.upstream)
		})
	}
}

// FuzzParseLine: no input panics the parser, and what it accepts has a
// status class, times that are not negative, and a route and backend
// without control bytes, each a part of the line.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		header + "Prefix api.example.com/users\tusers:8080\t200\t0.012\t0.010",
		header + "-\t-\t404\t0.000\t-",
		header + "r\tb\t502\t1.500\t0.500, 1.000 : -",
		"<190>Nov 28 13:50:00 gw: r\tb\t101\t10.000\t-",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := parseLine(line)
		if err != nil {
			return
		}
		if l.class < 1 || l.class > 5 || l.requestTime < 0 || l.upstreamTime < 0 {
			t.Fatalf("accepted %q as %+v", line, l)
		}
		if !printable(l.route) || !printable(l.backend) || len(line) > maxLine {
			t.Fatalf("accepted %q as %+v", line, l)
		}
	})
}

// metricsOf is a Metrics serving gw's rendered configuration.
func metricsOf(t *testing.T, gw *v1.APIGateway) (*Metrics, string) {
	t.Helper()
	config, err := render.Config(gw, render.Options{})
	require.NoError(t, err)
	m := NewMetrics()
	m.Serving([]byte(config))
	return m, config
}

func line(route, backend, status string) []byte {
	return []byte(header + route + "\t" + backend + "\t" + status + "\t0.004\t0.003")
}

// TestMetricsCountOnlyTheConfiguration: a line counts under its route,
// backend and status class; one naming a route or backend the
// configuration has not, or malformed, is dropped and counted by reason.
func TestMetricsCountOnlyTheConfiguration(t *testing.T) {
	m, _ := metricsOf(t, rendertest.Gateway("gw", rendertest.Route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080)))
	route := "Prefix api.example.com/users"
	for range 3 {
		m.Record(line(route, "users:8080", "200"))
	}
	m.Record(line(route, "users:8080", "503"))
	m.Record(line("-", "-", "404"))
	m.Record(line("Prefix evil.example.com/x", "users:8080", "200"))
	m.Record(line(route, "evil:1", "200"))
	m.Record([]byte("garbage"))

	assert.InDelta(t, 3, testutil.ToFloat64(m.requests.WithLabelValues(route, "users:8080", "2xx")), 0)
	assert.InDelta(t, 1, testutil.ToFloat64(m.requests.WithLabelValues(route, "users:8080", "5xx")), 0)
	assert.InDelta(t, 1, testutil.ToFloat64(m.requests.WithLabelValues("", "", "4xx")), 0)
	for reason, n := range map[string]float64{DropUnknownRoute: 1, DropUnknownBackend: 1, DropMalformed: 1} {
		assert.InDelta(t, n, testutil.ToFloat64(m.dropped.WithLabelValues(reason)), 0, reason)
	}
	assert.Equal(t, 3, testutil.CollectAndCount(m.requests), "series: 2xx, 5xx, and 4xx of no route")
	assert.Equal(t, 2, testutil.CollectAndCount(m.duration))
}

// TestMetricsFollowTheConfiguration: a route of the configuration being
// loaded counts before it serves, one taken out stays while its workers
// may finish (the previous configuration), and goes with the next.
func TestMetricsFollowTheConfiguration(t *testing.T) {
	r := func(path string) v1.Route {
		return rendertest.Route("api.example.com", path, v1.PathTypePrefix, "web", 80)
	}
	m, _ := metricsOf(t, rendertest.Gateway("gw", r("/a")))
	next, err := render.Config(rendertest.Gateway("gw", r("/b")), render.Options{})
	require.NoError(t, err)
	m.Loading([]byte(next))
	m.Record(line("Prefix api.example.com/b", "web:80", "200"))
	m.Serving([]byte(next))
	m.Record(line("Prefix api.example.com/a", "web:80", "200"))
	assert.Equal(t, 2, testutil.CollectAndCount(m.requests))
	assert.InDelta(t, 0, testutil.ToFloat64(m.dropped.WithLabelValues(DropUnknownRoute)), 0)

	third, err := render.Config(rendertest.Gateway("gw", r("/c")), render.Options{})
	require.NoError(t, err)
	m.Serving([]byte(third))
	assert.Equal(t, 1, testutil.CollectAndCount(m.requests), "/a's series is gone, /b's stays")
	m.Record(line("Prefix api.example.com/a", "web:80", "200"))
	assert.InDelta(t, 1, testutil.ToFloat64(m.dropped.WithLabelValues(DropUnknownRoute)), 0)
}

// TestMetricsSeriesOf100Routes: a gateway of 100 routes, each with its
// own backend, however many lines of whatever content arrive, has at
// most routes × backends seen × 5 classes request series, one duration
// histogram per route, and label values of at most maxLabel bytes.
func TestMetricsSeriesOf100Routes(t *testing.T) {
	gw := rendertest.Gateway("gw")
	for i := range 100 {
		host := fmt.Sprintf("h%d.example.com", i)
		if i == 0 {
			host = strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + ".example.com"
		}
		gw.Spec.Routes = append(gw.Spec.Routes, rendertest.Route(host, "/"+strings.Repeat("p", 200), v1.PathTypePrefix, fmt.Sprintf("svc-%d", i), 8080))
	}
	m, config := metricsOf(t, gw)
	routes, backends := render.MetricsLabels([]byte(config))
	require.Len(t, routes, 100)
	require.Len(t, backends, 100)
	for i, r := range routes {
		for _, status := range []string{"101", "200", "302", "404", "503"} {
			m.Record(line(r, backends[i], status))
			m.Record(line(r, "svc-x:1", status))
			m.Record(line(r+"x", backends[i], status))
			m.Record(line(fmt.Sprintf("Prefix h%d.example.com/%d", i, i), backends[i], status))
		}
	}
	assert.Equal(t, 500, testutil.CollectAndCount(m.requests))
	assert.Equal(t, 100, testutil.CollectAndCount(m.duration))
	assert.Equal(t, 100, testutil.CollectAndCount(m.upstream))
	families, err := m.registry.Gather()
	require.NoError(t, err)
	series := 0
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			series++
			for _, l := range metric.GetLabel() {
				assert.LessOrEqual(t, len(l.GetValue()), maxLabel, "%s %s", f.GetName(), l.GetName())
			}
		}
	}
	t.Logf("%d metric children for 100 routes (histograms count once)", series)
	assert.Equal(t, 500+100+100+3, series)
}

func TestLabelValue(t *testing.T) {
	assert.Equal(t, "Prefix a.example.com/x", labelValue("Prefix a.example.com/x"))
	long := "Prefix a.example.com/" + strings.Repeat("\u00e9", 300)
	got := labelValue(long)
	assert.LessOrEqual(t, len(got), maxLabel)
	assert.True(t, strings.HasPrefix(long, strings.SplitN(got, "...", 2)[0]))
	assert.NotEqual(t, got, labelValue(long+"x"), "two long names share no label")
}

// BenchmarkRecord is the reloader's share of what the metrics cost each
// request: one line of a known route and backend counted.
func BenchmarkRecord(b *testing.B) {
	config, err := render.Config(rendertest.Gateway("gw", rendertest.Route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080)), render.Options{})
	require.NoError(b, err)
	m := NewMetrics()
	m.Serving([]byte(config))
	l := line("Prefix api.example.com/users", "users:8080", "200")
	b.ReportAllocs()
	for b.Loop() {
		m.Record(l)
	}
}
