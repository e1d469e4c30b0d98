package webhooks

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

// wantErr is one expected validation error: its field path, its type and
// a part of its detail ("" checks nothing).
type wantErr struct {
	field  string
	typ    field.ErrorType
	detail string
}

func checkErrors(t *testing.T, want []wantErr, got field.ErrorList) {
	t.Helper()
	require.Len(t, got, len(want), "errors: %v", got)
	for i, w := range want {
		assert.Equal(t, w.field, got[i].Field, "error %d: %v", i, got[i])
		assert.Equal(t, w.typ, got[i].Type, "error %d: %v", i, got[i])
		assert.Contains(t, got[i].Detail, w.detail, "error %d", i)
	}
}

func TestValidate(t *testing.T) {
	const (
		invalid   = field.ErrorTypeInvalid
		required  = field.ErrorTypeRequired
		duplicate = field.ErrorTypeDuplicate
	)
	other := func(name string, routes ...v1.Route) v1.APIGateway {
		gw := validGateway()
		gw.Name, gw.Spec.Routes = name, routes
		return *gw
	}
	tests := map[string]struct {
		mutate func(*v1.APIGateway)
		ctx    Context
		want   []wantErr
	}{
		"valid":                        {},
		"wildcard host":                {mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "*.example.com"; gw.Spec.TLS = nil }},
		"path with every allowed mark": {mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path = "/a-b._~!&()*+,=:@%C3%A9/" }},
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
		"gateway does not conflict with itself": {ctx: Context{Others: []v1.APIGateway{*validGateway()}}},
		"other gateway's Exact route on a Prefix one's path": {ctx: Context{Others: []v1.APIGateway{func() v1.APIGateway {
			o := other("exact", route("/users/", "s", 80))
			o.Spec.Routes[0].PathType = v1.PathTypeExact
			return o
		}()}}},
		"other gateway of another ingress class": {ctx: Context{Others: []v1.APIGateway{func() v1.APIGateway {
			o := other("internal", route("/users/", "s", 80))
			o.Spec.IngressClassName = ptr.To("internal")
			return o
		}()}}},
		"other gateway of a class while this one has none": {ctx: Context{Others: []v1.APIGateway{func() v1.APIGateway {
			o := other("nginx", route("/users/", "s", 80))
			o.Spec.IngressClassName = ptr.To("nginx")
			return o
		}()}}},
		"other gateway on another path": {ctx: Context{Others: []v1.APIGateway{other("o", route("/orders/", "s", 80))}}},
		"replicas 0":                    {mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](0) }},
		"digest-pinned image":           {mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx@sha256:" + strings.Repeat("a", 64) }},

		"image missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "" },
			want:   []wantErr{{"spec.image", required, "did not run (it fails open); set spec.image or retry"}},
		},
		"image with a space": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx :1.27" },
			want:   []wantErr{{"spec.image", invalid, "must not contain whitespace or control characters"}},
		},
		"image too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = strings.Repeat("a", 1025) },
			want:   []wantErr{{"spec.image", field.ErrorTypeTooLong, "may not be more than 1024 bytes"}},
		},
		"replicas missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = nil },
			want:   []wantErr{{"spec.replicas", required, "set spec.replicas or retry"}},
		},
		"replicas 101": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](101) },
			want:   []wantErr{{"spec.replicas", invalid, "must be from 0 to 100"}},
		},
		"no routes": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes, gw.Spec.TLS = nil, nil },
			want:   []wantErr{{"spec.routes", required, "at least one route"}},
		},
		"101 routes": {
			mutate: func(gw *v1.APIGateway) {
				for i := range 99 {
					gw.Spec.Routes = append(gw.Spec.Routes, route(fmt.Sprintf("/r%d", i), "s", 80))
				}
			},
			want: []wantErr{{"spec.routes", field.ErrorTypeTooMany, "must have at most 100 items"}},
		},
		"host missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "" },
			want:   []wantErr{{"spec.routes[1].host", required, "a DNS name such as api.example.com"}},
		},
		"host upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "Bad.Example.com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `must be a lower-case DNS name such as api.example.com, optionally starting with "*.", with labels of at most 63 characters; did you mean "bad.example.com"?`}},
		},
		"host with underscore": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "bad_host" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `must be a lower-case DNS name`}},
		},
		"host is a URL": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "https://api.example.com:8443/users" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `did you mean "api.example.com"? (a host is a name only: no scheme, port or path)`}},
		},
		"host with a port": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.example.com:80" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `did you mean "api.example.com"?`}},
		},
		"host with two trailing dots": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.example.com.." },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name"}},
		},
		"wildcard in the middle": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.*.example.com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `"*" is allowed only as the whole first label`}},
		},
		"partial wildcard label": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*api.example.com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `"*" is allowed only as the whole first label`}},
		},
		"bare wildcard": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name"}},
		},
		"IPv4 host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "10.0.0.1" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a DNS name, not an IP address"}},
		},
		"IPv6 host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "::1" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a DNS name, not an IP address"}},
		},
		"wildcard IP host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.10.0.0.1" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a DNS name, not an IP address"}},
		},
		"host too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = strings.Repeat("a.", 127) + "aa" },
			want:   []wantErr{{"spec.routes[1].host", field.ErrorTypeTooLong, "may not be more than 253 bytes"}},
		},
		"wildcard over a top-level domain": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.com" },
			want: []wantErr{{"spec.routes[1].host", invalid,
				`a wildcard must keep at least two labels after "*.", as in *.example.com: *.com would claim every name under "com"`}},
		},
		"wildcard over a single label": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*.internal" },
			want:   []wantErr{{"spec.routes[1].host", invalid, `a wildcard must keep at least two labels after "*."`}},
		},
		"bare wildcard with a dot": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "*." },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name"}},
		},
		"host label too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = strings.Repeat("a", 64) + ".com" },
			want:   []wantErr{{"spec.routes[1].host", invalid, "must be a lower-case DNS name"}},
		},
		"path missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "" },
			want:   []wantErr{{"spec.routes[1].path", required, `starting with "/"`}},
		},
		"path without leading slash": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "products/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must start with "/"; did you mean "/products/"?`}},
		},
		"path with //": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a//b/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must not contain empty, "." or ".." segments; did you mean "/a/b/"?`}},
		},
		"path with /./": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/./b" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `segments; did you mean "/a/b"?`}},
		},
		"path with /../": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/public/../admin" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `segments; did you mean "/admin"?`}},
		},
		"path ending in /.": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/." },
			want:   []wantErr{{"spec.routes[1].path", invalid, "segments"}},
		},
		"path ending in /..": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/.." },
			want:   []wantErr{{"spec.routes[1].path", invalid, "segments"}},
		},
		"path with a space": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/my products/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `found ' '; a path may not hold spaces`}},
		},
		"path with a query": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/p?id=1" },
			want:   []wantErr{{"spec.routes[1].path", invalid, "found '?'; a query string or fragment is not part of the path"}},
		},
		"path with a malformed escape": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/100%" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `"%" must start a percent-encoded byte such as %C3%A9`}},
		},
		"path with a non-hex escape": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/%zz/" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `"%" must start a percent-encoded byte`}},
		},
		"path with an encoded space the renderer would refuse": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%20b" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must be safe once percent-decoded: decodes to "/a b", which contains ' '`}},
		},
		"path with encoded dot segments": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a/%2e%2e/admin" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must be safe once percent-decoded: decodes to "/a/../admin", which contains "/../"`}},
		},
		"path with an encoded quote": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%22return" },
			want:   []wantErr{{"spec.routes[1].path", invalid, `must be safe once percent-decoded`}},
		},
		"path with an encoded NUL": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%00b" },
			want:   []wantErr{{"spec.routes[1].path", invalid, "must not percent-encode a control character (%00)"}},
		},
		"path with an encoded CRLF": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/a%0D%0Ab" },
			want:   []wantErr{{"spec.routes[1].path", invalid, "(%0D)"}},
		},
		"path too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/" + strings.Repeat("a", 1024) },
			want:   []wantErr{{"spec.routes[1].path", field.ErrorTypeTooLong, "may not be more than 1024 bytes"}},
		},
		"pathType missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = "" },
			want:   []wantErr{{"spec.routes[1].pathType", required, `"Prefix" or "Exact"`}},
		},
		"pathType Regex": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = "Regex" },
			want:   []wantErr{{"spec.routes[1].pathType", field.ErrorTypeNotSupported, ""}},
		},
		"backend name missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "" },
			want:   []wantErr{{"spec.routes[1].backendService.name", required, "the name of a Service"}},
		},
		"backend name starting with a digit": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "1svc" },
			want:   []wantErr{{"spec.routes[1].backendService.name", invalid, "must be a DNS-1035 label"}},
		},
		"backend name upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "Product-Service" },
			want:   []wantErr{{"spec.routes[1].backendService.name", invalid, `did you mean "product-service"?`}},
		},
		"backend name with a dot": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = "product.service" },
			want:   []wantErr{{"spec.routes[1].backendService.name", invalid, "must be a DNS-1035 label"}},
		},
		"backend name too long": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Name = strings.Repeat("a", 64) },
			want:   []wantErr{{"spec.routes[1].backendService.name", field.ErrorTypeTooLong, "may not be more than 63 bytes"}},
		},
		"backend port 0": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService.Port = 0 },
			want:   []wantErr{{"spec.routes[1].backendService.port", invalid, "from 1 to 65535"}},
		},
		"two identical routes": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1] = route("/users/", "other", 80) },
			want:   []wantErr{{"spec.routes[1]", duplicate, "same host, path and pathType as spec.routes[0]; merge the two routes or change one"}},
		},
		"two routes the same once percent-decoded": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path, gw.Spec.Routes[1].Path = "/users", "/%75sers" },
			want: []wantErr{{"spec.routes[1]", duplicate,
				`same host, path and pathType as spec.routes[0] once normalised ("/users" and "/%75sers" both match api.example.com/users (Prefix))`}},
		},
		"two Prefix routes, with and without the trailing slash": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/users" },
			want:   []wantErr{{"spec.routes[1]", duplicate, `same host, path and pathType as spec.routes[0] once normalised`}},
		},
		"a third route repeating the first": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes = append(gw.Spec.Routes, route("/%75sers/", "s", 80)) },
			want:   []wantErr{{"spec.routes[2]", duplicate, "as spec.routes[0] once normalised"}},
		},
		"route served by another gateway": {
			ctx: Context{Others: []v1.APIGateway{other("legacy", route("/products/", "s", 80))}},
			want: []wantErr{{"spec.routes[1]", duplicate,
				`host and path already served by APIGateway default/legacy, which also routes api.example.com/products (Prefix) for the cluster's default ingress class`}},
		},
		"route served by a gateway of another namespace": {
			ctx: Context{Others: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				o.Namespace = "elsewhere"
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway elsewhere/o`}},
		},
		"a namesake in another namespace is another gateway": {
			ctx: Context{Others: []v1.APIGateway{func() v1.APIGateway {
				o := *validGateway()
				o.Namespace = "elsewhere"
				return o
			}()}},
			want: []wantErr{
				{"spec.routes[0]", duplicate, `already served by APIGateway elsewhere/gw`},
				{"spec.routes[1]", duplicate, `already served by APIGateway elsewhere/gw`},
			},
		},
		"route served by two other gateways": {
			ctx: Context{Others: []v1.APIGateway{
				other("b", route("/users/", "s", 80)),
				other("a", route("/users/", "s", 80)),
			}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateways default/a, default/b`}},
		},
		"route served by many other gateways": {
			ctx: Context{Others: func() []v1.APIGateway {
				var gws []v1.APIGateway
				for _, name := range []string{"g", "f", "e", "d", "c", "b", "a"} {
					gws = append(gws, other(name, route("/users/", "s", 80)))
				}
				return gws
			}()},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateways default/a, default/b, default/c, default/d, default/e and 2 more, which`}},
		},
		"route another gateway serves once normalised": {
			ctx:  Context{Others: []v1.APIGateway{other("legacy", route("/%70roducts", "s", 80))}},
			want: []wantErr{{"spec.routes[1]", duplicate, `default/legacy, which also routes api.example.com/products (Prefix)`}},
		},
		"route another gateway of the same class serves": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.IngressClassName = ptr.To("nginx") },
			ctx: Context{Others: []v1.APIGateway{func() v1.APIGateway {
				o := other("nginx", route("/users/", "s", 80))
				o.Namespace, o.Spec.IngressClassName = "elsewhere", ptr.To("nginx")
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway elsewhere/nginx, which also routes api.example.com/users (Prefix) for ingress class "nginx"`}},
		},
		"tls host not a route host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"www.example.com"} },
			want:   []wantErr{{"spec.tls[0].hosts[0]", invalid, "must be the host of one of the gateway's routes; the route hosts are api.example.com"}},
		},
		"tls host in upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"API.example.com"} },
			want:   []wantErr{{"spec.tls[0].hosts[0]", invalid, `did you mean "api.example.com"?`}},
		},
		"tls wildcard does not cover a route host": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"*.example.com"} },
			want:   []wantErr{{"spec.tls[0].hosts[0]", invalid, "must be the host of one of the gateway's routes"}},
		},
		"tls host twice": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.TLS = append(gw.Spec.TLS, v1.GatewayTLS{Hosts: []string{"api.example.com"}, SecretName: "other"})
			},
			want: []wantErr{{"spec.tls[1].hosts[0]", duplicate, "already listed in spec.tls[0].hosts[0]"}},
		},
		"tls without hosts": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = nil },
			want:   []wantErr{{"spec.tls[0].hosts", required, "at least one route host"}},
		},
		"tls secretName missing": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].SecretName = "" },
			want:   []wantErr{{"spec.tls[0].secretName", required, "kubernetes.io/tls Secret"}},
		},
		"tls secretName invalid": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].SecretName = "API_TLS" },
			want:   []wantErr{{"spec.tls[0].secretName", invalid, "must be the name of a Secret"}},
		},
		"tls secretName upper case": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.TLS[0].SecretName = "Api-Tls" },
			want:   []wantErr{{"spec.tls[0].secretName", invalid, `did you mean "api-tls"?`}},
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
				{"spec.image", required, ""},
				{"spec.routes[0].host", invalid, ""},
				{"spec.routes[1].path", invalid, ""},
				{"spec.routes[1].backendService.name", invalid, ""},
				{"spec.tls[0].secretName", invalid, ""},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(tc.mutate)
			errs, _ := Validate(nil, gw, tc.ctx)
			checkErrors(t, tc.want, errs)

			// An update from an object that shares no route checks the
			// same rules as a create.
			old := gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes = []v1.Route{route("/old/", "s", 80)} })
			updateErrs, _ := Validate(old, gw, tc.ctx)
			assert.Equal(t, errs, updateErrs)
		})
	}
}

