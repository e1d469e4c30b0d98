package render

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// maximalMatchesGateway has a route with the most rules and matches the
// API allows, every name and value at its longest and of every character
// its alphabet has, and a route with rules and no backendService.
func maximalMatchesGateway() *v1.APIGateway {
	headerValue := strings.Repeat(`!#%&'()*+,-./:;<=>?@[]^_{|}~ aZ09`, 32)[:1023] + "x"
	r := route("api.example.com", "/users/", v1.PathTypePrefix, "main", 80)
	for i := range 32 {
		var m v1.RequestMatch
		for j := range 8 {
			name := fmt.Sprintf("%02d%d%s", i, j, strings.Repeat("a", 61))
			m.Headers = append(m.Headers, v1.HeaderMatch{Name: v1.HTTPHeaderName(name), Type: v1.MatchExact, Value: v1.HTTPHeaderValue(headerValue)})
			m.QueryParams = append(m.QueryParams, v1.QueryParamMatch{Name: v1.MatchName(name), Type: v1.MatchExact, Value: strings.Repeat("-._~!*(),/:@aZ9", 16)})
			m.Cookies = append(m.Cookies, v1.CookieMatch{Name: v1.MatchName(name), Value: strings.Repeat("-._~!#&'()*+/:<=>?@^|aZ9", 11)[:256]})
		}
		m.Method = ptr.To(v1.HTTPMethod("PATCH"))
		if i%4 == 0 {
			r.Rules = append(r.Rules, v1.RouteRule{BackendService: v1.BackendService{Name: v1.ServiceName(fmt.Sprintf("canary-%d", i/4)), Port: 80}})
		}
		r.Rules[i/4].Matches = append(r.Rules[i/4].Matches, m)
	}
	onlyRules := route("api.example.com", "/orders", v1.PathTypeExact, "", 0)
	onlyRules.BackendService = v1.BackendService{}
	onlyRules.Rules = r.Rules[:1]
	return gateway("maximal", r, onlyRules)
}

func TestRenderedMatchesPassNginx(t *testing.T) {
	nginx := nginxBinary(t)
	for name, gw := range map[string]*v1.APIGateway{
		"maximal":               maximalMatchesGateway(),
		"70 routes, most rules": shortMatchesGateway(),
		"a route with rules only": gateway("only", func() v1.Route {
			r := route("a.b", "/", v1.PathTypePrefix, "s", 1)
			r.BackendService = v1.BackendService{}
			r.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: ptr.To(v1.HTTPMethod("GET"))}}, BackendService: v1.BackendService{Name: "s", Port: 1}}}
			return r
		}()),
	} {
		t.Run(name, func(t *testing.T) {
			config, err := Config(gw, Options{})
			require.NoError(t, err)
			out, err := nginxTest(t, nginx, envsubstResolver(config, "127.0.0.1"))
			require.NoError(t, err, "nginx -t refused the configuration:\n%s", out)
			assert.GreaterOrEqual(t, Resolve(gw, sizeOptions).sizeBound(), len(config))
		})
	}
}

// TestRenderMatchesRefusesHostileStrings: a name or value that would end
// a quoted string, start a variable or a new directive is refused by the
// renderer, whatever admission did, never escaped.
func TestRenderMatchesRefusesHostileStrings(t *testing.T) {
	for name, s := range hostileStrings() {
		for slot, set := range map[string]func(*v1.RequestMatch){
			"header value": func(m *v1.RequestMatch) {
				m.Headers = []v1.HeaderMatch{{Name: "X-A", Type: v1.MatchExact, Value: v1.HTTPHeaderValue("a" + s)}}
			},
			"query name": func(m *v1.RequestMatch) {
				m.QueryParams = []v1.QueryParamMatch{{Name: v1.MatchName("a" + s), Type: v1.MatchPresent}}
			},
			"cookie value": func(m *v1.RequestMatch) { m.Cookies = []v1.CookieMatch{{Name: "a", Value: "a" + s}} },
		} {
			var m v1.RequestMatch
			set(&m)
			r := route("api.example.com", "/", v1.PathTypePrefix, "s", 80)
			r.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{m}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
			config, err := Config(gateway("hostile", r), Options{})
			if err == nil {
				// The harmless ones (text inside a quoted string) render,
				// and stay inside their quotes.
				assert.NotContains(t, config, "a"+s+"\"\n", "%s in the %s", name, slot)
				continue
			}
			assert.Contains(t, err.Error(), "spec.routes[0].rules[0].matches[0]", "%s in the %s", name, slot)
		}
	}
}

// TestRulesInOrder: a location tries its rules' matches in the rules'
// order, then each rule's, and each rule has a named location with its
// own backend, pooled when its Service has an address.
func TestRulesInOrder(t *testing.T) {
	get := ptr.To(v1.HTTPMethod("GET"))
	r := route("a.b", "/x", v1.PathTypeExact, "main", 80)
	r.Rules = []v1.RouteRule{
		{Matches: []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "c", Value: "1"}}}}, BackendService: v1.BackendService{Name: "first", Port: 80}},
		{Matches: []v1.RequestMatch{{Method: get}, {Headers: []v1.HeaderMatch{{Name: "X-A", Type: v1.MatchPresent}}}}, BackendService: v1.BackendService{Name: "second", Port: 8080}},
	}
	config, err := Config(gateway("order", r), Options{ServiceAddresses: func(_, name string, _ int32) (netip.Addr, bool) {
		return netip.MustParseAddr("10.0.0.1"), name == "second"
	}})
	require.NoError(t, err)
	id := shortID("a.b\x00= \"/x\"")
	pick := regexp.MustCompile(`(?s)map "(\$agw_s_[0-9a-f]+)(\$agw_s_[0-9a-f]+)(\$agw_s_[0-9a-f]+)" \$agw_p_` + id + `_0 \{\n    default "";\n    "~\^1" @agw_` + id + `_0;\n    "~\^\.\{1\}1" @agw_` + id + `_1;\n    "~\^\.\{2\}1" @agw_` + id + `_1;\n\}`)
	require.Regexp(t, pick, config)
	// Each named location sets the route's name first, for the logs.
	named := func(n string) string {
		return "location @agw_" + id + "_" + n + " {\n        set $gateway_route \"Exact a.b/x\";\n        set $backend "
	}
	assert.Contains(t, config, named("0")+"\"first.shop.svc.cluster.local:80\";")
	assert.Contains(t, config, named("1")+"\""+upstreamName("second", 8080)+"\";")
	assert.Contains(t, config, "upstream "+upstreamName("second", 8080)+" {")
}
