package controller

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// addCase adds one case to the parity table: kind and value name it, set
// changes the valid route.
type addCase func(kind, value string, valid bool, set func(*parityCase))

// trafficParityCases are the route's traffic settings: every field, on
// both sides of each bound, and the hostile strings in each string field.
func trafficParityCases(add addCase) {
	backendParityCases(add)
	for value, valid := range map[int32]bool{1: true, 75: true, 0: false, -1: false, 76: false} {
		add("connectSeconds", fmt.Sprint(value), valid, func(tc *parityCase) {
			tc.route.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To(value)}
		})
	}
	for value, valid := range map[int32]bool{1: true, 3600: true, 0: false, -1: false, 3601: false} {
		add("readSeconds", fmt.Sprint(value), valid, func(tc *parityCase) {
			tc.route.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To(value)}
		})
	}
	add("timeouts", "both out of bounds", false, func(tc *parityCase) {
		tc.route.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](76), ReadSeconds: ptr.To[int32](0)}
	})
	add("timeouts", "empty", true, func(tc *parityCase) { tc.route.Timeouts = &v1.RouteTimeouts{} })
	sizes := map[string]bool{
		"0": true, "1": true, "9999": true, "9999g": true, "1k": true, "10m": true, "": true,
		"10000": false, "1K": false, "1M": false, "1.5m": false, "01": false, "00": false, "-1": false, "1 m": false,
		"1mb": false, "1t": false, "k": false, "0k": false, "1m;": false, " 1m": false, "1m\n": false,
	}
	for _, s := range hostileStrings() {
		sizes["1"+s] = false
	}
	for value, valid := range sizes {
		add("maxBodySize", value, valid, func(tc *parityCase) { tc.route.MaxBodySize = value })
	}
	for value, valid := range map[[2]int32]bool{
		{1, 0}: true, {10000, 10000}: true, {0, 0}: false, {-1, 0}: false, {10001, 0}: false,
		{1, -1}: false, {1, 10001}: false, {0, 10001}: false,
	} {
		add("rateLimit", fmt.Sprint(value), valid, func(tc *parityCase) {
			tc.route.RateLimit = &v1.RateLimit{RequestsPerSecond: value[0], Burst: value[1]}
		})
	}
	rewriteParityCases(add)
	headerParityCases(add)
}

func backendParityCases(add addCase) {
	backends := func(weights ...int32) []v1.WeightedBackend {
		out := make([]v1.WeightedBackend, len(weights))
		for i, w := range weights {
			out[i] = v1.WeightedBackend{Name: v1.ServiceName(fmt.Sprintf("canary-%d", i)), Port: 8080, Weight: w}
		}
		return out
	}
	for value, valid := range map[string]bool{
		"0": true, "100": true, "20": true, "101": false, "-1": false, "60 40": true, "60 41": false, "60 50": false,
		"0 0": true, "100 0": true, "100 1": false, "101 -1": false, "-1 101": false, "10 10 10 10 10 10 10": true,
		"10 10 10 10 10 10 10 10": false, "0 0 0 0 0 0 0 0": false, "20 20 20 20 20 20 20": false,
		// Past 7, only valid entries (see headerListParityCases).
		"20 20 20 20 20 20 20 20": false,
	} {
		var weights []int32
		for w := range strings.FieldsSeq(value) {
			var n int32
			_, _ = fmt.Sscan(w, &n)
			weights = append(weights, n)
		}
		add("additionalBackends weights", value, valid, func(tc *parityCase) { tc.route.AdditionalBackends = backends(weights...) })
	}
	ok := v1.WeightedBackend{Name: "canary", Port: 8080, Weight: 10}
	for value, valid := range map[string]bool{
		"canary:8080 canary:8080": false, "canary:8080 canary:8081": true, "canary:8080 canary2:8080": true,
		"user-service:8080": false, "user-service:8081": true, "canary:8080 user-service:8080": false,
		"canary:8080 canary:8080 canary:8080": false,
	} {
		var list []v1.WeightedBackend
		for b := range strings.FieldsSeq(value) {
			name, port, _ := strings.Cut(b, ":")
			w := ok
			w.Name = v1.ServiceName(name)
			_, _ = fmt.Sscan(port, &w.Port)
			list = append(list, w)
		}
		add("additionalBackends duplicates", value, valid, func(tc *parityCase) { tc.route.AdditionalBackends = list })
	}
	names := map[string]bool{
		"svc": true, strings.Repeat("s", 63): true, strings.Repeat("s", 64): false, "": false, "1svc": false,
		"Svc": false, "svc.ns": false, "svc-": false, `web";return 200;#`: false,
	}
	for _, s := range hostileStrings() {
		names[s] = false
	}
	for value, valid := range names {
		add("additionalBackends name", value, valid, func(tc *parityCase) {
			w := ok
			w.Name = v1.ServiceName(value)
			tc.route.AdditionalBackends = []v1.WeightedBackend{w}
		})
	}
	for value, valid := range map[int32]bool{1: true, 65535: true, 0: false, -1: false, 65536: false} {
		add("additionalBackends port", fmt.Sprint(value), valid, func(tc *parityCase) {
			w := ok
			w.Port = value
			tc.route.AdditionalBackends = []v1.WeightedBackend{w}
		})
	}
}