// The name is checked on create only: it cannot change, and rejecting
// updates of an object stored while the webhook was down would also block
// the removal of its finalizers.
func TestValidateName(t *testing.T) {
	tests := map[string]struct {
		name    string
		wantErr string
	}{
		"DNS-1035 label":       {name: "my-gateway"},
		"generateName pending": {name: ""},
		"dot":                  {name: "my.gateway", wantErr: "must be a DNS-1035 label (it names the gateway's Service)"},
		"leading digit":        {name: "1gateway", wantErr: "must be a DNS-1035 label"},
		"64 characters":        {name: strings.Repeat("a", 64), wantErr: "must be no more than 63 characters"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(func(gw *v1.APIGateway) { gw.Name = tc.name })
			errs, _ := Validate(nil, gw, Context{})
			if tc.wantErr == "" {
				assert.Empty(t, errs)
			} else {
				checkErrors(t, []wantErr{{"metadata.name", field.ErrorTypeInvalid, tc.wantErr}}, errs)
			}
			updateErrs, _ := Validate(gw.DeepCopy(), gw, Context{})
			assert.Empty(t, updateErrs, "an update never re-checks the name")
		})
	}
}

// A conflict the gateway already had does not block its updates; a route
// it adds is checked.
func TestValidateUpdateRatchetsConflicts(t *testing.T) {
	legacy := validGateway()
	legacy.Name, legacy.Namespace = "legacy", "elsewhere"
	others := Context{Others: []v1.APIGateway{*legacy}}

	old := validGateway()
	gw := old.DeepCopy()
	gw.Labels = map[string]string{"team": "a"}
	errs, _ := Validate(old, gw, others)
	assert.Empty(t, errs)

	// Spelling a route another way is not adding it: the keys compare
	// normalised.
	old.Spec.Routes[0].Path = "/%75sers"
	errs, _ = Validate(old, gw, others)
	assert.Empty(t, errs)

	// Nor is changing something else of the gateway; changing its class
	// is, for every route.
	withClass := gw.DeepCopy()
	withClass.Spec.IngressClassName = ptr.To("nginx")
	classed := *legacy.DeepCopy()
	classed.Spec.IngressClassName = ptr.To("nginx")
	errs, _ = Validate(gw, withClass, Context{Others: []v1.APIGateway{classed}})
	require.Len(t, errs, 2, "%v", errs)

	old.Spec.Routes = old.Spec.Routes[:1]
	errs, _ = Validate(old, gw, others)
	checkErrors(t, []wantErr{{"spec.routes[1]", field.ErrorTypeDuplicate, `already served by APIGateway elsewhere/legacy`}}, errs)
}

