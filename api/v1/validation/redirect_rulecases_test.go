package validation

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// redirectCases are a route's redirect (routes[].redirect) in TestRuleCases:
// each field on both sides of its bound, the hostile strings in the
// hostname and the path, and what a redirect that answers every request
// leaves the route (no backend, no setting of the proxied request). Each
// case has one fault, on a route that is otherwise valid: the API server
// skips the CEL rules of an object whose schema (an enum) it refused
// first, and Go does not, so two faults could part the layers on what
// else they report, never on the verdict.
func redirectCases(add addCase) {
	prefix := func(v string) *v1.RedirectPath {
		return &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: v1.HTTPPath(v)}
	}
	full := func(v string) *v1.RedirectPath {
		return &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: v1.HTTPPath(v)}
	}
	type redirectCase struct {
		rd v1.HTTPRedirect
		// backend keeps the route's backendService; exact makes it an
		// Exact route; set changes it further.
		backend, exact bool
		set            func(*v1.Route)
		valid          bool
	}
	cases := map[string]redirectCase{
		"to https, the backend kept":                {rd: v1.HTTPRedirect{Scheme: "https"}, backend: true, valid: true},
		"to http, port and path, the backend kept":  {rd: v1.HTTPRedirect{Scheme: "http", Port: ptr.To[v1.PortNumber](8080), Path: prefix("/")}, backend: true, valid: true},
		"to https, no backend":                      {rd: v1.HTTPRedirect{Scheme: "https"}},
		"to https with rules, no backend":           {rd: v1.HTTPRedirect{Scheme: "https"}, set: withRule, valid: true},
		"to https on another host, no backend":      {rd: v1.HTTPRedirect{Scheme: "https", Hostname: "new.example.com"}, valid: true},
		"to https on another host, a backend":       {rd: v1.HTTPRedirect{Scheme: "https", Hostname: "new.example.com"}, backend: true},
		"to another host, no backend":               {rd: v1.HTTPRedirect{Hostname: "new.example.com"}, valid: true},
		"to another host, a backend":                {rd: v1.HTTPRedirect{Hostname: "new.example.com"}, backend: true},
		"a prefix replaced, no backend":             {rd: v1.HTTPRedirect{Path: prefix("/new/")}, valid: true},
		"a prefix replaced on an Exact route":       {rd: v1.HTTPRedirect{Path: prefix("/new/")}, exact: true},
		"a full path on an Exact route":             {rd: v1.HTTPRedirect{Path: full("/new")}, exact: true, valid: true},
		"changes nothing":                           {rd: v1.HTTPRedirect{}},
		"a status alone":                            {rd: v1.HTTPRedirect{StatusCode: ptr.To[int32](301)}},
		"scheme HTTPS":                              {rd: v1.HTTPRedirect{Scheme: "HTTPS"}, backend: true},
		"scheme ftp":                                {rd: v1.HTTPRedirect{Scheme: "ftp"}, backend: true},
		"path type Regex":                           {rd: v1.HTTPRedirect{Path: &v1.RedirectPath{Type: "Regex", Value: "/x"}}},
		"path type empty":                           {rd: v1.HTTPRedirect{Path: &v1.RedirectPath{Value: "/x"}}},
		"path value empty":                          {rd: v1.HTTPRedirect{Path: full("")}},
		"path value percent-encoded UTF-8":          {rd: v1.HTTPRedirect{Path: full("/caf%C3%A9/")}, valid: true},
		"path value with an empty segment":          {rd: v1.HTTPRedirect{Path: full("//evil.example.com/")}},
		"path value with a dot segment":             {rd: v1.HTTPRedirect{Path: prefix("/a/../b")}},
		"path value not starting with /":            {rd: v1.HTTPRedirect{Path: full("https://evil.example.com/")}},
		"path value of 1025 bytes":                  {rd: v1.HTTPRedirect{Path: full("/" + strings.Repeat("a", 1024))}},
		"a wildcard hostname":                       {rd: v1.HTTPRedirect{Hostname: "*.example.com"}},
		"an upper-case hostname":                    {rd: v1.HTTPRedirect{Hostname: "New.example.com"}},
		"an IP address hostname":                    {rd: v1.HTTPRedirect{Hostname: "10.0.0.1"}},
		"a hostname of 253 bytes":                   {rd: v1.HTTPRedirect{Hostname: v1.Hostname(validationtest.MaximalHost(1, false))}, valid: true},
		"with responseHeaders, no backend":          {rd: v1.HTTPRedirect{Path: full("/")}, set: func(r *v1.Route) { r.ResponseHeaders = &v1.HeaderModifier{Remove: []v1.HTTPHeaderName{"X-A"}} }, valid: true},
		"with requestHeaders, no backend":           {rd: v1.HTTPRedirect{Path: full("/")}, set: func(r *v1.Route) { r.RequestHeaders = &v1.HeaderModifier{Remove: []v1.HTTPHeaderName{"X-A"}} }},
		"with rules, no backend":                    {rd: v1.HTTPRedirect{Path: full("/")}, set: withRule},
		"with timeouts, no backend":                 {rd: v1.HTTPRedirect{Path: full("/")}, set: func(r *v1.Route) { r.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](5)} }},
		"with maxBodySize, no backend":              {rd: v1.HTTPRedirect{Path: full("/")}, set: func(r *v1.Route) { r.MaxBodySize = "1m" }},
		"with rateLimit, no backend":                {rd: v1.HTTPRedirect{Path: full("/")}, set: func(r *v1.Route) { r.RateLimit = &v1.RateLimit{RequestsPerSecond: 5} }},
		"with rewritePrefix, no backend":            {rd: v1.HTTPRedirect{Path: full("/")}, set: func(r *v1.Route) { r.RewritePrefix = "/" }},
		"to https with every setting and a backend": {rd: v1.HTTPRedirect{Scheme: "https"}, backend: true, set: func(r *v1.Route) { *r = validationtest.EverySetting(*r) }, valid: true},
	}
	for value, valid := range map[int32]bool{301: true, 302: true, 303: true, 307: true, 308: true, 300: false, 304: false, 200: false, 0: false} {
		cases[fmt.Sprintf("status %d", value)] = redirectCase{rd: v1.HTTPRedirect{Path: full("/"), StatusCode: ptr.To(value)}, valid: valid}
	}
	for value, valid := range map[int32]bool{1: true, 443: true, 65535: true, 0: false, 65536: false} {
		cases[fmt.Sprintf("port %d", value)] = redirectCase{rd: v1.HTTPRedirect{Port: ptr.To(v1.PortNumber(value))}, valid: valid}
	}
	for name, s := range validationtest.HostileStrings() {
		cases["a hostname with a "+name] = redirectCase{rd: v1.HTTPRedirect{Hostname: v1.Hostname(s)}}
		cases["a path with a "+name] = redirectCase{rd: v1.HTTPRedirect{Path: full("/" + s)}}
	}
	for value, tc := range cases {
		add("redirect", value, tc.valid, func(p *ruleCase) {
			rd := tc.rd
			p.route.Redirect = &rd
			if !tc.backend {
				p.route.BackendService = v1.BackendService{}
			}
			if tc.exact {
				p.route.PathType = v1.PathTypeExact
			}
			if tc.set != nil {
				tc.set(&p.route)
				p.route.Redirect = &rd
			}
		})
	}
}

// withRule gives r one rule, by method, to Service canary.
func withRule(r *v1.Route) {
	get := v1.HTTPMethod("GET")
	r.Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: &get}}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
}
