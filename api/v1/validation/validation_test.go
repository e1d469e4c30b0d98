package validation

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

func TestValidate(t *testing.T) {
	const (
		invalid   = field.ErrorTypeInvalid
		required  = field.ErrorTypeRequired
		duplicate = field.ErrorTypeDuplicate
	)
	tests := map[string]struct {
		mutate func(*v1.APIGateway)
		want   []wantErr
	}{
		"valid":                          {},
		"wildcard host":                  {mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "*.example.com"; gw.Spec.TLS = nil }},
		"wildcard under a public suffix": {mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "*.example.co.uk"; gw.Spec.TLS = nil }},
		"wildcard of a cluster domain":   {mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "*.svc.cluster.local"; gw.Spec.TLS = nil }},
		"path with every allowed mark":   {mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path = "/a-b._~!&()*+,=:@%C3%A9/" }},
		"same path, other pathType": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[1].Path, gw.Spec.Routes[1].PathType = "/users/", v1.PathTypeExact
		}},
		"Exact and Prefix on one path": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[1] = route("/users", "s", 80)
			gw.Spec.Routes[1].PathType = v1.PathTypeExact
		}},
		"Exact with and without a trailing slash": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].PathType = v1.PathTypeExact
			gw.Spec.Routes[1] = gw.Spec.Routes[0]
			gw.Spec.Routes[1].Path = "/users"
		}},
		"literal percent and its escape differ": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].Path, gw.Spec.Routes[1].Path = "/100%25", "/100%2525"
		}},
		"replicas 0":          {mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](0) }},
		"digest-pinned image": {mutate: func(gw *v1.APIGateway) { gw.Spec.Image = v1.Image("nginx@sha256:" + strings.Repeat("a", 64)) }},

		"image missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "" },
			want:   []wantErr{{"spec.image", required, "did not run (it fails open); set spec.image or retry", RuleImage}},
		},
		"image with a space": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx :1.27" },
			want:   []wantErr{{"spec.image", invalid, "must not contain whitespace or control characters", RuleImage}},
		},
		"image too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = v1.Image(strings.Repeat("a", 1025)) },
			want:   []wantErr{{"spec.image", field.ErrorTypeTooLong, "may not be more than 1024 bytes", RuleImage}},
		},
		"replicas missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = nil },
			want:   []wantErr{{"spec.replicas", required, "set spec.replicas or retry", RuleReplicas}},
		},
		"replicas 101": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](101) },
			want:   []wantErr{{"spec.replicas", invalid, "must be from 0 to 100", RuleReplicas}},
		},
		"no routes": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes, gw.Spec.TLS = nil, nil },
			want:   []wantErr{{"spec.routes", required, "at least one route", RuleRoutes}},
		},
		"101 routes": {
			mutate: func(gw *v1.APIGateway) {
				for i := range 99 {
					gw.Spec.Routes = append(gw.Spec.Routes, route(fmt.Sprintf("/r%d", i), "s", 80))
				}
			},
			want: []wantErr{{"spec.routes", field.ErrorTypeTooMany, "must have at most 100 items", RuleRoutes}},
		},
		"host missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "" },
			want:   []wantErr{{"spec.routes[1].host", required, "a DNS name such as api.example.com", RuleHost}},
		},
		"host upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "Bad.Example.com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `must be a lower-case DNS name such as api.example.com, optionally starting with "*.", with labels of at most 63 characters; did you mean "bad.example.com"?`, RuleHost}},
		},
		"host with underscore": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "bad_host" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `must be a lower-case DNS name`, RuleHost}},
		},
		"host is a URL": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "https://api.example.com:8443/users" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `did you mean "api.example.com"? (a host is a name only: no scheme, port or path)`, RuleHost}},
		},
		"host with a port": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.example.com:80" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `did you mean "api.example.com"?`, RuleHost}},
		},
		"host with two trailing dots": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.example.com.." },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name", RuleHost}},
		},
		"wildcard in the middle": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.*.example.com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `"*" is allowed only as the whole first label`, RuleHost}},
		},
		"partial wildcard label": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*api.example.com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `"*" is allowed only as the whole first label`, RuleHost}},
		},
		"bare wildcard": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name", RuleHost}},
		},
		"IPv4 host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "10.0.0.1" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a DNS name, not an IP address", RuleHost}},
		},
		"IPv6 host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "::1" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a DNS name, not an IP address", RuleHost}},
		},
		"wildcard IP host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.10.0.0.1" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a DNS name, not an IP address", RuleHost}},
		},
		"host too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = v1.Hostname(strings.Repeat("a.", 127) + "aa") },
			want:   []wantErr{{"spec.routes[1].host", field.ErrorTypeTooLong, "may not be more than 253 bytes", RuleHost}},
		},
		"wildcard over a top-level domain": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.com" },
			want: []wantErr{{"spec.routes[1].host", invalid,
				`a wildcard must keep at least two labels after "*.", as in *.example.com: *.com would claim every name under "com"`, RuleHost}},
		},
		"wildcard over a single label": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.internal" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `a wildcard must keep at least two labels after "*."`, RuleHost}},
		},
		"wildcard over a public suffix": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.co.uk" },
			want: []wantErr{{"spec.routes[1].host", invalid,
				`a wildcard may not cover a public suffix: *.co.uk would claim every name registered under "co.uk" (the Public Suffix List); name a domain of your own, as in *.example.co.uk`, RuleHost}},
		},
		"wildcard over a private public suffix": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.github.io" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `a wildcard may not cover a public suffix: *.github.io`, RuleHost}},
		},
		"bare wildcard with a dot": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*." },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name", RuleHost}},
		},
		"host label too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = v1.Hostname(strings.Repeat("a", 64) + ".com") },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name", RuleHost}},
		},
		"path missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "" },
			want:   []wantErr{{"spec.routes[1].path", required, `starting with "/"`, RulePath}},
		},
		"path without leading slash": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "products/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must start with "/"; did you mean "/products/"?`, RulePath}},
		},
		"path with //": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a//b/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must not contain empty, "." or ".." segments; did you mean "/a/b/"?`, RulePath}},
		},
		"path with /./": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/./b" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `segments; did you mean "/a/b"?`, RulePath}},
		},
		"path with /../": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/public/../admin" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `segments; did you mean "/admin"?`, RulePath}},
		},
		"path ending in /.": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/." },
			want:   []wantErr{{"spec.routes[1].path", invalid, "segments", RulePath}},
		},
		"path ending in /..": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/.." },
			want:   []wantErr{{"spec.routes[1].path", invalid, "segments", RulePath}},
		},
		"path with a space": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/my products/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `found ' '; a path may not hold spaces`, RulePath}},
		},
		"path with a query": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/p?id=1" },
			want:   []wantErr{{"spec.routes[1].path", invalid, "found '?'; a query string or fragment is not part of the path", RulePath}},
		},
		"path with a malformed escape": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/100%" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `"%" must start a percent-encoded byte such as %C3%A9`, RulePath}},
		},
		"path with a non-hex escape": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/%zz/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `"%" must start a percent-encoded byte`, RulePath}},
		},
		"path with an encoded space the renderer would refuse": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%20b" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must be safe once percent-decoded: decodes to "/a b", which contains ' '`, RulePath}},
		},
		"path with encoded dot segments": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/%2e%2e/admin" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must be safe once percent-decoded: decodes to "/a/../admin", which contains "/../"`, RulePath}},
		},
		"path with an encoded quote": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%22return" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must be safe once percent-decoded`, RulePath}},
		},
		"path with an encoded NUL": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%00b" },
			want:   []wantErr{{"spec.routes[1].path", invalid, "must not percent-encode a control character (%00)", RulePath}},
		},
		"path with an encoded CRLF": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%0D%0Ab" },
			want:   []wantErr{{"spec.routes[1].path", invalid, "(%0D)", RulePath}},
		},
		"path too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = v1.HTTPPath("/" + strings.Repeat("a", 1024)) },
			want:   []wantErr{{"spec.routes[1].path", field.ErrorTypeTooLong, "may not be more than 1024 bytes", RulePath}},
		},
		"pathType missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = "" },
			want:   []wantErr{{"spec.routes[1].pathType", required, `"Prefix" or "Exact"`, RulePathType}},
		},
		"pathType Regex": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = "Regex" },
			want:   []wantErr{{"spec.routes[1].pathType", field.ErrorTypeNotSupported, "", RulePathType}},
		},
		"backend name missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "" },
			want:   []wantErr{{"spec.routes[1].backendService.name", required, "the name of a Service", RuleBackendName}},
		},
		"backend name starting with a digit": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "1svc" },
			want:   []wantErr{{"spec.routes[1].backendService.name", invalid, "must be a DNS-1035 label", RuleBackendName}},
		},
		"backend name upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "Product-Service" },
			want:   []wantErr{{"spec.routes[1].backendService.name", invalid, `did you mean "product-service"?`, RuleBackendName}},
		},
		"backend name with a dot": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "product.service" },
			want:   []wantErr{{"spec.routes[1].backendService.name", invalid, "must be a DNS-1035 label", RuleBackendName}},
		},
		"backend name too long": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[1].BackendService.Name = v1.ServiceName(strings.Repeat("a", 64))
			},
			want: []wantErr{{"spec.routes[1].backendService.name", field.ErrorTypeTooLong, "may not be more than 63 bytes", RuleBackendName}},
		},
		"backend port 0": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Port = 0 },
			want:   []wantErr{{"spec.routes[1].backendService.port", invalid, "from 1 to 65535", RuleBackendPort}},
		},
		"two identical routes": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1] = route("/users/", "other", 80) },
			want:   []wantErr{{"spec.routes[1]", duplicate, "same host, path and pathType as spec.routes[0]; merge the two routes or change one", RuleDuplicateRoute}},
		},
		"two routes the same once percent-decoded": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path, gw.Spec.Routes[1].Path = "/users", "/%75sers" },
			want: []wantErr{{"spec.routes[1]", duplicate,
				`same host, path and pathType as spec.routes[0] once normalised ("/users" and "/%75sers" both match api.example.com/users (Prefix))`, RuleDuplicateRoute}},
		},
		"two Prefix routes, with and without the trailing slash": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/users" },
			want:   []wantErr{{"spec.routes[1]", duplicate, `same host, path and pathType as spec.routes[0] once normalised`, RuleDuplicateRoute}},
		},
		"a third route repeating the first": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes = append(gw.Spec.Routes, route("/%75sers/", "s", 80)) },
			want:   []wantErr{{"spec.routes[2]", duplicate, "as spec.routes[0] once normalised", RuleDuplicateRoute}},
		},
		"same path, one route with rules": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[1] = route("/users/", "canary", 80)
				gw.Spec.Routes[1].Rules = []v1.RouteRule{{
					Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always"}}}},
					BackendService: v1.BackendService{Name: "canary", Port: 80},
				}}
			},
			want: []wantErr{{"spec.routes[1]", duplicate, "same host, path and pathType as spec.routes[0]; merge the two routes or change one (conditions on a request go in spec.routes[0].rules)", RuleDuplicateRoute}},
		},
		"a route with rules and no backendService": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].BackendService = v1.BackendService{}
			gw.Spec.Routes[0].Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: ptr.To[v1.HTTPMethod]("GET")}}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
		}},
		"a route with neither rules nor backendService": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].BackendService = v1.BackendService{} },
			want:   []wantErr{{"spec.routes[0].backendService", required, "rules that pick one, or a redirect that answers every request", RuleRules}},
		},
		"source ranges, both families, a deny inside an allow": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8", "2001:db8::/32"}, Deny: []v1.CIDR{"10.1.0.0/16"}}
		}},
		"a source range with bits past its prefix": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.1/8"}}
			},
			want: []wantErr{{"spec.routes[0].sourceRanges.allow[0]", invalid, `did you mean "10.0.0.0/8"?`, RuleSourceRanges}},
		},
		"a source range in upper case": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"2001:DB8:0::/48"}}
			},
			want: []wantErr{{"spec.routes[0].sourceRanges.deny[0]", invalid, `did you mean "2001:db8::/48"?`, RuleSourceRanges}},
		},
		"a bare address as a source range": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"203.0.113.7"}}
			},
			want: []wantErr{{"spec.routes[0].sourceRanges.deny[0]", invalid, "a single address is a /32 (IPv4) or /128 (IPv6) network", RuleSourceRanges}},
		},
		"an IPv4-mapped source range": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"::ffff:10.0.0.0/104"}}
			},
			want: []wantErr{{"spec.routes[0].sourceRanges.deny[0]", invalid, "not IPv4-mapped", RuleSourceRanges}},
		},
		"a source range twice": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8", "::/0", "10.0.0.0/8"}}
			},
			want: []wantErr{{"spec.routes[0].sourceRanges.allow[2]", duplicate, "", RuleSourceRanges}},
		},
		"empty source ranges": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].SourceRanges = &v1.SourceRanges{} },
			want:   []wantErr{{"spec.routes[0].sourceRanges", required, "allow or deny", RuleSourceRanges}},
		},
		"a rule with an empty match": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{}}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
			},
			want: []wantErr{{"spec.routes[0].rules[0].matches[0]", required, "at least one condition", RuleRules}},
		},
		"a rule without a backend": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Method: ptr.To[v1.HTTPMethod]("GET")}}}}
			},
			want: []wantErr{
				{"spec.routes[0].rules[0].backendService.name", required, "the name of a Service", RuleBackendName},
				{"spec.routes[0].rules[0].backendService.port", invalid, "must be a port number", RuleBackendPort},
			},
		},
		"an Exact header match without a value": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-A", Type: v1.MatchExact}}}}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
			},
			want: []wantErr{{"spec.routes[0].rules[0].matches[0].headers[0]", invalid, exactOrPresentMessage, RuleRules}},
		},
		"a reserved header matched": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "Upgrade", Type: v1.MatchPresent}}}}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
			},
			want: []wantErr{{"spec.routes[0].rules[0].matches[0].headers[0].name", invalid, reservedHeaderMessage, RuleRules}},
		},
		"a cookie name with a dash": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Rules = []v1.RouteRule{{Matches: []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "my-session", Value: "x"}}}}, BackendService: v1.BackendService{Name: "canary", Port: 80}}}
			},
			want: []wantErr{{"spec.routes[0].rules[0].matches[0].cookies[0].name", invalid, "letters, digits and '_'", RuleRules}},
		},
		"tls host not a route host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"www.example.com"} },
			want:   []wantErr{{"spec.tls[0].hosts[0]", invalid, "must be the host of one of the gateway's routes; the route hosts are api.example.com", RuleTLSHosts}},
		},
		"tls host in upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"API.example.com"} },
			want:   []wantErr{{"spec.tls[0].hosts[0]", invalid, `did you mean "api.example.com"?`, RuleTLSHosts}},
		},
		"tls wildcard does not cover a route host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"*.example.com"} },
			want:   []wantErr{{"spec.tls[0].hosts[0]", invalid, "must be the host of one of the gateway's routes", RuleTLSHosts}},
		},
		"tls host twice": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.TLS = append(gw.Spec.TLS, v1.GatewayTLS{Hosts: []string{"api.example.com"}, SecretName: "other"})
			},
			want: []wantErr{{"spec.tls[1].hosts[0]", duplicate, "already listed in spec.tls[0].hosts[0]", RuleTLSHosts}},
		},
		"tls without hosts": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = nil },
			want:   []wantErr{{"spec.tls[0].hosts", required, "at least one route host", RuleTLSHosts}},
		},
		"tls secretName missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].SecretName = "" },
			want:   []wantErr{{"spec.tls[0].secretName", required, "kubernetes.io/tls Secret", RuleTLSSecretName}},
		},
		"tls secretName invalid": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].SecretName = "API_TLS" },
			want:   []wantErr{{"spec.tls[0].secretName", invalid, "must be the name of a Secret", RuleTLSSecretName}},
		},
		"tls secretName upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].SecretName = "Api-Tls" },
			want:   []wantErr{{"spec.tls[0].secretName", invalid, `did you mean "api-tls"?`, RuleTLSSecretName}},
		},
		"a delegation of a route host": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Delegations = []v1.HostDelegation{{Host: "api.example.com", Namespace: "team-b", PathPrefixes: []v1.HTTPPath{"/cart/"}}}
		}},
		"a delegation of a name under a wildcard route host": {mutate: func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].Host, gw.Spec.TLS = "*.example.com", nil
			gw.Spec.Delegations = []v1.HostDelegation{{Host: "shop.example.com", Namespace: "team-b", PathPrefixes: []v1.HTTPPath{"/"}}}
		}},
		"a delegation of a name two labels under a wildcard: the owner's too": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Host, gw.Spec.TLS = "*.example.com", nil
				gw.Spec.Delegations = []v1.HostDelegation{{Host: "a.shop.example.com", Namespace: "team-b", PathPrefixes: []v1.HTTPPath{"/"}}}
			},
		},
		"a delegation of a name below a host the gateway routes": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Delegations = []v1.HostDelegation{{Host: "login.api.example.com", Namespace: "team-b", PathPrefixes: []v1.HTTPPath{"/"}}}
			},
		},
		"a delegation of a host the gateway does not route": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Delegations = []v1.HostDelegation{{Host: "www.example.com", Namespace: "team-b", PathPrefixes: []v1.HTTPPath{"/"}}}
			},
			want: []wantErr{{"spec.delegations[0].host", invalid, "a namespace can lend only hosts it owns by routing them", RuleDelegations}},
		},
		"a delegation to the gateway's own namespace, with a bad prefix twice": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Delegations = []v1.HostDelegation{{Host: "api.example.com", Namespace: "default", PathPrefixes: []v1.HTTPPath{"/a/../b", "/a/../b"}}}
			},
			want: []wantErr{
				{"spec.delegations[0].namespace", invalid, "the gateway's own namespace", RuleDelegations},
				{"spec.delegations[0].pathPrefixes[0]", invalid, "", RuleDelegations},
				{"spec.delegations[0].pathPrefixes[1]", invalid, "", RuleDelegations},
				{"spec.delegations[0].pathPrefixes[1]", duplicate, "", RuleDelegations},
			},
		},
		"every problem at once, in field order": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Image = ""
				gw.Spec.Routes[0].Host = "Bad_Host"
				gw.Spec.Routes[1].Path = "/a/../b"
				gw.Spec.Routes[1].BackendService.Name = "9svc"
				gw.Spec.TLS[0].SecretName = "bad name"
			},
			want: []wantErr{
				{"spec.image", required, "", RuleImage},
				{"spec.routes[0].host", invalid, "", RuleHost},
				{"spec.routes[1].path", invalid, "", RulePath},
				{"spec.routes[1].backendService.name", invalid, "", RuleBackendName},
				{"spec.tls[0].secretName", invalid, "", RuleTLSSecretName},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(tc.mutate)
			errs := Validate(nil, gw)
			checkErrors(t, tc.want, errs)

			// An update checks the same rules as a create, but for the
			// name.
			old := gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes = []v1.Route{route("/old/", "s", 80)} })
			assert.Equal(t, errs, Validate(old, gw))
		})
	}
}

