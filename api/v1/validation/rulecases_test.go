package validation

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
	"example.com/apigateway-operator/test/testenv"
)

// The schema in manifests/crd is the one definition of every bound,
// pattern and list rule (the Go rules read it, see rules), and its CEL
// rules say again, for the API server alone, what the Go rules say of
// names, hosts, paths and headers, so the API stays safe while the webhook
// does not answer. TestRuleCases holds the two to one verdict: one table of
// rule cases, run once through the real API server and once through
// Validate. The renderer calls ValidateRoute itself, so it needs no leg of
// its own.

// ruleCase is a gateway's name and one route, as a user writes them, and
// whether the API admits them. Every other field of the gateway is valid.
type ruleCase struct {
	name  string // "" for ruleCaseName
	route v1.Route
	valid bool
}

const ruleCaseName = "rules"

// TestRuleCases sends the table through the real API server, with the CRD
// installed and no webhook, so its schema and CEL rules alone decide, as
// while the webhook is down (a server-side dry run: nothing is stored),
// and through Validate, which admission runs; it demands the same verdict
// from each and, on a refusal, the same fields.
func TestRuleCases(t *testing.T) {
	env := apiServer(t)
	for name, tc := range ruleCases() {
		t.Run(name, func(t *testing.T) {
			gw := ruleCaseGateway(tc)
			api := apiServerVerdict(t, env, gw)
			pkg := fields(Validate(nil, gw))

			assert.Equal(t, !tc.valid, len(api) > 0, "API server: refused %v", api)
			assert.Equal(t, !tc.valid, len(pkg) > 0, "validation package: refused %v", pkg)
			assert.Equal(t, api, pkg, "the API server and the validation package refuse different fields")
		})
	}
}