func rewriteParityCases(add addCase) {
	prefixes := map[string]bool{
		"/": true, "/v2": true, "/v2/": true, "/a-b._~!&()*+,=:@/": true, "/" + strings.Repeat("a", 1023): true,
		"/" + strings.Repeat("a", 1024): false, "v2": false, "/a%2Fb": false, "/100%25": false, "/%41": false,
		"/a%": false, "/a/../b": false, "/a/..": false, "/a/./b": false, "//": false, "/a//b": false, "/caf\u00e9": false,
		"/v2?x=1": false, "/$1": false, "/a b": false, "/a#b": false,
	}
	for _, s := range hostileStrings() {
		prefixes["/"+s] = false
	}
	for value, valid := range prefixes {
		add("rewritePrefix", value, valid, func(tc *parityCase) { tc.route.RewritePrefix = v1.HTTPPath(value) })
	}
	for value, valid := range map[string]bool{"/": false, "/v2": false, "/a b": false} {
		add("rewritePrefix on an Exact route", value, valid, func(tc *parityCase) {
			tc.route.PathType, tc.route.RewritePrefix = v1.PathTypeExact, v1.HTTPPath(value)
		})
	}
}

// headerSlots are the six places a header name is written, and for the
// four that hold a value, where its value goes.
var headerSlots = map[string]func(r *v1.Route, name, value string){
	"requestHeaders.set":     func(r *v1.Route, n, v string) { r.RequestHeaders = &v1.HeaderModifier{Set: parityHeaders(n, v)} },
	"requestHeaders.add":     func(r *v1.Route, n, v string) { r.RequestHeaders = &v1.HeaderModifier{Add: parityHeaders(n, v)} },
	"requestHeaders.remove":  func(r *v1.Route, n, _ string) { r.RequestHeaders = &v1.HeaderModifier{Remove: parityHeaderNames(n)} },
	"responseHeaders.set":    func(r *v1.Route, n, v string) { r.ResponseHeaders = &v1.HeaderModifier{Set: parityHeaders(n, v)} },
	"responseHeaders.add":    func(r *v1.Route, n, v string) { r.ResponseHeaders = &v1.HeaderModifier{Add: parityHeaders(n, v)} },
	"responseHeaders.remove": func(r *v1.Route, n, _ string) { r.ResponseHeaders = &v1.HeaderModifier{Remove: parityHeaderNames(n)} },
}

func parityHeaders(names ...string) []v1.HTTPHeader {
	out := make([]v1.HTTPHeader, 0, len(names)/2)
	for i := 0; i+1 < len(names); i += 2 {
		out = append(out, v1.HTTPHeader{Name: v1.HTTPHeaderName(names[i]), Value: v1.HTTPHeaderValue(names[i+1])})
	}
	return out
}

func parityHeaderNames(ns ...string) []v1.HTTPHeaderName {
	out := make([]v1.HTTPHeaderName, len(ns))
	for i, n := range ns {
		out[i] = v1.HTTPHeaderName(n)
	}
	return out
}

func headerParityCases(add addCase) {
	headerNames := map[string]bool{
		"X-Team": true, "x": true, "1x": true, "Hosts": true, "X-Host": true, "Content-Type": true,
		strings.Repeat("x", 64): true, strings.Repeat("x", 65): false, "": false, "-x": false, "X_Team": false,
		"X.Team": false, "X:": false,
		// Reserved: set by the gateway, the body's framing, hop-by-hop;
		// without case.
		"Host": false, "host": false, "HOST": false, "hOsT": false, "X-Forwarded-For": false, "x-real-ip": false,
		"Content-Length": false, "Connection": false, "CONNECTION": false, "Keep-Alive": false,
		"Proxy-Connection": false, "TE": false, "te": false, "Trailer": false, "Transfer-Encoding": false,
		"transfer-encoding": false, "Upgrade": false,
	}
	for _, s := range hostileStrings() {
		headerNames["X"+s] = false
	}
	values := map[string]bool{
		"payments": true, "": true, "a b": true, "a;b": true, "a{b": true, "a}b": true, "#x": true, "'": true,
		"100%": true, "!#%&()*+,-./:;<=>?@[]^_`{|}~": true, strings.Repeat("v", 1024): true,
		strings.Repeat("v", 1025): false, " a": false, "a ": false, " ": false,
	}
	for name, s := range hostileStrings() {
		switch name {
		case "single quote", "semicolon", "open brace", "close brace", "space", "hash":
			values[s] = true // text inside a quoted nginx argument
		default:
			values[s] = false
		}
	}
	for slot, set := range headerSlots {
		for value, valid := range headerNames {
			add(slot+" name", value, valid, func(tc *parityCase) { set(&tc.route, value, "v") })
		}
		if strings.HasSuffix(slot, ".remove") {
			continue
		}
		for value, valid := range values {
			add(slot+" value", value, valid, func(tc *parityCase) { set(&tc.route, "X-Team", value) })
		}
	}
	headerListParityCases(add)
}

