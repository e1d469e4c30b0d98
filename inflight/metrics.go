package inflight

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// published is the budget and the gate the metrics report: the last made
// (a process serves one webhook server; tests make several).
var published struct {
	budget atomic.Pointer[Budget]
	gate   atomic.Pointer[gate]
}

var (
	connectionsDesc = prometheus.NewDesc("apigateway_webhook_connections",
		"Connections open to the webhook server from callers without a verified client certificate, by state: "+
			"waiting for their peer, or working (a request in its handler).", []string{"state"}, nil)
	connectionsClosedDesc = prometheus.NewDesc("apigateway_webhook_connections_closed_total",
		"Connections the webhook server's connection cap closed: shed (the one that had waited longest, to make room) "+
			"or refused (a new one, every other being in a handler).", []string{"reason"}, nil)
	inflightBytesDesc = prometheus.NewDesc("apigateway_webhook_inflight_bytes",
		"Bytes the webhook requests in flight hold together, as the in-flight budget counts them.", nil, nil)
	inflightLimitDesc = prometheus.NewDesc("apigateway_webhook_inflight_limit_bytes",
		"The in-flight budget: what the webhook requests in flight may hold together (--webhook-max-inflight-bytes).", nil, nil)
)

// collector reports the published budget and gate.
type collector struct{}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{connectionsDesc, connectionsClosedDesc, inflightBytesDesc, inflightLimitDesc} {
		ch <- d
	}
}

func (collector) Collect(ch chan<- prometheus.Metric) {
	if g := published.gate.Load(); g != nil {
		open, working := g.counts()
		ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.GaugeValue, float64(open-working), "waiting")
		ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.GaugeValue, float64(working), "working")
		ch <- prometheus.MustNewConstMetric(connectionsClosedDesc, prometheus.CounterValue, float64(g.shed.Load()), "shed")
		ch <- prometheus.MustNewConstMetric(connectionsClosedDesc, prometheus.CounterValue, float64(g.refused.Load()), "refused")
	}
	if b := published.budget.Load(); b != nil {
		now, _ := b.Holding()
		ch <- prometheus.MustNewConstMetric(inflightBytesDesc, prometheus.GaugeValue, float64(now))
		ch <- prometheus.MustNewConstMetric(inflightLimitDesc, prometheus.GaugeValue, float64(b.limit))
	}
}

func init() { metrics.Registry.MustRegister(collector{}) }
