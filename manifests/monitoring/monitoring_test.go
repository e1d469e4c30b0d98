package monitoring_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	// The operator's packages, for the metrics they register.
	_ "example.com/apigateway-operator/certs"
	_ "example.com/apigateway-operator/controller"
	_ "example.com/apigateway-operator/conversion"
	_ "example.com/apigateway-operator/webhooks"

	"example.com/apigateway-operator/reloader"
)

// repoRoot is where the tests find ./bin and the Makefile: two levels up
// from this package's directory, where go test runs it.
const repoRoot = "../.."

// promtool is the pinned promtool that `make promtool` builds, its version
// read from the Makefile so that the two never disagree. It is a failure,
// not a skip, when it is missing: an untested rule file must not pass.
func promtool(t *testing.T) string {
	t.Helper()
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^PROMTOOL_VERSION\s*\?=\s*(\S+)`).FindSubmatch(makefile)
	require.NotNil(t, m, "the Makefile pins no PROMTOOL_VERSION")
	bin, err := filepath.Abs(filepath.Join(repoRoot, "bin", "promtool-"+string(m[1])))
	require.NoError(t, err)
	_, err = os.Stat(bin)
	require.NoError(t, err, "promtool is missing: run `make promtool` (make test builds it first)")
	return bin
}

// run runs promtool with args and fails the test with its output on error.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// rule is one rule of the PrometheusRule, as much as the tests read.
type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

// ruleSpec reads prometheus_rule.yaml: its spec is a Prometheus rule file.
func ruleSpec(t *testing.T) (raw []byte, groups []ruleGroup) {
	t.Helper()
	data, err := os.ReadFile("prometheus_rule.yaml")
	require.NoError(t, err)
	var obj struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Spec       json.RawMessage `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &obj))
	require.Equal(t, "monitoring.coreos.com/v1", obj.APIVersion)
	require.Equal(t, "PrometheusRule", obj.Kind)
	var spec struct {
		Groups []ruleGroup `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(obj.Spec, &spec))
	raw, err = yaml.JSONToYAML(obj.Spec)
	require.NoError(t, err)
	return raw, spec.Groups
}

func alerts(groups []ruleGroup) []rule {
	var out []rule
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestAlerts checks the rule file with promtool and runs the unit tests of
// testdata/alerts_test.yaml against it; and demands that those fire and
// clear every alert, so a new alert cannot go untested.
func TestAlerts(t *testing.T) {
	raw, groups := ruleSpec(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	require.NoError(t, os.WriteFile(rules, raw, 0o600))
	cases, err := os.ReadFile(filepath.Join("testdata", "alerts_test.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), cases, 0o600))

	assert.Contains(t, run(t, "check", "rules", rules), "SUCCESS")
	assert.Contains(t, run(t, "test", "rules", filepath.Join(dir, "alerts_test.yaml")), "SUCCESS")

	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(cases, &tests))
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, a := range alerts(groups) {
		assert.True(t, fires[a.Alert], "no case fires %s", a.Alert)
		assert.True(t, silent[a.Alert], "no case keeps %s silent", a.Alert)
		assert.Contains(t, []string{"warning", "critical"}, a.Labels["severity"], "%s: severity", a.Alert)
		assert.NotEmpty(t, a.Annotations["summary"], "%s: summary", a.Alert)
		assert.NotEmpty(t, a.Annotations["description"], "%s: description", a.Alert)
	}
}

// kubeStateMetrics are the only series the queries may use that the
// operator does not export: the alerts' header and the README say which
// exporter serves them.
var kubeStateMetrics = []string{"kube_deployment_status_replicas_available"}

// gatewayMetrics are the gateway pods' metrics, which each pod's reloader
// registers in a registry of its own (reloader.NewMetrics).
var gatewayMetrics = []string{reloader.RequestsMetric, reloader.DurationMetric, reloader.UpstreamMetric, reloader.DroppedMetric}

// registered reports whether the operator's metrics registry holds a
// metric family named name. A vector shows in a scrape only once it has a
// child, so gathering would miss the label sets no request has made yet;
// instead, registering a probe of the same name is refused exactly when
// the name is taken (client_golang keys its registry on the name).
func registered(t *testing.T, name string) bool {
	t.Helper()
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "probe from manifests/monitoring"})
	err := metrics.Registry.Register(probe)
	if err == nil {
		require.True(t, metrics.Registry.Unregister(probe))
		return false
	}
	var already prometheus.AlreadyRegisteredError
	require.True(t, errors.As(err, &already) || strings.Contains(err.Error(), "previously registered descriptor with the same fully-qualified name"),
		"probing %s: %v", name, err)
	return true
}

// exported reports whether a series name in a query is one the operator
// serves: a family name, or a histogram's _bucket, _sum or _count.
func exported(t *testing.T, name string) bool {
	if slices.Contains(kubeStateMetrics, name) || slices.Contains(gatewayMetrics, name) || registered(t, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (registered(t, base) || slices.Contains(gatewayMetrics, base)) {
			return true
		}
	}
	return false
}

// dashboardQueries returns every PromQL query of dashboard.json (each
// panel target's expr) and the metrics its variables list values of.
func dashboardQueries(t *testing.T) (exprs, variableMetrics []string) {
	t.Helper()
	data, err := os.ReadFile("dashboard.json")
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(data, &d))
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
			exprs = append(exprs, tg.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		require.NotNil(t, m, "variable query %q: not label_values(metric...)", s)
		variableMetrics = append(variableMetrics, m[1])
	}
	return exprs, variableMetrics
}

// grafanaVariables are the dashboard's variables, replaced by PromQL that
// parses the same way.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "${namespace}", ".*")

// TestQueriesUseOnlyExportedMetrics holds the alerts and the dashboard to
// the metrics the operator registers (and kube-state-metrics' one): a
// renamed metric breaks this test, not a panel or an alert in production.
// The dashboard's queries also pass promtool's parser, as recording rules.
func TestQueriesUseOnlyExportedMetrics(t *testing.T) {
	_, groups := ruleSpec(t)
	exprs, variableMetrics := dashboardQueries(t)

	dashboardRules := ruleGroup{Name: "dashboard"}
	for i, e := range exprs {
		dashboardRules.Rules = append(dashboardRules.Rules, rule{Record: "dashboard:query" + string(rune('a'+i)), Expr: grafanaVariables.Replace(e)})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []ruleGroup{dashboardRules}})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "dashboard_rules.yaml")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	run(t, "check", "rules", file)

	used := map[string]bool{}
	for _, a := range alerts(groups) {
		names := metricNames(a.Expr)
		require.NotEmpty(t, names, "%s: no metric found in %q", a.Alert, a.Expr)
		for _, n := range names {
			used[n] = true
		}
	}
	// A dashboard query may be a constant (the timeout line).
	for _, e := range exprs {
		for _, n := range metricNames(e) {
			used[n] = true
		}
	}
	for _, n := range variableMetrics {
		used[n] = true
	}
	for name := range used {
		assert.True(t, exported(t, name), "%s is used by a query but not exported by the operator", name)
	}
	// The probe itself must be able to say no.
	assert.False(t, exported(t, "apigateway_no_such_metric_total"))
}

// TestMetricNames holds the query scanner to what PromQL means.
func TestMetricNames(t *testing.T) {
	tests := map[string]struct {
		expr string
		want []string
	}{
		"selector with matchers": {`rate(a_total{x="b_total", y=~"c|d"}[5m])`, []string{"a_total"}},
		"aggregation by labels":  {`sum by (namespace, le) (rate(h_bucket[$__rate_interval]))`, []string{"h_bucket"}},
		"by after the aggregate": {`sum(rate(a_total[5m])) by (job) / on (job) group_left (pod) b`, []string{"a_total", "b"}},
		"functions and numbers":  {`min(x) - time() < 7 * 86400 and vector(1) offset 5m`, []string{"x"}},
		"quantile":               {`histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m]))) > 3`, []string{"h_bucket"}},
		"keywords":               {`a unless b or c == bool 0`, []string{"a", "b", "c"}},
		"no metric":              {`vector(5)`, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, metricNames(tc.expr))
		})
	}
}

var (
	quoted   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	braces   = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	grouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	word     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
	keywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "atan2", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects, in
// order: the identifiers left once strings, label matchers, ranges and
// grouping label lists are cut out, that are not followed by "(" (a
// function or an aggregation) and are not keywords or parts of numbers.
func metricNames(expr string) []string {
	s := grouping.ReplaceAllString(braces.ReplaceAllString(quoted.ReplaceAllString(expr, `""`), " "), " ")
	var out []string
	for _, loc := range word.FindAllStringIndex(s, -1) {
		w := s[loc[0]:loc[1]]
		if strings.HasSuffix(w, "(") {
			continue
		}
		// 86400, 1e3, 0.99: a word glued to a digit or a dot is a number.
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "0123456789.") {
			continue
		}
		w = strings.TrimSpace(w)
		if slices.Contains(keywords, strings.ToLower(w)) || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// TestConversionBucketsReachPastTheTimeout: a conversion slower than the
// admission timeout (5 s) must land in a bucket of its own, not only in
// +Inf. The conversion histogram has its series from the start, so a
// scrape shows its buckets (the admission histogram's are held to the
// webhook configurations' timeoutSeconds in package webhooks).
func TestConversionBucketsReachPastTheTimeout(t *testing.T) {
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	var bounds []float64
	for _, f := range families {
		if f.GetName() == "apigateway_conversion_duration_seconds" {
			for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	require.NotEmpty(t, bounds, "apigateway_conversion_duration_seconds not scraped")
	assert.Greater(t, slices.Max(bounds), 5.0)
	assert.Contains(t, bounds, 5.0)
}