// headerListParityCases: each header named once per modifier, across its
// three lists, without case; at most 16 per list. A list past its bound
// is refused at the list by every layer; the table holds no bad entry past
// it, because there the layers part on what else they report, not on the
// verdict: the API server still checks an entry's schema but skips its
// CEL rules (their cost was bounded by maxItems), and Go checks neither.
func headerListParityCases(add addCase) {
	many := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("X-%02d", i), "v")
		}
		return out
	}
	manyNames := func(n int) []v1.HTTPHeaderName {
		var out []v1.HTTPHeaderName
		for i := range n {
			out = append(out, v1.HTTPHeaderName(fmt.Sprintf("X-%02d", i)))
		}
		return out
	}
	for value, tc := range map[string]struct {
		m     v1.HeaderModifier
		valid bool
	}{
		"set twice":                        {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1", "X-A", "2")}},
		"set twice, case differs":          {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1", "x-a", "2")}},
		"add twice":                        {m: v1.HeaderModifier{Add: parityHeaders("X-A", "1", "X-A", "1")}},
		"add twice, case differs":          {m: v1.HeaderModifier{Add: parityHeaders("X-A", "1", "X-a", "1")}},
		"remove twice":                     {m: v1.HeaderModifier{Remove: parityHeaderNames("X-A", "X-A")}},
		"remove twice, case differs":       {m: v1.HeaderModifier{Remove: parityHeaderNames("X-A", "x-A")}},
		"set and removed":                  {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1"), Remove: parityHeaderNames("X-A")}},
		"set thrice":                       {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1", "X-A", "2", "X-A", "3")}},
		"removed thrice, twice as written": {m: v1.HeaderModifier{Remove: parityHeaderNames("X-A", "x-a", "X-A", "X-A")}},
		"set and removed, case":            {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1"), Remove: parityHeaderNames("x-a")}},
		"set and added":                    {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1"), Add: parityHeaders("X-A", "1")}},
		"added and removed, case":          {m: v1.HeaderModifier{Add: parityHeaders("x-a", "1"), Remove: parityHeaderNames("X-A")}},
		"set twice and removed":            {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1", "X-A", "2"), Remove: parityHeaderNames("X-A")}},
		"distinct in each list":            {m: v1.HeaderModifier{Set: parityHeaders("X-A", "1"), Add: parityHeaders("X-B", "1"), Remove: parityHeaderNames("X-C")}, valid: true},
		"16 set":                           {m: v1.HeaderModifier{Set: parityHeaders(many(16)...)}, valid: true},
		"17 set":                           {m: v1.HeaderModifier{Set: parityHeaders(many(17)...)}},
		"16 added":                         {m: v1.HeaderModifier{Add: parityHeaders(many(16)...)}, valid: true},
		"17 added":                         {m: v1.HeaderModifier{Add: parityHeaders(many(17)...)}},
		"16 removed":                       {m: v1.HeaderModifier{Remove: manyNames(16)}, valid: true},
		"17 removed":                       {m: v1.HeaderModifier{Remove: manyNames(17)}},
		"17 set, one also removed":         {m: v1.HeaderModifier{Set: parityHeaders(many(17)...), Remove: parityHeaderNames("X-00")}},
		"empty":                            {m: v1.HeaderModifier{}, valid: true},
	} {
		add("requestHeaders", value, tc.valid, func(p *parityCase) { p.route.RequestHeaders = &tc.m })
		add("responseHeaders", value, tc.valid, func(p *parityCase) { p.route.ResponseHeaders = &tc.m })
	}
	add("headers", "the same name in request and response headers", true, func(p *parityCase) {
		p.route.RequestHeaders = &v1.HeaderModifier{Set: parityHeaders("X-A", "1")}
		p.route.ResponseHeaders = &v1.HeaderModifier{Set: parityHeaders("X-A", "1"), Remove: parityHeaderNames("X-B")}
	})
}
