// Package validationtest holds the fixtures and the error check that the
// tests of package validation and of the admission webhooks share: one
// valid gateway to change, and one way to compare field errors, so the
// two suites cannot drift apart on either.
package validationtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// ValidGateway is a defaulted gateway that passes validation with no
// warning; each test changes what it is about.
func ValidGateway() *v1.APIGateway {
	return &v1.APIGateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway"},
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
		Spec: v1.APIGatewaySpec{
			Image:    "nginx:1.27",
			Replicas: ptr.To[int32](2),
			Routes: []v1.Route{
				Route("/users/", "user-service", 8080),
				Route("/products/", "product-service", 8081),
			},
			TLS: []v1.GatewayTLS{{Hosts: []string{"api.example.com"}, SecretName: "api-tls"}},
		},
	}
}

// Route is a Prefix route on api.example.com.
func Route(path, svc string, port int32) v1.Route {
	return v1.Route{Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
}

// EverySetting gives r every traffic setting, with a 20% canary, a
// drained backend, a rewrite to "/", each kind of header change and a
// redirect of https requests to http: the
// every-setting route of the renderer's golden file, its size benchmarks
// and B1t (hack/bench).
func EverySetting(r v1.Route) v1.Route {
	r.AdditionalBackends = []v1.WeightedBackend{
		{Name: r.BackendService.Name + "-canary", Port: r.BackendService.Port, Weight: 20},
		{Name: r.BackendService.Name + "-drained", Port: r.BackendService.Port, Weight: 0},
	}
	r.Timeouts = &v1.RouteTimeouts{ConnectSeconds: ptr.To[int32](5), ReadSeconds: ptr.To[int32](30)}
	r.RewritePrefix = "/"
	r.RequestHeaders = &v1.HeaderModifier{
		Set:    []v1.HTTPHeader{{Name: "X-Team", Value: "payments"}},
		Add:    []v1.HTTPHeader{{Name: "X-Trace", Value: "gateway"}},
		Remove: []v1.HTTPHeaderName{"X-Debug"},
	}
	r.ResponseHeaders = &v1.HeaderModifier{
		Set:    []v1.HTTPHeader{{Name: "X-Frame-Options", Value: "DENY"}},
		Add:    []v1.HTTPHeader{{Name: "Cache-Control", Value: "no-store"}},
		Remove: []v1.HTTPHeaderName{"X-Powered-By"},
	}
	r.MaxBodySize = "10m"
	r.RateLimit = &v1.RateLimit{RequestsPerSecond: 100, Burst: 50}
	// Documentation networks only (RFC 5737, RFC 3849), so traffic sent
	// through such routes is never refused.
	r.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"0.0.0.0/0", "::/0"}, Deny: []v1.CIDR{"192.0.2.0/24", "2001:db8::/32"}}
	r.BasicAuth = &v1.BasicAuth{SecretName: "api-users", Realm: "Staff only"}
	// A redirect with a scheme answers only the requests on the other
	// one: these, to http, only those that came over https, which the
	// tests and benchmarks never send, so the route still proxies.
	r.Redirect = &v1.HTTPRedirect{Scheme: "http", StatusCode: ptr.To[int32](308)}
	// One authentication Service for every route, as one oauth2-proxy
	// serves a gateway, with sign-in (its escaping maps) and identity
	// headers.
	r.ExternalAuth = &v1.ExternalAuth{
		Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth",
		ForwardHeaders:  []v1.HTTPHeaderName{"Cookie", "Authorization"},
		ResponseHeaders: []v1.HTTPHeaderName{"X-Auth-Request-User", "X-Auth-Request-Email"},
		SignInURL:       "https://login.example.com/oauth2/start", TimeoutSeconds: ptr.To[int32](3),
	}
	// Every condition and the most attempts: the longest directives.
	r.Retries = &v1.RouteRetries{Attempts: 5, On: []v1.RetryCondition{
		v1.RetryOnConnectError, v1.RetryOnTimeout, v1.RetryOnHTTP502, v1.RetryOnHTTP503, v1.RetryOnHTTP504,
	}, NonIdempotent: true}
	// CORS of named origins with credentials, one a suffix: the
	// larger of its maps.
	r.CORS = &v1.CORS{
		AllowOrigins:  []v1.CORSOrigin{"https://app.example.com", "https://*.example.org"},
		AllowMethods:  []v1.CORSMethod{"PUT", "DELETE"},
		AllowHeaders:  []v1.CORSHeaderName{"Authorization", "X-Team"},
		ExposeHeaders: []v1.HTTPHeaderName{"X-Request-Id"}, MaxAge: ptr.To[int32](600), AllowCredentials: true,
	}
	return r
}

