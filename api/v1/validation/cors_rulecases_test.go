package validation

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// corsCases are a route's CORS (routes[].cors) in TestRuleCases: the
// three kinds of origin and the strings an origin must not hold, each
// list on both sides of its bound, "*" with others and with credentials,
// and maxAge's bounds. Each case has one fault, on an otherwise valid
// route.
func corsCases(add addCase) {
	valid := func() v1.CORS {
		return v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com", "https://*.example.org:8443"},
			AllowMethods: []v1.CORSMethod{"PUT", "DELETE"}, AllowHeaders: []v1.CORSHeaderName{"X-Team", "Authorization"},
			ExposeHeaders: []v1.HTTPHeaderName{"X-Request-Id"}, MaxAge: ptr.To[int32](600), AllowCredentials: true}
	}
	origins := func(n int) []v1.CORSOrigin {
		out := make([]v1.CORSOrigin, n)
		for i := range out {
			out[i] = v1.CORSOrigin(fmt.Sprintf("https://a%d.example.com", i))
		}
		return out
	}
	names := func(n int) []v1.HTTPHeaderName {
		out := make([]v1.HTTPHeaderName, n)
		for i := range out {
			out[i] = v1.HTTPHeaderName(fmt.Sprintf("X-H%d", i))
		}
		return out
	}
	allowed := func(n int) []v1.CORSHeaderName {
		out := make([]v1.CORSHeaderName, n)
		for i, h := range names(n) {
			out[i] = v1.CORSHeaderName(h)
		}
		return out
	}
	cases := map[string]func(*v1.CORS){
		"every field":        nil,
		"origins alone":      func(c *v1.CORS) { *c = v1.CORS{AllowOrigins: []v1.CORSOrigin{"http://localhost.localdomain:3000"}} },
		"* alone":            func(c *v1.CORS) { *c = v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}} },
		"no origins":         func(c *v1.CORS) { c.AllowOrigins = nil },
		"* with credentials": func(c *v1.CORS) { c.AllowOrigins = []v1.CORSOrigin{"*"} },
		"* with another origin": func(c *v1.CORS) {
			c.AllowOrigins = []v1.CORSOrigin{"*", "https://a.example.com"}
			c.AllowCredentials = false
		},
		"an origin twice": func(c *v1.CORS) { c.AllowOrigins = []v1.CORSOrigin{"https://a.example.com", "https://a.example.com"} },
		"32 origins":      func(c *v1.CORS) { c.AllowOrigins = origins(32) },
		"33 origins":      func(c *v1.CORS) { c.AllowOrigins = origins(33) },
		"9 methods": func(c *v1.CORS) {
			c.AllowMethods = []v1.CORSMethod{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
		},
		"a method twice":           func(c *v1.CORS) { c.AllowMethods = []v1.CORSMethod{"PUT", "PUT"} },
		"a lower-case method":      func(c *v1.CORS) { c.AllowMethods = []v1.CORSMethod{"put"} },
		"method *":                 func(c *v1.CORS) { c.AllowMethods = []v1.CORSMethod{"*"} },
		"method * and PUT":         func(c *v1.CORS) { c.AllowMethods = []v1.CORSMethod{"PUT", "*"} },
		"method * twice":           func(c *v1.CORS) { c.AllowMethods = []v1.CORSMethod{"*", "*"} },
		"method **":                func(c *v1.CORS) { c.AllowMethods = []v1.CORSMethod{"**"} },
		"32 allowed headers":       func(c *v1.CORS) { c.AllowHeaders = allowed(32) },
		"33 allowed headers":       func(c *v1.CORS) { c.AllowHeaders = allowed(33) },
		"32 exposed headers":       func(c *v1.CORS) { c.ExposeHeaders = names(32) },
		"33 exposed headers":       func(c *v1.CORS) { c.ExposeHeaders = names(33) },
		"an allowed header twice":  func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"X-A", "X-A"} },
		"an exposed header twice":  func(c *v1.CORS) { c.ExposeHeaders = []v1.HTTPHeaderName{"X-A", "X-A"} },
		"allowed header *":         func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"*"} },
		"allowed header Host":      func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"Host"} },
		"allowed header * and X-A": func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"X-A", "*"} },
		"allowed header * twice":   func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"*", "*"} },
		"allowed header **":        func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"**"} },
		"allowed header X-*":       func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{"X-*"} },
		"allowed header 65 bytes": func(c *v1.CORS) {
			c.AllowHeaders = []v1.CORSHeaderName{v1.CORSHeaderName("X" + strings.Repeat("a", 64))}
		},
		"allowed header 64 bytes": func(c *v1.CORS) {
			c.AllowHeaders = []v1.CORSHeaderName{v1.CORSHeaderName("X" + strings.Repeat("a", 63))}
		},
		"exposed header *": func(c *v1.CORS) { c.ExposeHeaders = []v1.HTTPHeaderName{"*"} },
		"* methods and headers, no credentials": func(c *v1.CORS) {
			*c = v1.CORS{AllowOrigins: []v1.CORSOrigin{"*"}, AllowMethods: []v1.CORSMethod{"*"}, AllowHeaders: []v1.CORSHeaderName{"*"}}
		},
		"exposed header a,b":       func(c *v1.CORS) { c.ExposeHeaders = []v1.HTTPHeaderName{"a,b"} },
		"maxAge 1":                 func(c *v1.CORS) { c.MaxAge = ptr.To[int32](1) },
		"maxAge 86400":             func(c *v1.CORS) { c.MaxAge = ptr.To[int32](86400) },
		"maxAge 0":                 func(c *v1.CORS) { c.MaxAge = ptr.To[int32](0) },
		"maxAge 86401":             func(c *v1.CORS) { c.MaxAge = ptr.To[int32](86401) },
		"credentials without them": func(c *v1.CORS) { c.AllowCredentials = false },
	}
	valids := map[string]bool{"every field": true, "origins alone": true, "* alone": true, "32 origins": true, "9 methods": true,
		"32 allowed headers": true, "32 exposed headers": true, "maxAge 1": true, "maxAge 86400": true, "credentials without them": true,
		// "*" methods and headers are echoed, also with credentials (the
		// valid route's): browsers take a named method or header then.
		"method *": true, "allowed header *": true, "* methods and headers, no credentials": true,
		"allowed header Host": true, "allowed header 64 bytes": true}
	origin := map[string]bool{
		"https://app.example.com":                       true,
		"http://app.example.com":                        true,
		"https://app.example.com:1":                     true,
		"https://app.example.com:65535":                 true,
		"https://*.example.com":                         true,
		"https://*.a-b.example.com:8443":                true,
		"https://" + strings.Repeat("a", 63) + ".b.com": true,
		"https://" + strings.Repeat("a", 64) + ".b.com": false,
		"https://app.example.com:65536":                 false,
		"https://app.example.com:99999":                 false,
		"https://app.example.com:0":                     false,
		"https://app.example.com:080":                   false,
		"https://app.example.com:":                      false,
		"https://app.example.com/":                      false,
		"https://app.example.com/path":                  false,
		"https://app.example.com?q=1":                   false,
		"https://user@app.example.com":                  false,
		"https://App.example.com":                       false,
		"HTTPS://app.example.com":                       false,
		"ftp://app.example.com":                         false,
		"app.example.com":                               false,
		"https://example":                               false,
		"https://*.com":                                 false,
		"https://a.*.example.com":                       false,
		"https://*example.com":                          false,
		"https://*":                                     false,
		"https://192.0.2.1":                             true,
		"https://[2001:db8::1]":                         false,
		"https://app.example.com.":                      false,
		"https://app..example.com":                      false,
		"https://app.example.com|https://evil.example":  false,
		"https://app.example.com(.*)":                   false,
		"https://app.example.com" + " ":                 false, // a trailing space
		"null":                                          false,
	}
	for o, ok := range origin {
		cases["origin "+o] = func(c *v1.CORS) { c.AllowOrigins = []v1.CORSOrigin{v1.CORSOrigin(o)} }
		valids["origin "+o] = ok
	}
	for name, s := range validationtest.HostileStrings() {
		cases["an origin with a "+name] = func(c *v1.CORS) { c.AllowOrigins = []v1.CORSOrigin{v1.CORSOrigin("https://a" + s + ".example.com")} }
		cases["an allowed header with a "+name] = func(c *v1.CORS) { c.AllowHeaders = []v1.CORSHeaderName{v1.CORSHeaderName("X" + s)} }
		cases["an exposed header with a "+name] = func(c *v1.CORS) { c.ExposeHeaders = []v1.HTTPHeaderName{v1.HTTPHeaderName("X" + s)} }
	}
	for value, set := range cases {
		add("cors", value, valids[value], func(p *ruleCase) {
			c := valid()
			if set != nil {
				set(&c)
			}
			p.route.CORS = &c
		})
	}
	// responseHeaders beside cors: setting or adding an Access-Control-*
	// header is refused (at responseHeaders), removing one is not, and
	// without cors any is admitted.
	for value, tc := range map[string]struct {
		m     v1.HeaderModifier
		cors  bool
		valid bool
	}{
		"set Access-Control-Allow-Origin":          {v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "Access-Control-Allow-Origin", Value: "*"}}}, true, false},
		"add access-control-max-age":               {v1.HeaderModifier{Add: []v1.HTTPHeader{{Name: "X-A", Value: "1"}, {Name: "access-control-max-age", Value: "9"}}}, true, false},
		"set ACCESS-CONTROL-X":                     {v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "ACCESS-CONTROL-X", Value: "1"}}}, true, false},
		"remove Access-Control-Allow-Origin":       {v1.HeaderModifier{Remove: []v1.HTTPHeaderName{"Access-Control-Allow-Origin"}}, true, true},
		"set Access-Control (no dash)":             {v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "Access-Control", Value: "1"}}}, true, true},
		"set X-Access-Control-Allow-Origin":        {v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-Access-Control-Allow-Origin", Value: "1"}}}, true, true},
		"set Access-Control-Allow-Origin, no cors": {v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "Access-Control-Allow-Origin", Value: "*"}}}, false, true},
	} {
		add("cors responseHeaders", value, tc.valid, func(p *ruleCase) {
			p.route.ResponseHeaders = &tc.m
			if tc.cors {
				c := valid()
				p.route.CORS = &c
			}
		})
	}
	add("cors", "with every setting", true, func(p *ruleCase) { p.route = validationtest.EverySetting(p.route) })
}