func TestWarnings(t *testing.T) {
	tests := map[string]struct {
		mutate func(*v1.APIGateway)
		ports  map[string][]int32
		want   []string
	}{
		"none": {},
		"image without a tag": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx" },
			want:   []string{`spec.image: "nginx" has no tag, which means "latest": pods may run different builds; pin a version (as in nginx:1.27) or a digest`},
		},
		"image from a registry with a port, without a tag": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "registry:5000/team/nginx" },
			want:   []string{`spec.image: "registry:5000/team/nginx" has no tag`},
		},
		"image tagged latest": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx:latest" },
			want:   []string{`spec.image: "nginx:latest" uses the tag "latest": pods may run different builds; pin a version or a digest`},
		},
		"image from a registry with a port, pinned": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "registry:5000/nginx:1.27" },
		},
		"latest but pinned by digest": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx:latest@sha256:" + strings.Repeat("0", 64) },
		},
		"one replica": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](1) },
			want:   []string{"spec.replicas: 1 runs a single gateway pod with no redundancy"},
		},
		"backend Service without the port": {
			ports: map[string][]int32{"user-service": {80, 443}, "product-service": {8081}},
			want:  []string{"spec.routes[0].backendService: Service \"user-service\" has no port 8080 (its ports: 80, 443)"},
		},
		"backend Service with no ports": {
			ports: map[string][]int32{"user-service": {8080}, "product-service": nil},
			want:  []string{"spec.routes[1].backendService: Service \"product-service\" has no port 8081 (its ports: none)"},
		},
		"backend Service that does not exist": {
			ports: map[string][]int32{},
		},
		"one warning per Service and port": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService = gw.Spec.Routes[0].BackendService },
			ports:  map[string][]int32{"user-service": {80}},
			want:   []string{"spec.routes[0].backendService: Service \"user-service\" has no port 8080"},
		},
		"long image is cut short": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = strings.Repeat("a", 500) + ":latest" },
			want:   []string{`spec.image: "` + strings.Repeat("a", 100) + `"... uses the tag "latest"`},
		},
		"all at once": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image, gw.Spec.Replicas = "nginx:latest", ptr.To[int32](1) },
			ports:  map[string][]int32{"product-service": {80}},
			want:   []string{"spec.image:", "spec.replicas:", "spec.routes[1].backendService:"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs, warnings := Validate(nil, gatewayWith(tc.mutate), Context{ServicePorts: tc.ports})
			require.Empty(t, errs)
			require.Len(t, warnings, len(tc.want), "warnings: %q", warnings)
			for i, w := range tc.want {
				assert.Contains(t, warnings[i], w)
			}
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
		require.Equal(t, len(validation.IsDNS1123Subdomain(s)) == 0 && labelsFit(s), isDNS1123Subdomain(s), "subdomain %q", s)
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
