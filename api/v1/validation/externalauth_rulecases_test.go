package validation

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// externalAuthCases are a route's external authentication
// (routes[].externalAuth) in TestRuleCases: each field on both sides of
// its bound, the hostile strings in each string field, the headers the
// gateway sets itself, and response headers that requestHeaders change
// too. Each case has one fault, on an otherwise valid route.
func externalAuthCases(add addCase) {
	valid := func() v1.ExternalAuth {
		return v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth",
			ForwardHeaders:  []v1.HTTPHeaderName{"Cookie", "Authorization"},
			ResponseHeaders: []v1.HTTPHeaderName{"X-Auth-Request-User"},
			SignInURL:       "https://login.example.com/oauth2/start", TimeoutSeconds: ptr.To[int32](5)}
	}
	type authCase struct {
		set   func(*v1.ExternalAuth)
		route func(*v1.Route)
		valid bool
	}
	names := func(n int) []v1.HTTPHeaderName {
		out := make([]v1.HTTPHeaderName, n)
		for i := range out {
			out[i] = v1.HTTPHeaderName(fmt.Sprintf("X-H%d", i))
		}
		return out
	}
	cases := map[string]authCase{
		"every field":                  {valid: true},
		"service and port alone":       {set: func(a *v1.ExternalAuth) { *a = v1.ExternalAuth{Service: "auth", Port: 80, Path: "/"} }, valid: true},
		"no service":                   {set: func(a *v1.ExternalAuth) { a.Service = "" }},
		"service in another namespace": {set: func(a *v1.ExternalAuth) { a.Service = "auth.other" }},
		"service upper-case":           {set: func(a *v1.ExternalAuth) { a.Service = "Auth" }},
		"port 0":                       {set: func(a *v1.ExternalAuth) { a.Port = 0 }},
		"port 65536":                   {set: func(a *v1.ExternalAuth) { a.Port = 65536 }},
		"no path":                      {set: func(a *v1.ExternalAuth) { a.Path = "" }},
		"a path percent-encoded":       {set: func(a *v1.ExternalAuth) { a.Path = "/caf%C3%A9" }},
		"a path with a dot segment":    {set: func(a *v1.ExternalAuth) { a.Path = "/a/../b" }},
		"a path not starting with /":   {set: func(a *v1.ExternalAuth) { a.Path = "oauth2/auth" }},
		"16 forwarded headers":         {set: func(a *v1.ExternalAuth) { a.ForwardHeaders = names(16) }, valid: true},
		"17 forwarded headers":         {set: func(a *v1.ExternalAuth) { a.ForwardHeaders = names(17) }},
		"16 response headers":          {set: func(a *v1.ExternalAuth) { a.ResponseHeaders = names(16) }, valid: true},
		"17 response headers":          {set: func(a *v1.ExternalAuth) { a.ResponseHeaders = names(17) }},
		"a forwarded header twice":     {set: func(a *v1.ExternalAuth) { a.ForwardHeaders = []v1.HTTPHeaderName{"Cookie", "Cookie"} }},
		"a response header twice":      {set: func(a *v1.ExternalAuth) { a.ResponseHeaders = []v1.HTTPHeaderName{"X-User", "X-User"} }},
		"forwarding X-Original-URI":    {set: func(a *v1.ExternalAuth) { a.ForwardHeaders = []v1.HTTPHeaderName{"x-original-uri"} }},
		"forwarding X-Original-Method": {set: func(a *v1.ExternalAuth) { a.ForwardHeaders = []v1.HTTPHeaderName{"X-Original-Method"} }},
		"timeout 1":                    {set: func(a *v1.ExternalAuth) { a.TimeoutSeconds = ptr.To[int32](1) }, valid: true},
		"timeout 30":                   {set: func(a *v1.ExternalAuth) { a.TimeoutSeconds = ptr.To[int32](30) }, valid: true},
		"timeout 0":                    {set: func(a *v1.ExternalAuth) { a.TimeoutSeconds = ptr.To[int32](0) }},
		"timeout 31":                   {set: func(a *v1.ExternalAuth) { a.TimeoutSeconds = ptr.To[int32](31) }},
		"a response header requestHeaders set": {route: func(r *v1.Route) {
			r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "x-auth-request-user", Value: "admin"}}}
		}},
		"a response header requestHeaders add": {route: func(r *v1.Route) {
			r.RequestHeaders = &v1.HeaderModifier{Add: []v1.HTTPHeader{{Name: "X-Auth-Request-User", Value: "admin"}}}
		}},
		"a response header requestHeaders remove": {route: func(r *v1.Route) {
			r.RequestHeaders = &v1.HeaderModifier{Remove: []v1.HTTPHeaderName{"X-Auth-Request-User"}}
		}},
		"other headers requestHeaders change": {route: func(r *v1.Route) {
			r.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-Team", Value: "a"}}, Remove: []v1.HTTPHeaderName{"X-Debug"}}
		}, valid: true},
		"with every setting": {route: func(r *v1.Route) { *r = validationtest.EverySetting(*r) }, valid: true},
	}
	for _, h := range []string{"Host", "Connection", "Upgrade", "Keep-Alive", "TE", "Trailer", "Transfer-Encoding", "Proxy-Connection", "Content-Length", "X-Forwarded-For", "X-Real-IP", "forwarded"} {
		cases["forwarding "+h] = authCase{set: func(a *v1.ExternalAuth) { a.ForwardHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName(h)} }}
		cases["response header "+h] = authCase{set: func(a *v1.ExternalAuth) { a.ResponseHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName(h)} }}
	}
	for value, ok := range map[string]bool{
		"https://login.example.com/oauth2/start":                true,
		"https://login.example.com":                             true,
		"https://login.example.com:8443/start?app=shop&x=1":     true,
		"https://login.example.com/a%20b":                       true,
		"http://login.example.com/oauth2/start":                 false,
		"https:///oauth2/start":                                 false,
		"/oauth2/start":                                         false,
		"https://login.example.com/start#frag":                  false,
		"https://Login.example.com/start":                       false,
		"https://login.example.com/$host":                       false,
		"https://login.example.com/a\"b":                        false,
		"https://login.example.com/a;b":                         false,
		"https://login.example.com/a b":                         false,
		"https://login.example.com/" + strings.Repeat("a", 998): true,
		"https://login.example.com/" + strings.Repeat("a", 999): false,
		"javascript://login.example.com/%0aalert(1)":            false,
	} {
		cases["signInURL "+value] = authCase{set: func(a *v1.ExternalAuth) { a.SignInURL = value }, valid: ok}
	}
	for name, s := range validationtest.HostileStrings() {
		cases["a path with a "+name] = authCase{set: func(a *v1.ExternalAuth) { a.Path = v1.HTTPPath("/" + s) }}
		cases["a forwarded header with a "+name] = authCase{set: func(a *v1.ExternalAuth) { a.ForwardHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName("X" + s)} }}
		cases["a response header with a "+name] = authCase{set: func(a *v1.ExternalAuth) { a.ResponseHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName("X" + s)} }}
		cases["a signInURL with a "+name] = authCase{set: func(a *v1.ExternalAuth) { a.SignInURL = "https://login.example.com/" + s }}
		cases["a service with a "+name] = authCase{set: func(a *v1.ExternalAuth) { a.Service = v1.ServiceName("auth" + s) }}
	}
	for value, tc := range cases {
		add("externalAuth", value, tc.valid, func(p *ruleCase) {
			if tc.route != nil {
				tc.route(&p.route)
			}
			if p.route.ExternalAuth == nil {
				a := valid()
				if tc.set != nil {
					tc.set(&a)
				}
				p.route.ExternalAuth = &a
			}
		})
	}
}