// The name is checked on create only: it cannot change, and rejecting
// updates of an object stored while the webhook was down would also block
// the removal of its finalizers.
func TestValidateName(t *testing.T) {
	tests := map[string]struct {
		name, generateName string
		wantErr            string
	}{
		"DNS-1035 label":       {name: "my-gateway"},
		"generateName pending": {generateName: "gw-"},
		"no name at all":       {wantErr: "name or generateName is required"},
		"dot":                  {name: "my.gateway", wantErr: "must be a DNS-1035 label (it names the gateway's Service)"},
		"leading digit":        {name: "1gateway", wantErr: "must be a DNS-1035 label"},
		"64 characters":        {name: strings.Repeat("a", 64), wantErr: "must be no more than 63 characters"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(func(gw *v1.APIGateway) { gw.Name, gw.GenerateName = tc.name, tc.generateName })
			errs := Validate(nil, gw)
			if tc.wantErr == "" {
				assert.Empty(t, errs)
			} else {
				typ := field.ErrorTypeInvalid
				if tc.name == "" {
					typ = field.ErrorTypeRequired
				}
				checkErrors(t, []wantErr{{"metadata.name", typ, tc.wantErr, RuleName}}, errs)
			}
			assert.Empty(t, Validate(gw.DeepCopy(), gw), "an update never re-checks the name")
		})
	}
}