// TestMain stops the API server that apiServer started, if a test asked
// for one: the other tests of this package need none, and run without the
// control plane's binaries.
func TestMain(m *testing.M) {
	code := m.Run()
	if controlPlane.env != nil {
		if err := controlPlane.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

var controlPlane struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// apiServer starts etcd and a kube-apiserver with the CRDs installed, once
// for the package. A control plane that cannot start fails the test: it is
// never a skip.
func apiServer(t *testing.T) *testenv.Env {
	t.Helper()
	controlPlane.once.Do(func() { controlPlane.env, controlPlane.err = testenv.Start(testenv.Options{}) })
	require.NoError(t, controlPlane.err, "starting the API server")
	return controlPlane.env
}

// ruleCases are the table: every kind of name, host, path, pathType,
// backend and traffic setting (trafficCases) the rules tell apart,
// on both sides of each limit.
func ruleCases() map[string]ruleCase {
	ok := v1.Route{Host: "api.example.com", Path: "/users/", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "user-service", Port: 8080}}
	cases := map[string]ruleCase{}
	add := func(kind, value string, valid bool, set func(*ruleCase)) {
		tc := ruleCase{route: ok, valid: valid}
		set(&tc)
		cases[fmt.Sprintf("%s %q", kind, truncate(value))] = tc
	}
	for value, valid := range map[string]bool{
		"gw": true, "a": true, "my-gateway-2": true, strings.Repeat("a", 63): true,
		strings.Repeat("a", 64): false, "dotted.gw": false, "1gateway": false, "Gateway": false,
		"gw-": false, "-gw": false, "a_b": false, "a--b": true,
	} {
		add("name", value, valid, func(tc *ruleCase) { tc.name = value })
	}
	for value, valid := range ruleCaseHosts() {
		add("host", value, valid, func(tc *ruleCase) { tc.route.Host = v1.Hostname(value) })
	}
	for value, valid := range ruleCasePaths() {
		add("path", value, valid, func(tc *ruleCase) { tc.route.Path = v1.HTTPPath(value) })
	}
	for value, valid := range map[string]bool{"Prefix": true, "Exact": true, "": false, "Regex": false, "prefix": false} {
		add("pathType", value, valid, func(tc *ruleCase) { tc.route.PathType = v1.PathType(value) })
	}
	backendNames := map[string]bool{
		"svc": true, "a": true, strings.Repeat("s", 63): true, strings.Repeat("s", 64): false, "": false,
		"1svc": false, "Svc": false, "svc.ns": false, "svc-": false, `web";return 200;#`: false,
	}
	for _, s := range validationtest.HostileStrings() {
		backendNames[s] = false
	}
	for value, valid := range backendNames {
		add("backend name", value, valid, func(tc *ruleCase) { tc.route.BackendService.Name = v1.ServiceName(value) })
	}
	for value, valid := range map[int32]bool{1: true, 80: true, 65535: true, 0: false, -1: false, 65536: false} {
		add("backend port", fmt.Sprint(value), valid, func(tc *ruleCase) { tc.route.BackendService.Port = v1.PortNumber(value) })
	}
	trafficCases(add)
	redirectCases(add)
	externalAuthCases(add)
	retriesCases(add)
	corsCases(add)
	return cases
}

func ruleCaseHosts() map[string]bool {
	label63 := strings.Repeat("a", 63)
	return map[string]bool{
		"api.example.com": true, "a": true, "localhost": true, "xn--bcher-kva.example": true,
		"*.example.com": true, "*.eu.example.com": true, "a-b.c-d.example": true,
		label63 + ".example.com": true, strings.Repeat("a", 64) + ".example.com": false,
		validationtest.MaximalHost(1, false): true, validationtest.MaximalHost(2, true): true, "a" + validationtest.MaximalHost(3, false): false,
		"*.com": false, "*.internal": false, "*": false, "*.": false, "*.*.example.com": false,
		"a.*.example.com": false, "*api.example.com": false, "api.example.com.": false, "API.example.com": false,
		"bad_host": false, "-api.example.com": false, "api-.example.com": false, "a..b": false, ".a": false,
		"api example.com": false, "api.example.com:80": false, "https://api.example.com": false,
		"bücher.example": false, "api.example.com;": false, "$host": false, "": false,
		"10.0.0.1": false, "*.10.0.0.1": false, "::1": false, "[::1]": false, "1.2.3.4.5": true,
		// No IP address to either parser: a leading zero is refused in
		// IPv4 (Go's net.ParseIP and the API server's isIP agree).
		"010.0.0.1": true,
	}
}

func ruleCasePaths() map[string]bool {
	return map[string]bool{
		"/": true, "/users/": true, "/users": true, "/a-b._~!&()*+,=:@/": true, "/.well-known/x": true,
		"/a..b/...": true, "/" + strings.Repeat("a", 1023): true, "/" + strings.Repeat("a", 1024): false,
		"": false, "users": false, "a/": false, "/a b": false, "/a;b": false, "/a{b": false, `/a"b`: false,
		"/a'b": false, "/$host": false, "/a#b": false, "/a?b": false, `/a\b`: false, "/café": false,
		"/a\x00": false, "/a\nb": false,
		// Dot and empty segments, written and encoded.
		"/a//b": false, "/a/./b": false, "/a/../b": false, "/a/.": false, "/a/..": false, "//": false,
		"/a%2Fb": true, "/a%2F/b": false, "/a/%2E%2E/b": false, "/a/%2e": false, "/a%2F%2E%2E": false,
		"/a/%2E%2Eb": true, "/a%2F.x": true,
		// Encoded slashes once decoded: the Ingress API refuses them.
		"/a%252Fb": false, "/a%25%32%46": false, "/a%252f": false, "/100%25": true, "/100%2525": true,
		// Well-formed escapes only.
		"/a%": false, "/a%2": false, "/a%zz": false, "/%%41": false, "/%41": true, "/%75sers": true,
		// Escaped characters the path may not hold, control characters
		// and whitespace.
		"/a%20b": false, "/a%22": false, "/a%23": false, "/%24host": false, "/a%27": false, "/a%3B": false,
		"/a%3c": false, "/a%3E": false, "/a%3F": false, "/a%5B": false, "/a%5C": false, "/a%5d": false,
		"/a%5E": false, "/a%60": false, "/a%7B": false, "/a%7C": false, "/a%7d": false, "/a%7F": false,
		"/a%00": false, "/a%0A": false, "/a%0d%0a": false, "/a%1F": false, "/a%21%26%2B%3D": true,
		// UTF-8: well formed, not a control or space.
		"/caf%C3%A9": true, "/caf%c3%a9": true, "/%F0%9F%98%80": true, "/%E2%82%AC": true, "/%EF%BF%BD": true,
		"/%FF": false, "/%C3": false, "/%C3%28": false, "/%C0%AF": false, "/%E0%80%AF": false,
		"/%ED%A0%80": false, "/%F4%90%80%80": false, "/%F8%88%80%80%80": false, "/%80": false,
		"/a%C2%A0b": false, "/a%C2%85": false, "/a%C2%9F": false, "/a%C2%A1": true, "/a%E1%9A%80": false,
		"/a%E2%80%80": false, "/a%E2%80%8A": false, "/a%E2%80%8B": true, "/a%E2%80%A8": false,
		"/a%E2%80%A9": false, "/a%E2%80%AF": false, "/a%E2%81%9F": false, "/a%E3%80%80": false,
		"/a%E3%80%81": true, "/a%EE%80%80": true,
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:30], len(s))
	}
	return s
}

