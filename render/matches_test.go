package render

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// maximalMatchesGateway has a route with the most matches the API allows,
// every name and value at its longest and of every character its
// alphabet has, beside a route without matches on the same path.
func maximalMatchesGateway() *v1.APIGateway {
	headerValue := strings.Repeat(`!#%&'()*+,-./:;<=>?@[]^_{|}~ aZ09`, 32)[:1023] + "x"
	r := route("api.example.com", "/users/", v1.PathTypePrefix, "canary", 80)
	for i := range 8 {
		var m v1.RequestMatch
		for j := range 8 {
			name := fmt.Sprintf("%d%d%s", i, j, strings.Repeat("a", 62))
			m.Headers = append(m.Headers, v1.HeaderMatch{Name: v1.HTTPHeaderName(name), Type: v1.MatchExact, Value: v1.HTTPHeaderValue(headerValue)})
			m.QueryParams = append(m.QueryParams, v1.QueryParamMatch{Name: v1.MatchName(name), Type: v1.MatchExact, Value: strings.Repeat("-._~!*(),/:@aZ9", 16)})
			m.Cookies = append(m.Cookies, v1.CookieMatch{Name: v1.MatchName(name), Value: strings.Repeat("-._~!#&'()*+/:<=>?@^|aZ9", 11)[:256]})
		}
		m.Method = ptr.To(v1.HTTPMethod("PATCH"))
		r.Matches = append(r.Matches, m)
	}
	return gateway("maximal", route("api.example.com", "/users/", v1.PathTypePrefix, "main", 80), r)
}

func TestRenderedMatchesPassNginx(t *testing.T) {
	nginx := nginxBinary(t)
	for name, gw := range map[string]*v1.APIGateway{
		"maximal":              maximalMatchesGateway(),
		"one path, 100 routes": shortMatchesGateway(),
		"a path with matches only": gateway("only", func() v1.Route {
			r := route("a.b", "/", v1.PathTypePrefix, "s", 1)
			r.Matches = []v1.RequestMatch{{Method: ptr.To(v1.HTTPMethod("GET"))}}
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
			r.Matches = []v1.RequestMatch{m}
			config, err := Config(gateway("hostile", r), Options{})
			if err == nil {
				// The harmless ones (text inside a quoted string) render,
				// and stay inside their quotes.
				assert.NotContains(t, config, "a"+s+"\"\n", "%s in the %s", name, slot)
				continue
			}
			assert.Contains(t, err.Error(), "spec.routes[0].matches[0]", "%s in the %s", name, slot)
		}
	}
}

// TestMatchPrecedence: on one path the sets are tried Exact route first,
// then a method, more headers, more query parameters, more cookies, then
// the spec's order and the set's.
func TestMatchPrecedence(t *testing.T) {
	get := ptr.To(v1.HTTPMethod("GET"))
	h := func(n int) []v1.HeaderMatch {
		var out []v1.HeaderMatch
		for i := range n {
			out = append(out, v1.HeaderMatch{Name: v1.HTTPHeaderName(fmt.Sprintf("X-%d", i)), Type: v1.MatchPresent})
		}
		return out
	}
	q := []v1.QueryParamMatch{{Name: "q", Type: v1.MatchPresent}}
	c := []v1.CookieMatch{{Name: "c", Value: "1"}}
	alts := []alternative{
		{index: 0, route: &v1.Route{Matches: []v1.RequestMatch{{Cookies: c}, {Headers: h(1)}}}},
		{index: 1, route: &v1.Route{Matches: []v1.RequestMatch{{Headers: h(2)}, {Method: get}}}},
		{index: 2, route: &v1.Route{Matches: []v1.RequestMatch{{QueryParams: q}, {Headers: h(1), QueryParams: q}}}},
		{index: 3, loc: location{exact: true}, route: &v1.Route{Matches: []v1.RequestMatch{{Cookies: c}}}},
	}
	var choices []choice
	for i, a := range alts {
		for s := range a.route.Matches {
			choices = append(choices, choice{alt: i, set: s, match: &a.route.Matches[s], exact: a.loc.exact})
		}
	}
	slices.SortStableFunc(choices, precedence(alts))
	var got []string
	for _, c := range choices {
		got = append(got, fmt.Sprintf("%d.%d", alts[c.alt].index, c.set))
	}
	assert.Equal(t, []string{"3.0", "1.1", "1.0", "2.1", "0.1", "2.0", "0.0"}, got)
}
