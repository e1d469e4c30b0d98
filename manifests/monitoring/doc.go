// Package monitoring holds no code: its tests check the operator's
// PrometheusRule (prometheus_rule.yaml) with promtool, built pinned into
// ./bin by `make promtool`, fire and clear each alert with `promtool test
// rules` (testdata/alerts_test.yaml), and hold the alerts' and the Grafana
// dashboard's (dashboard.json) queries to the metrics the operator
// registers. gateways/ holds the PodMonitor of the gateway pods'
// per-route metrics and a KEDA ScaledObject example, checked against the
// pods the operator builds and, for the example's query, by promtool
// (gateways_test.go); the dashboard's gateway panels query those metrics.
package monitoring