// The byte-loop name checks accept exactly what apimachinery's regular
// expressions accept: a table of edge cases, then random strings over an
// alphabet rich in the bytes that matter.
func TestNameChecksMatchApimachinery(t *testing.T) {
	cases := []string{"", "a", "0", "-", "a-", "-a", "a-b", "a--b", "0a", "a0", "A", "a.b", "a..b", ".a", "a.",
		"*.a", "a_b", "a b", "é", strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a", 63) + "." + strings.Repeat("b", 63), strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab0-.A_*é"
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		require.Equal(t, len(validation.IsDNS1123Subdomain(s)) == 0 && labelsFit(s), IsDNSName(s), "subdomain %q", s)
		require.Equal(t, len(validation.IsDNS1035Label(s)) == 0, isDNS1035Label(s), "label %q", s)
	}
}

func labelsFit(s string) bool {
	for label := range strings.SplitSeq(s, ".") {
		if len(label) > validation.DNS1123LabelMaxLength {
			return false
		}
	}
	return true
}

// isIP skips the parser only for strings the parser would refuse.
func TestIsIP(t *testing.T) {
	for _, s := range []string{"10.0.0.1", "1.2.3", "::1", "::ffff:1.2.3.4", "fe80::1%eth0", "1.2.3.4.5", "a.b", "0", "", "1e3", "10.0.0.1a"} {
		assert.Equal(t, net.ParseIP(s) != nil, isIP(s), s)
	}
}