// GatewayWith returns ValidGateway changed by mutate.
func GatewayWith(mutate func(*v1.APIGateway)) *v1.APIGateway {
	gw := ValidGateway()
	if mutate != nil {
		mutate(gw)
	}
	return gw
}

// WantErr is one expected validation error: its field path, its type, a
// part of its detail ("" checks nothing) and its rule.
type WantErr struct {
	Field  string
	Type   field.ErrorType
	Detail string
	Rule   string
}

// CheckErrors asserts that got holds exactly want, in order. W is a test
// package's own type defined as WantErr, whose tables can then be written
// without field names (vet allows that for a package's own types only).
func CheckErrors[W ~struct {
	Field  string
	Type   field.ErrorType
	Detail string
	Rule   string
}](t *testing.T, want []W, got field.ErrorList) {
	t.Helper()
	require.Len(t, got, len(want), "errors: %v", got)
	for i, ww := range want {
		w := WantErr(ww)
		assert.Equal(t, w.Field, got[i].Field, "error %d: %v", i, got[i])
		assert.Equal(t, w.Type, got[i].Type, "error %d: %v", i, got[i])
		assert.Contains(t, got[i].Detail, w.Detail, "error %d", i)
		assert.Equal(t, w.Rule, got[i].Origin, "error %d: %v", i, got[i])
	}
}

// OnHost moves gw, its routes and TLS hosts, to host: a namespace of a
// test suite that shares one API server needs a host of its own, since
// the first namespace to route a host owns it.
func OnHost(gw *v1.APIGateway, host string) {
	for i := range gw.Spec.Routes {
		gw.Spec.Routes[i].Host = v1.Hostname(host)
	}
	for i := range gw.Spec.TLS {
		for j := range gw.Spec.TLS[i].Hosts {
			gw.Spec.TLS[i].Hosts[j] = host
		}
	}
}

// HostileStrings are the strings the issue names for every tenant string
// that reaches nginx.conf, each after a harmless "a": what ends a quoted
// argument, a directive or a block, starts a variable, escapes, a control
// character, a non-ASCII one, and more than nginx reads in one argument.
// (Strings that are not UTF-8 cannot reach the API server: JSON carries
// text.) The rule cases of package validation and the renderer's fuzz
// seeds both use them.
func HostileStrings() map[string]string {
	return map[string]string{
		"quote": `a"b`, "single quote": "a'b", "semicolon": "a;b", "open brace": "a{b", "close brace": "a}b",
		"variable": "a$b", "envsubst": "a${HOME}", "backslash": `a\b`, "newline": "a\nb", "CR": "a\rb",
		"tab": "a\tb", "NUL": "a\x00b", "DEL": "a\x7fb", "non-ASCII": "caf\u00e9", "space": "a b",
		"hash": "a#b", "8 KiB": strings.Repeat("a", 8<<10),
	}
}

// MaximalHost is a distinct host of 253 characters, the longest admission
// admits, with labels of 63; wildcard ones start with "*.".
func MaximalHost(i int, wildcard bool) string {
	label := func(c byte) string { return fmt.Sprintf("h%03d", i) + strings.Repeat(string(c), 59) }
	host := label('a') + "." + label('b') + "." + label('c') + "." + fmt.Sprintf("h%03d", i) + strings.Repeat("d", 45) + ".example.com"
	if wildcard {
		host = "*." + host[2:]
	}
	return host
}