// addCase adds one case to the table: kind and value name it, set
// changes the valid route.
type addCase func(kind, value string, valid bool, set func(*ruleCase))

// trafficCases are the route's traffic settings: every field, on
// both sides of each bound, and the hostile strings in each string field.
func trafficCases(add addCase) {
	backendCases(add)
	for value, valid := range map[int32]bool{1: true, 75: true, 0: false, -1: false, 76: false} {
		add("connectSeconds", fmt.Sprint(value), valid, func(tc *ruleCase) {
			tc.route.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To(value)}
		})
	}
	for value, valid := range map[int32]bool{1: true, 3600: true, 0: false, -1: false, 3601: false} {
		add("readSeconds", fmt.Sprint(value), valid, func(tc *ruleCase) {
			tc.route.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To(value)}
		})
	}
	add("timeouts", "both out of bounds", false, func(tc *ruleCase) {
		tc.route.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](76), ReadSeconds: ptr.To[int32](0)}
	})
	add("timeouts", "empty", true, func(tc *ruleCase) { tc.route.Timeouts = &v1.RouteTimeouts{} })
	sizes := map[string]bool{
		"0": true, "1": true, "9999": true, "9999g": true, "1k": true, "10m": true, "": true,
		"10000": false, "1K": false, "1M": false, "1.5m": false, "01": false, "00": false, "-1": false, "1 m": false,
		"1mb": false, "1t": false, "k": false, "0k": false, "1m;": false, " 1m": false, "1m\n": false,
	}
	for _, s := range validationtest.HostileStrings() {
		sizes["1"+s] = false
	}
	for value, valid := range sizes {
		add("maxBodySize", value, valid, func(tc *ruleCase) { tc.route.MaxBodySize = value })
	}
	for value, valid := range map[[2]int32]bool{
		{1, 0}: true, {10000, 10000}: true, {0, 0}: false, {-1, 0}: false, {10001, 0}: false,
		{1, -1}: false, {1, 10001}: false, {0, 10001}: false,
	} {
		add("rateLimit", fmt.Sprint(value), valid, func(tc *ruleCase) {
			tc.route.RateLimit = &v1.RateLimit{RequestsPerSecond: value[0], Burst: value[1]}
		})
	}
	rewriteCases(add)
	headerCases(add)
	sourceRangeCases(add)
	basicAuthCases(add)
}

