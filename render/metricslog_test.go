package render

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestMetricsLog: every gateway server holds the marker (none in the
// health server), each route's locations set its name, the map names
// each backend a location proxies to by Service and port, as $proxy_host
// reads it, pooled or not; MetricsLabels reads back exactly those.
func TestMetricsLog(t *testing.T) {
	gw := gateway("gw",
		route("api.example.com", "/users", v1.PathTypePrefix, "users", 8080),
		route("api.example.com", "/users", v1.PathTypeExact, "users-exact", 8080),
		route("*.example.com", "/caf%C3%A9", v1.PathTypePrefix, "cafe", 80))
	pooled := func(_, name string, _ int32) (netip.Addr, bool) {
		return netip.MustParseAddr("10.96.0.7"), name == "users"
	}
	config, err := Config(gw, Options{ServiceAddresses: pooled})
	require.NoError(t, err)
	lines := strings.Split(config, "\n")
	assert.Contains(t, lines, `log_format gateway_metrics escape=none "$gateway_route\t$gateway_backend\t$status\t$request_time\t$upstream_response_time";`)
	assert.Contains(t, lines, `map_hash_bucket_size 512;`)
	assert.Less(t, strings.Index(config, "map_hash_bucket_size"), strings.Index(config, "\nmap "), "before the first map")
	// The default server and the two hosts' servers.
	assert.Equal(t, 3, strings.Count(config, MetricsLogMarker))
	assert.Equal(t, 3, strings.Count(config, "    uninitialized_variable_warn off;\n"))
	health := config[strings.Index(config, "# Probes only"):strings.Index(config, "# Requests for a host")]
	assert.NotContains(t, health, MetricsLogMarker)
	for _, want := range []string{
		`    "upstream_` + upstreamName("users", 8080)[len("upstream_"):] + `" "users:8080";`,
		`    "users-exact.shop.svc.cluster.local:8080" "users-exact:8080";`,
		// Port 80: nginx leaves it out of $proxy_host.
		`    "cafe.shop.svc.cluster.local" "cafe:80";`,
	} {
		assert.Contains(t, lines, want)
	}
	routes, backends := MetricsLabels([]byte(config))
	assert.ElementsMatch(t, []string{"Prefix api.example.com/users", "Exact api.example.com/users", "Prefix *.example.com/caf\u00e9"}, routes)
	assert.ElementsMatch(t, []string{"users:8080", "users-exact:8080", "cafe:80"}, backends)
}

// TestMetricsLogLeavesOutUnusedBackends: a backend of weight 0, or a
// backendService the others leave no share, is in no map entry, so no
// label of it is accepted.
func TestMetricsLogLeavesOutUnusedBackends(t *testing.T) {
	config, err := Config(trafficGateway(), Options{})
	require.NoError(t, err)
	_, backends := MetricsLabels([]byte(config))
	assert.Contains(t, backends, "web-blue:80")
	assert.Contains(t, backends, "users-canary:8080")
	assert.NotContains(t, backends, "web:80", "the split leaves it no share")
}

func TestExpandMetricsLog(t *testing.T) {
	config, err := Config(routeSets()["seed"], Options{})
	require.NoError(t, err)
	tests := map[string]struct {
		server string
		ok     bool
	}{
		"unix socket":      {"unix:/var/run/apigateway-metrics.sock", true},
		"loopback port":    {"127.0.0.1:8514", true},
		"IPv6 loopback":    {"[::1]:8514", true},
		"a second param":   {"unix:/x.sock,tag=evil", false},
		"a directive":      {"unix:/x.sock; include /etc/passwd", false},
		"relative path":    {"unix:x.sock", false},
		"a variable":       {"unix:/$x", false},
		"no port":          {"127.0.0.1", false},
		"empty":            {"", false},
		"newline":          {"unix:/x\n", false},
		"a space in path":  {"unix:/a b", false},
		"a quote in path":  {`unix:/a"b`, false},
		"a brace in path":  {"unix:/a}b", false},
		"a comment marker": {"unix:/a#b", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ExpandMetricsLog([]byte(config), tc.server)
			if !tc.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.NotContains(t, string(got), MetricsLogMarker)
			assert.Equal(t, strings.Count(config, MetricsLogMarker),
				strings.Count(string(got), "    access_log syslog:server="+tc.server+",nohostname,tag=gw gateway_metrics;\n"))
		})
	}
}

// TestMetricsLogPassesNginx: nginx -t takes the expanded metrics log
// with the access log on and off, and for the largest gateway admission
// admits (100 routes of 253-character hosts, backends with long names).
func TestMetricsLogPassesNginx(t *testing.T) {
	nginx := nginxBinary(t)
	maximal := gateway("maximal")
	for i := range 100 {
		maximal.Spec.Routes = append(maximal.Spec.Routes, route(maximalHost(i, i%10 == 0), "/p", v1.PathTypePrefix,
			strings.Repeat("s", 60)+string(rune('a'+i%26))+string(rune('a'+i/26)), 8080))
	}
	for name, gw := range map[string]*v1.APIGateway{
		"seed": routeSets()["seed"], "access log": withAccessLog(routeSets()["seed"]), "traffic": trafficGateway(), "maximal": maximal,
	} {
		t.Run(name, func(t *testing.T) {
			config, err := Config(gw, Options{Resolvers: []string{"127.0.0.1"}})
			require.NoError(t, err)
			expanded, err := ExpandMetricsLog([]byte(config), "unix:/tmp/apigateway-metrics-test.sock")
			require.NoError(t, err)
			out, err := nginxTest(t, nginx, string(expanded))
			require.NoError(t, err, "nginx -t refused the metrics log:\n%s", out)
			checkBound(t, gw)
		})
	}
}

// TestMetricsLogNamesTheRulesBackends: a rule's backend is in the map, as
// a route's is, so the requests a rule takes are counted; a route whose
// rules take all it serves (no backendService) adds no label of its own.
func TestMetricsLogNamesTheRulesBackends(t *testing.T) {
	post := v1.HTTPMethod("POST")
	canary := route("api.example.com", "/orders", v1.PathTypePrefix, "orders", 8080)
	canary.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: &post}}, BackendService: v1.BackendService{Name: "orders-writer", Port: 8080}}}
	only := route("api.example.com", "/carts", v1.PathTypePrefix, "", 0)
	only.BackendService = v1.BackendService{}
	only.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: &post}}, BackendService: v1.BackendService{Name: "carts", Port: 80}}}
	config, err := Config(gateway("gw", canary, only), Options{})
	require.NoError(t, err)
	_, backends := MetricsLabels([]byte(config))
	assert.ElementsMatch(t, []string{"orders:8080", "orders-writer:8080", "carts:80"}, backends)
}