// sourceRangeCases: each way of writing a network (canonical or not, of
// both families), in allow and in deny, the hostile strings, each list's
// bound, repeated entries and an empty sourceRanges.
func sourceRangeCases(add addCase) {
	cidrs := map[string]bool{
		"10.0.0.0/8": true, "0.0.0.0/0": true, "::/0": true, "203.0.113.7/32": true, "2001:db8::/32": true,
		"2001:db8::1/128": true, "fe80::/10": true, "64:ff9b::/96": true, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128": true,
		// Bits past the prefix length, upper case, zeros not compressed
		// or leading, no prefix length, too long a prefix, IPv4-mapped,
		// a zone, spaces.
		"10.0.0.1/8": false, "2001:DB8::/32": false, "2001:db8:0::/48": false, "2001:0db8::/32": false,
		"0:0:0:0:0:0:0:0/0": false, "10.0.0.0": false, "2001:db8::1": false, "010.0.0.0/8": false, "10.0.0.0/08": false,
		"10.0.0.0/33": false, "::/129": false, "::ffff:10.0.0.0/104": false, "::ffff:0:0/96": false,
		"fe80::1%eth0/128": false, " 10.0.0.0/8": false, "10.0.0.0/8 ": false, "10.0.0.0/8,10.1.0.0/16": false,
		"": false, strings.Repeat("1", 44): false, "10.0.0.0/8;": false,
	}
	for _, s := range validationtest.HostileStrings() {
		cidrs["10.0.0.0/8"+s] = false
	}
	for value, valid := range cidrs {
		add("sourceRanges.allow", value, valid, func(tc *ruleCase) {
			tc.route.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{v1.CIDR(value)}}
		})
		add("sourceRanges.deny", value, valid, func(tc *ruleCase) {
			tc.route.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"192.0.2.0/24", v1.CIDR(value)}}
		})
	}
	networks := func(n int) []v1.CIDR {
		out := make([]v1.CIDR, n)
		for i := range out {
			out[i] = v1.CIDR(fmt.Sprintf("10.%d.0.0/16", i))
		}
		return out
	}
	for value, tc := range map[string]struct {
		ranges v1.SourceRanges
		valid  bool
	}{
		"64 allowed":                  {ranges: v1.SourceRanges{Allow: networks(64)}, valid: true},
		"65 allowed":                  {ranges: v1.SourceRanges{Allow: networks(65)}},
		"64 denied":                   {ranges: v1.SourceRanges{Deny: networks(64)}, valid: true},
		"65 denied":                   {ranges: v1.SourceRanges{Deny: networks(65)}},
		"64 each":                     {ranges: v1.SourceRanges{Allow: networks(64), Deny: networks(64)}, valid: true},
		"allowed twice":               {ranges: v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8", "10.0.0.0/8"}}},
		"denied three times":          {ranges: v1.SourceRanges{Deny: []v1.CIDR{"10.0.0.0/8", "::/0", "10.0.0.0/8", "10.0.0.0/8"}}},
		"a bad network twice":         {ranges: v1.SourceRanges{Deny: []v1.CIDR{"10.0.0.1/8", "10.0.0.1/8"}}},
		"allowed and denied":          {ranges: v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8"}, Deny: []v1.CIDR{"10.0.0.0/8"}}, valid: true},
		"denied inside allowed":       {ranges: v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8"}, Deny: []v1.CIDR{"10.1.0.0/16"}}, valid: true},
		"neither list":                {},
		"both families, both lists":   {ranges: v1.SourceRanges{Allow: []v1.CIDR{"0.0.0.0/0", "::/0"}, Deny: []v1.CIDR{"192.0.2.0/24", "2001:db8::/32"}}, valid: true},
		"a bad network in each list":  {ranges: v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.1/8"}, Deny: []v1.CIDR{"2001:DB8::/32"}}},
		"a bad network past the good": {ranges: v1.SourceRanges{Allow: append(networks(3), "10.0.0.0")}},
	} {
		add("sourceRanges", value, tc.valid, func(p *ruleCase) { p.route.SourceRanges = &tc.ranges })
	}
}

func backendCases(add addCase) {
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
		// Past 7, only valid entries (see headerListCases).
		"20 20 20 20 20 20 20 20": false,
	} {
		var weights []int32
		for w := range strings.FieldsSeq(value) {
			var n int32
			_, _ = fmt.Sscan(w, &n)
			weights = append(weights, n)
		}
		add("additionalBackends weights", value, valid, func(tc *ruleCase) { tc.route.AdditionalBackends = backends(weights...) })
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
		add("additionalBackends duplicates", value, valid, func(tc *ruleCase) { tc.route.AdditionalBackends = list })
	}
	names := map[string]bool{
		"svc": true, strings.Repeat("s", 63): true, strings.Repeat("s", 64): false, "": false, "1svc": false,
		"Svc": false, "svc.ns": false, "svc-": false, `web";return 200;#`: false,
	}
	for _, s := range validationtest.HostileStrings() {
		names[s] = false
	}
	for value, valid := range names {
		add("additionalBackends name", value, valid, func(tc *ruleCase) {
			w := ok
			w.Name = v1.ServiceName(value)
			tc.route.AdditionalBackends = []v1.WeightedBackend{w}
		})
	}
	for value, valid := range map[int32]bool{1: true, 65535: true, 0: false, -1: false, 65536: false} {
		add("additionalBackends port", fmt.Sprint(value), valid, func(tc *ruleCase) {
			w := ok
			w.Port = v1.PortNumber(value)
			tc.route.AdditionalBackends = []v1.WeightedBackend{w}
		})
	}
}

func rewriteCases(add addCase) {
	prefixes := map[string]bool{
		"/": true, "/v2": true, "/v2/": true, "/a-b._~!&()*+,=:@/": true, "/" + strings.Repeat("a", 1023): true,
		"/" + strings.Repeat("a", 1024): false, "v2": false, "/a%2Fb": false, "/100%25": false, "/%41": false,
		"/a%": false, "/a/../b": false, "/a/..": false, "/a/./b": false, "//": false, "/a//b": false, "/caf\u00e9": false,
		"/v2?x=1": false, "/$1": false, "/a b": false, "/a#b": false,
	}
	for _, s := range validationtest.HostileStrings() {
		prefixes["/"+s] = false
	}
	for value, valid := range prefixes {
		add("rewritePrefix", value, valid, func(tc *ruleCase) { tc.route.RewritePrefix = v1.HTTPPath(value) })
	}
	for value, valid := range map[string]bool{"/": false, "/v2": false, "/a b": false} {
		add("rewritePrefix on an Exact route", value, valid, func(tc *ruleCase) {
			tc.route.PathType, tc.route.RewritePrefix = v1.PathTypeExact, v1.HTTPPath(value)
		})
	}
}

// headerSlots are the six places a header name is written, and for the
// four that hold a value, where its value goes.
var headerSlots = map[string]func(r *v1.Route, name, value string){
	"requestHeaders.set":     func(r *v1.Route, n, v string) { r.RequestHeaders = &v1.HeaderModifier{Set: headers(n, v)} },
	"requestHeaders.add":     func(r *v1.Route, n, v string) { r.RequestHeaders = &v1.HeaderModifier{Add: headers(n, v)} },
	"requestHeaders.remove":  func(r *v1.Route, n, _ string) { r.RequestHeaders = &v1.HeaderModifier{Remove: headerNames(n)} },
	"responseHeaders.set":    func(r *v1.Route, n, v string) { r.ResponseHeaders = &v1.HeaderModifier{Set: headers(n, v)} },
	"responseHeaders.add":    func(r *v1.Route, n, v string) { r.ResponseHeaders = &v1.HeaderModifier{Add: headers(n, v)} },
	"responseHeaders.remove": func(r *v1.Route, n, _ string) { r.ResponseHeaders = &v1.HeaderModifier{Remove: headerNames(n)} },
}

func headers(names ...string) []v1.HTTPHeader {
	out := make([]v1.HTTPHeader, 0, len(names)/2)
	for i := 0; i+1 < len(names); i += 2 {
		out = append(out, v1.HTTPHeader{Name: v1.HTTPHeaderName(names[i]), Value: v1.HTTPHeaderValue(names[i+1])})
	}
	return out
}

func headerNames(ns ...string) []v1.HTTPHeaderName {
	out := make([]v1.HTTPHeaderName, len(ns))
	for i, n := range ns {
		out[i] = v1.HTTPHeaderName(n)
	}
	return out
}

func headerCases(add addCase) {
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
	for _, s := range validationtest.HostileStrings() {
		headerNames["X"+s] = false
	}
	values := map[string]bool{
		"payments": true, "": true, "a b": true, "a;b": true, "a{b": true, "a}b": true, "#x": true, "'": true,
		"100%": true, "!#%&()*+,-./:;<=>?@[]^_`{|}~": true, strings.Repeat("v", 1024): true,
		strings.Repeat("v", 1025): false, " a": false, "a ": false, " ": false,
	}
	for name, s := range validationtest.HostileStrings() {
		switch name {
		case "single quote", "semicolon", "open brace", "close brace", "space", "hash":
			values[s] = true // text inside a quoted nginx argument
		default:
			values[s] = false
		}
	}
	for slot, set := range headerSlots {
		for value, valid := range headerNames {
			add(slot+" name", value, valid, func(tc *ruleCase) { set(&tc.route, value, "v") })
		}
		if strings.HasSuffix(slot, ".remove") {
			continue
		}
		for value, valid := range values {
			add(slot+" value", value, valid, func(tc *ruleCase) { set(&tc.route, "X-Team", value) })
		}
	}
	headerListCases(add)
	matchCases(add)
}

// matchCases: each kind of condition of a rule's matches, on both sides
// of each bound and pattern, and the hostile strings in every slot; the
// rules' own bounds and backends (ruleListCases).
func matchCases(add addCase) {
	canary := v1.BackendService{Name: "canary", Port: 8080}
	set := func(m v1.RequestMatch) func(*ruleCase) {
		return func(tc *ruleCase) {
			tc.route.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{m}, BackendService: canary}}
		}
	}
	header := func(n string, t v1.MatchType, v string) v1.RequestMatch {
		return v1.RequestMatch{Headers: []v1.HeaderMatch{{Name: v1.HTTPHeaderName(n), Type: t, Value: v1.HTTPHeaderValue(v)}}}
	}
	query := func(n string, t v1.MatchType, v string) v1.RequestMatch {
		return v1.RequestMatch{QueryParams: []v1.QueryParamMatch{{Name: v1.MatchName(n), Type: t, Value: v}}}
	}
	cookie := func(n, v string) v1.RequestMatch {
		return v1.RequestMatch{Cookies: []v1.CookieMatch{{Name: v1.MatchName(n), Value: v}}}
	}
	for value, valid := range map[string]bool{
		"X-Canary": true, strings.Repeat("x", 64): true, strings.Repeat("x", 65): false, "X_Canary": false,
		"Host": false, "upgrade": false, "Connection": false,
	} {
		add("matches header name", value, valid, set(header(value, v1.MatchPresent, "")))
	}
	names := map[string]bool{
		"session": true, "Session_2": true, "_": true, strings.Repeat("s", 64): true, strings.Repeat("s", 65): false,
		"my-session": false, "a.b": false, "a b": false,
	}
	for _, s := range validationtest.HostileStrings() {
		names["a"+s] = false
	}
	for value, valid := range names {
		add("matches query name", value, valid, set(query(value, v1.MatchPresent, "")))
		add("matches cookie name", value, valid, set(cookie(value, "v")))
	}
	headerValues := map[string]bool{"always": true, "a b": true, strings.Repeat("v", 1024): true, strings.Repeat("v", 1025): false, " a": false, `a"b`: false, "a$b": false}
	for value, valid := range headerValues {
		add("matches header value", value, valid, set(header("X-Canary", v1.MatchExact, value)))
	}
	queryValues := map[string]bool{
		"1": true, "a-b._~!*(),/:@": true, strings.Repeat("v", 256): true, strings.Repeat("v", 257): false,
		"a b": false, "a%20b": false, "a+b": false, "a&b": false, "a=b": false, "a;b": false, "a$b": false,
	}
	cookieValues := map[string]bool{
		"beta": true, "a-b._~!#&'()*+/:<=>?@^|": true, strings.Repeat("v", 256): true, strings.Repeat("v", 257): false,
		"a b": false, "a;b": false, "a,b": false, `a"b`: false, "a$b": false, `a\b`: false, "a{b": false,
	}
	for name, s := range validationtest.HostileStrings() {
		queryValues["a"+s] = false
		// A quote and a hash are cookie octets, and text in a quoted nginx
		// string.
		cookieValues["a"+s] = name == "single quote" || name == "hash"
	}
	for value, valid := range queryValues {
		add("matches query value", value, valid, set(query("debug", v1.MatchExact, value)))
	}
	for value, valid := range cookieValues {
		add("matches cookie value", value, valid, set(cookie("session", value)))
	}
	many := func(n int) v1.RequestMatch {
		var m v1.RequestMatch
		for i := range n {
			m.Headers = append(m.Headers, v1.HeaderMatch{Name: v1.HTTPHeaderName(fmt.Sprintf("X-%d", i)), Type: v1.MatchPresent})
			m.QueryParams = append(m.QueryParams, v1.QueryParamMatch{Name: v1.MatchName(fmt.Sprintf("q%d", i)), Type: v1.MatchPresent})
			m.Cookies = append(m.Cookies, v1.CookieMatch{Name: v1.MatchName(fmt.Sprintf("c%d", i)), Value: "v"})
		}
		return m
	}
	get := v1.HTTPMethod("GET")
	for value, tc := range map[string]struct {
		ms    []v1.RequestMatch
		valid bool
	}{
		"a method":                     {ms: []v1.RequestMatch{{Method: &get}}, valid: true},
		"method get":                   {ms: []v1.RequestMatch{{Method: ptr.To(v1.HTTPMethod("get"))}}},
		"method PURGE":                 {ms: []v1.RequestMatch{{Method: ptr.To(v1.HTTPMethod("PURGE"))}}},
		"an empty set":                 {ms: []v1.RequestMatch{{}}},
		"8 of each":                    {ms: []v1.RequestMatch{many(8)}, valid: true},
		"9 of each":                    {ms: []v1.RequestMatch{many(9)}},
		"4 matches":                    {ms: slices.Repeat([]v1.RequestMatch{{Method: &get}}, 4), valid: true},
		"5 matches":                    {ms: slices.Repeat([]v1.RequestMatch{{Method: &get}}, 5)},
		"no match":                     {ms: nil},
		"Exact header without a value": {ms: []v1.RequestMatch{header("X-A", v1.MatchExact, "")}},
		"Present header with a value":  {ms: []v1.RequestMatch{header("X-A", v1.MatchPresent, "1")}},
		"header type Regex":            {ms: []v1.RequestMatch{header("X-A", "RegularExpression", "1")}},
		"Exact query without a value":  {ms: []v1.RequestMatch{query("a", v1.MatchExact, "")}},
		"Present query with a value":   {ms: []v1.RequestMatch{query("a", v1.MatchPresent, "1")}},
		"a header twice":               {ms: []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-A", Type: v1.MatchPresent}, {Name: "X-A", Type: v1.MatchExact, Value: "1"}}}}},
		"a header twice, case differs": {ms: []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-A", Type: v1.MatchPresent}, {Name: "x-a", Type: v1.MatchExact, Value: "1"}}}}, valid: true},
		"a cookie twice":               {ms: []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "a", Value: "1"}, {Name: "a", Value: "2"}}}}},
		"a query parameter twice":      {ms: []v1.RequestMatch{{QueryParams: []v1.QueryParamMatch{{Name: "a", Type: v1.MatchPresent}, {Name: "a", Type: v1.MatchPresent}}}}},
		"every kind, two sets":         {ms: []v1.RequestMatch{many(2), {Method: &get, Cookies: []v1.CookieMatch{{Name: "a", Value: "1"}}}}, valid: true},
	} {
		add("matches", value, tc.valid, func(p *ruleCase) {
			p.route.Rules = []v1.RouteRule{{Matches: tc.ms, BackendService: canary}}
		})
	}
	ruleListCases(add)
}

// ruleListCases: the number of rules, a rule's backend, and a route's
// own backendService, which only a route with rules may leave out.
func ruleListCases(add addCase) {
	get := v1.HTTPMethod("GET")
	rule := func(name string, port v1.PortNumber) v1.RouteRule {
		return v1.RouteRule{Matches: []v1.RequestMatch{{Method: &get}}, BackendService: v1.BackendService{Name: v1.ServiceName(name), Port: port}}
	}
	for value, tc := range map[string]struct {
		rules     []v1.RouteRule
		noBackend bool
		weighted  bool
		valid     bool
	}{
		"8 rules":                                      {rules: slices.Repeat([]v1.RouteRule{rule("canary", 80)}, 8), valid: true},
		"9 rules":                                      {rules: slices.Repeat([]v1.RouteRule{rule("canary", 80)}, 9)},
		"a rule to backend port 0":                     {rules: []v1.RouteRule{rule("canary", 0)}},
		"a rule to backend Canary":                     {rules: []v1.RouteRule{rule("Canary", 80)}},
		"a rule without backend":                       {rules: []v1.RouteRule{rule("", 0)}},
		"rules, no backendService":                     {rules: []v1.RouteRule{rule("canary", 80)}, noBackend: true, valid: true},
		"no rules, no backendService":                  {noBackend: true},
		"rules, additionalBackends, no backendService": {rules: []v1.RouteRule{rule("canary", 80)}, noBackend: true, weighted: true},
		"rules, additionalBackends":                    {rules: []v1.RouteRule{rule("canary", 80)}, weighted: true, valid: true},
	} {
		add("rules", value, tc.valid, func(p *ruleCase) {
			p.route.Rules = tc.rules
			if tc.noBackend {
				p.route.BackendService = v1.BackendService{}
			}
			if tc.weighted {
				p.route.AdditionalBackends = []v1.WeightedBackend{{Name: "canary-2", Port: 80, Weight: 10}}
			}
		})
	}
}

// headerListCases: each header named once per modifier, across its
// three lists, without case; at most 16 per list. A list past its bound
// is refused at the list by every layer; the table holds no bad entry past
// it, because there the layers part on what else they report, not on the
// verdict: the API server still checks an entry's schema but skips its
// CEL rules (their cost was bounded by maxItems), and Go checks neither.
func headerListCases(add addCase) {
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
		"set twice":                        {m: v1.HeaderModifier{Set: headers("X-A", "1", "X-A", "2")}},
		"set twice, case differs":          {m: v1.HeaderModifier{Set: headers("X-A", "1", "x-a", "2")}},
		"add twice":                        {m: v1.HeaderModifier{Add: headers("X-A", "1", "X-A", "1")}},
		"add twice, case differs":          {m: v1.HeaderModifier{Add: headers("X-A", "1", "X-a", "1")}},
		"remove twice":                     {m: v1.HeaderModifier{Remove: headerNames("X-A", "X-A")}},
		"remove twice, case differs":       {m: v1.HeaderModifier{Remove: headerNames("X-A", "x-A")}},
		"set and removed":                  {m: v1.HeaderModifier{Set: headers("X-A", "1"), Remove: headerNames("X-A")}},
		"set thrice":                       {m: v1.HeaderModifier{Set: headers("X-A", "1", "X-A", "2", "X-A", "3")}},
		"removed thrice, twice as written": {m: v1.HeaderModifier{Remove: headerNames("X-A", "x-a", "X-A", "X-A")}},
		"set and removed, case":            {m: v1.HeaderModifier{Set: headers("X-A", "1"), Remove: headerNames("x-a")}},
		"set and added":                    {m: v1.HeaderModifier{Set: headers("X-A", "1"), Add: headers("X-A", "1")}},
		"added and removed, case":          {m: v1.HeaderModifier{Add: headers("x-a", "1"), Remove: headerNames("X-A")}},
		"set twice and removed":            {m: v1.HeaderModifier{Set: headers("X-A", "1", "X-A", "2"), Remove: headerNames("X-A")}},
		"distinct in each list":            {m: v1.HeaderModifier{Set: headers("X-A", "1"), Add: headers("X-B", "1"), Remove: headerNames("X-C")}, valid: true},
		"16 set":                           {m: v1.HeaderModifier{Set: headers(many(16)...)}, valid: true},
		"17 set":                           {m: v1.HeaderModifier{Set: headers(many(17)...)}},
		"16 added":                         {m: v1.HeaderModifier{Add: headers(many(16)...)}, valid: true},
		"17 added":                         {m: v1.HeaderModifier{Add: headers(many(17)...)}},
		"16 removed":                       {m: v1.HeaderModifier{Remove: manyNames(16)}, valid: true},
		"17 removed":                       {m: v1.HeaderModifier{Remove: manyNames(17)}},
		"17 set, one also removed":         {m: v1.HeaderModifier{Set: headers(many(17)...), Remove: headerNames("X-00")}},
		"empty":                            {m: v1.HeaderModifier{}, valid: true},
	} {
		add("requestHeaders", value, tc.valid, func(p *ruleCase) { p.route.RequestHeaders = &tc.m })
		add("responseHeaders", value, tc.valid, func(p *ruleCase) { p.route.ResponseHeaders = &tc.m })
	}
	add("headers", "the same name in request and response headers", true, func(p *ruleCase) {
		p.route.RequestHeaders = &v1.HeaderModifier{Set: headers("X-A", "1")}
		p.route.ResponseHeaders = &v1.HeaderModifier{Set: headers("X-A", "1"), Remove: headerNames("X-B")}
	})
}

// ruleCaseGateway is a valid gateway with tc's name and its one route.
func ruleCaseGateway(tc ruleCase) *v1.APIGateway {
	gw := validationtest.GatewayWith(func(gw *v1.APIGateway) {
		gw.Name, gw.Spec.Routes, gw.Spec.TLS = ruleCaseName, []v1.Route{tc.route}, nil
	})
	if tc.name != "" {
		gw.Name = tc.name
	}
	return gw
}

// apiServerVerdict creates gw as a dry run and returns the distinct fields
// of the API server's refusal, none when it admits gw. The object is sent
// as written, empty strings included, so the schema's defaults do not
// fill in what the case leaves empty.
func apiServerVerdict(t *testing.T, env *testenv.Env, gw *v1.APIGateway) []string {
	t.Helper()
	r := gw.Spec.Routes[0]
	// The traffic settings as JSON writes them: each is optional, and an
	// empty one is unset to every layer, so omitempty drops nothing a
	// layer would judge.
	route, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	require.NoError(t, err)
	maps.Copy(route, map[string]any{"host": string(r.Host), "path": string(r.Path), "pathType": string(r.PathType)})
	if r.BackendService != (v1.BackendService{}) {
		// Set even when a part is empty, for the layers to judge it.
		route["backendService"] = map[string]any{"name": string(r.BackendService.Name), "port": int64(r.BackendService.Port)}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "APIGateway",
		"metadata": map[string]any{"name": gw.Name, "namespace": gw.Namespace},
		"spec": map[string]any{
			"image": gw.Spec.Image, "replicas": int64(*gw.Spec.Replicas),
			"routes": []any{route},
		},
	}}
	err = env.Client.Create(t.Context(), obj, client.DryRunAll)
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status) && apierrors.IsInvalid(err), "not a verdict on the object: %v", err)
	var got []string
	root := false
	for _, c := range status.Status().Details.Causes {
		if c.Field == rootField {
			root = true
			continue
		}
		got = append(got, c.Field)
	}
	// The CRD's one rule at the object's root is the name rule (only a
	// root rule may read metadata.name, and a CRD cannot point its errors
	// at a metadata field), so the API server reports it at the root.
	// Beside other errors, a root cause says instead that the root rule
	// was not checked.
	if root && len(got) == 0 {
		got = append(got, "metadata.name")
	}
	return distinct(got)
}

// rootField is how a StatusCause names the object's root: the field path
// of the CRD's root-level rules.
const rootField = "<nil>"

// fields are the distinct fields of errs.
func fields(errs field.ErrorList) []string {
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	return distinct(got)
}

func distinct(fields []string) []string {
	slices.Sort(fields)
	return slices.Compact(fields)
}
