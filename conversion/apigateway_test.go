package conversion

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// hubRoute and alphaRoute keep the tables short.
func hubRoute(host, path string, pathType v1.PathType, svc string, port int32) v1.Route {
	return v1.Route{Host: v1.Hostname(host), Path: v1.HTTPPath(path), PathType: pathType, BackendService: v1.BackendService{Name: v1.ServiceName(svc), Port: v1.PortNumber(port)}}
}

func alphaRoute(host, prefix, svc string, port int32) v1alpha1.Route {
	return v1alpha1.Route{Host: v1.Hostname(host), Prefix: v1.HTTPPath(prefix), ServiceName: v1.ServiceName(svc), ServicePort: v1.PortNumber(port)}
}

func hubGateway(annotations map[string]string, spec v1.APIGatewaySpec) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "ns", Annotations: annotations},
		Spec:       spec,
	}
}

func alphaGateway(annotations map[string]string, spec v1alpha1.APIGatewaySpec) *v1alpha1.APIGateway {
	return &v1alpha1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "ns", Annotations: annotations},
		Spec:       spec,
	}
}

const (
	// exactUsers is what V1ToV1alpha1 writes for routes api/users Exact
	// and api/products Prefix plus one tls block.
	exactUsers = `{"spec":{"routes":[{"host":"api.example.com","path":"/users/","pathType":"Exact"},` +
		`{"host":"api.example.com","path":"/products/","pathType":"Prefix"}],` +
		`"tls":[{"hosts":["api.example.com"],"secretName":"api-tls"}]}}`
	// tlsOnly is what V1ToV1alpha1 writes when only spec-level fields are
	// v1-only: the routes are not repeated.
	tlsOnly = `{"spec":{"ingressClassName":"nginx","resources":{"limits":{"cpu":"500m"}},` +
		`"tls":[{"hosts":["api.example.com"],"secretName":"api-tls"}]}}`
)

var apiTLS = []v1.GatewayTLS{{Hosts: []string{"api.example.com"}, SecretName: "api-tls"}}

func TestV1ToV1alpha1(t *testing.T) {
	tests := map[string]struct {
		in   *v1.APIGateway
		want *v1alpha1.APIGateway
	}{
		"the seed article's gateway needs no annotation": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Image: "nginx/nginx-plus:latest", Replicas: ptr.To[int32](2),
				Routes: []v1.Route{
					hubRoute("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080),
					hubRoute("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081),
				},
			}),
			want: alphaGateway(nil, v1alpha1.APIGatewaySpec{
				Image: "nginx/nginx-plus:latest", Replicas: ptr.To[int32](2),
				Routes: []v1alpha1.Route{
					alphaRoute("api.example.com", "/users/", "user-service", 8080),
					alphaRoute("api.example.com", "/products/", "product-service", 8081),
				},
			}),
		},
		"an Exact route lists all routes, without backends, beside tls": {
			in: hubGateway(map[string]string{"team": "a"}, v1.APIGatewaySpec{
				Routes: []v1.Route{
					hubRoute("api.example.com", "/users/", v1.PathTypeExact, "user-service", 8080),
					hubRoute("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081),
				},
				TLS: apiTLS,
			}),
			want: alphaGateway(map[string]string{"team": "a", DataAnnotation: exactUsers}, v1alpha1.APIGatewaySpec{
				Routes: []v1alpha1.Route{
					alphaRoute("api.example.com", "/users/", "user-service", 8080),
					alphaRoute("api.example.com", "/products/", "product-service", 8081),
				},
			}),
		},
		"spec-level v1 fields alone do not repeat the routes": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes:           []v1.Route{hubRoute("api.example.com", "/", v1.PathTypePrefix, "api", 80)},
				TLS:              apiTLS,
				IngressClassName: ptr.To("nginx"),
				Resources:        &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: tlsOnly}, v1alpha1.APIGatewaySpec{
				Routes: []v1alpha1.Route{alphaRoute("api.example.com", "/", "api", 80)},
			}),
		},
		// The exposure is v1-only: it rides in the annotation, every
		// optional field of a parentRef included, and comes back unchanged.
		"an HTTPRoute exposure": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes: []v1.Route{hubRoute("api.example.com", "/", v1.PathTypePrefix, "api", 80)},
				Exposure: &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: []v1.ParentGatewayReference{
					{Namespace: ptr.To("infra"), Name: "public", SectionName: ptr.To("https")},
					{Name: "internal"},
				}}},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"exposure":{"httpRoute":{"parentRefs":[` +
				`{"name":"public","namespace":"infra","sectionName":"https"},{"name":"internal"}]},"type":"HTTPRoute"}}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{alphaRoute("api.example.com", "/", "api", 80)}}),
		},
		// The access log is v1-only too: a v1alpha1 client that edits the
		// routes keeps it (restoreSpec restores spec-level fields).
		"an access log": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes:    []v1.Route{hubRoute("api.example.com", "/", v1.PathTypePrefix, "api", 80)},
				AccessLog: &v1.AccessLog{Format: v1.AccessLogJSON},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"accessLog":{"format":"JSON"}}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{alphaRoute("api.example.com", "/", "api", 80)}}),
		},
		// Rules are v1-only: they ride in the annotation, each rule with
		// its backend (only the route's own backendService is v1alpha1's),
		// and a route without backendService reads as an empty Service
		// name and port 0 in v1alpha1, and back as none.
		"routes with rules, one without backendService": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes: []v1.Route{
					func() v1.Route {
						r := hubRoute("api.example.com", "/users/", v1.PathTypePrefix, "users", 80)
						r.Rules = []v1.RouteRule{{
							Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always"}}}},
							BackendService: v1.BackendService{Name: "canary", Port: 8080},
						}}
						return r
					}(),
					func() v1.Route {
						r := hubRoute("api.example.com", "/beta", v1.PathTypeExact, "", 0)
						r.Rules = []v1.RouteRule{{
							Matches:        []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}, Method: ptr.To[v1.HTTPMethod]("GET")}},
							BackendService: v1.BackendService{Name: "beta", Port: 80},
						}}
						return r
					}(),
				},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"routes":[` +
				`{"host":"api.example.com","path":"/users/","pathType":"Prefix","rules":[{"backendService":{"name":"canary","port":8080},"matches":[{"headers":[{"name":"X-Canary","type":"Exact","value":"always"}]}]}]},` +
				`{"host":"api.example.com","path":"/beta","pathType":"Exact","rules":[{"backendService":{"name":"beta","port":80},"matches":[{"cookies":[{"name":"session","value":"beta"}],"method":"GET"}]}]}]}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{
					alphaRoute("api.example.com", "/users/", "users", 80),
					alphaRoute("api.example.com", "/beta", "", 0),
				}}),
		},
		// Source ranges are v1-only: they ride in the annotation, on the
		// route they limit.
		"a route with source ranges": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes: []v1.Route{
					func() v1.Route {
						r := hubRoute("api.example.com", "/office/", v1.PathTypePrefix, "office", 80)
						r.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8", "2001:db8::/32"}, Deny: []v1.CIDR{"10.1.0.0/16"}}
						return r
					}(),
					hubRoute("api.example.com", "/", v1.PathTypePrefix, "web", 80),
				},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"routes":[` +
				`{"host":"api.example.com","path":"/office/","pathType":"Prefix","sourceRanges":{"allow":["10.0.0.0/8","2001:db8::/32"],"deny":["10.1.0.0/16"]}},` +
				`{"host":"api.example.com","path":"/","pathType":"Prefix"}]}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{
					alphaRoute("api.example.com", "/office/", "office", 80),
					alphaRoute("api.example.com", "/", "web", 80),
				}}),
		},
		// A redirect is v1-only: it rides in the annotation, and a route
		// whose redirect answers every request has no backendService,
		// read as an empty Service name and port 0 in v1alpha1.
		"a route with a redirect and no backendService": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes: []v1.Route{func() v1.Route {
					r := hubRoute("api.example.com", "/old/", v1.PathTypePrefix, "", 0)
					r.Redirect = &v1.HTTPRedirect{Scheme: "https", Hostname: "new.example.com", Port: ptr.To[v1.PortNumber](8443),
						Path: &v1.RedirectPath{Type: v1.ReplacePrefixMatch, Value: "/new/"}, StatusCode: ptr.To[int32](301)}
					return r
				}()},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"routes":[` +
				`{"host":"api.example.com","path":"/old/","pathType":"Prefix","redirect":{"hostname":"new.example.com","path":{"type":"ReplacePrefixMatch","value":"/new/"},"port":8443,"scheme":"https","statusCode":301}}]}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{alphaRoute("api.example.com", "/old/", "", 0)}}),
		},
		"an unset pathType is kept, since v1alpha1 would read back Prefix": {
			in: hubGateway(nil, v1.APIGatewaySpec{
				Routes: []v1.Route{hubRoute("a.example.com", "", "", "a", 1)},
			}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"routes":[{"host":"a.example.com"}]}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{alphaRoute("a.example.com", "", "a", 1)}}),
		},
		"a user's text under the annotation's name passes through when nothing else is kept": {
			in:   hubGateway(map[string]string{DataAnnotation: "hello"}, v1.APIGatewaySpec{}),
			want: alphaGateway(map[string]string{DataAnnotation: "hello"}, v1alpha1.APIGatewaySpec{}),
		},
		"a user's text under the annotation's name is kept inside it when v1 data is": {
			in: hubGateway(map[string]string{DataAnnotation: "hello"}, v1.APIGatewaySpec{IngressClassName: ptr.To("nginx")}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"ingressClassName":"nginx"},"annotation":"hello"}`},
				v1alpha1.APIGatewaySpec{}),
		},
		"a v1 object carrying a value in our format keeps it verbatim": {
			in: hubGateway(map[string]string{DataAnnotation: tlsOnly}, v1.APIGatewaySpec{}),
			want: alphaGateway(map[string]string{DataAnnotation: `{"annotation":` + jsonString(t, tlsOnly) + `}`},
				v1alpha1.APIGatewaySpec{}),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := &v1alpha1.APIGateway{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1alpha1", Kind: "APIGateway"}}
			require.NoError(t, V1ToV1alpha1(tc.in, got))
			tc.want.TypeMeta = got.TypeMeta
			assert.Equal(t, tc.want, got)
			assert.Equal(t, "example.com/v1alpha1", got.APIVersion, "TypeMeta belongs to the caller")
			assert.Equal(t, before, tc.in, "the source must not change")

			back := &v1.APIGateway{}
			V1alpha1ToV1(got, back)
			assert.Equal(t, tc.in, back, "v1 -> v1alpha1 -> v1 must be the identity")
		})
	}
}

func TestV1alpha1ToV1(t *testing.T) {
	routesAlpha := []v1alpha1.Route{
		alphaRoute("api.example.com", "/users/", "user-service", 8080),
		alphaRoute("api.example.com", "/products/", "product-service", 8081),
	}
	tests := map[string]struct {
		in   *v1alpha1.APIGateway
		want *v1.APIGateway
		// identity says whether converting want back gives in again; it
		// does not when a v1alpha1 client edited what the annotation
		// describes, which is the point of those cases.
		identity bool
	}{
		"prefix routes become Prefix routes": {
			in: alphaGateway(nil, v1alpha1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](3), Routes: routesAlpha}),
			want: hubGateway(nil, v1.APIGatewaySpec{Image: "nginx:1.27", Replicas: ptr.To[int32](3), Routes: []v1.Route{
				hubRoute("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080),
				hubRoute("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081),
			}}),
			identity: true,
		},
		"the annotation is restored and removed; other annotations stay": {
			in: alphaGateway(map[string]string{DataAnnotation: exactUsers, "team": "a"}, v1alpha1.APIGatewaySpec{Routes: routesAlpha}),
			want: hubGateway(map[string]string{"team": "a"}, v1.APIGatewaySpec{
				Routes: []v1.Route{
					hubRoute("api.example.com", "/users/", v1.PathTypeExact, "user-service", 8080),
					hubRoute("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081),
				},
				TLS: apiTLS,
			}),
			identity: true,
		},
		"a changed backend keeps the route's pathType": {
			in: alphaGateway(map[string]string{DataAnnotation: exactUsers}, v1alpha1.APIGatewaySpec{Image: "new", Routes: []v1alpha1.Route{
				alphaRoute("api.example.com", "/users/", "users-v2", 9090),
				alphaRoute("api.example.com", "/products/", "product-service", 8081),
			}}),
			want: hubGateway(nil, v1.APIGatewaySpec{Image: "new", Routes: []v1.Route{
				hubRoute("api.example.com", "/users/", v1.PathTypeExact, "users-v2", 9090),
				hubRoute("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081),
			}, TLS: apiTLS}),
			identity: true,
		},
		"reordered routes keep their own pathTypes": {
			in: alphaGateway(map[string]string{DataAnnotation: exactUsers}, v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{
				routesAlpha[1], routesAlpha[0],
			}}),
			want: hubGateway(nil, v1.APIGatewaySpec{Routes: []v1.Route{
				hubRoute("api.example.com", "/products/", v1.PathTypePrefix, "product-service", 8081),
				hubRoute("api.example.com", "/users/", v1.PathTypeExact, "user-service", 8080),
			}, TLS: apiTLS}),
		},
		"an edited prefix, an added route and a removed route get the v1alpha1 meaning; tls stays": {
			in: alphaGateway(map[string]string{DataAnnotation: exactUsers}, v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{
				alphaRoute("api.example.com", "/users/v2/", "user-service", 8080),
				alphaRoute("new.example.com", "/users/", "user-service", 8080),
			}}),
			want: hubGateway(nil, v1.APIGatewaySpec{Routes: []v1.Route{
				hubRoute("api.example.com", "/users/v2/", v1.PathTypePrefix, "user-service", 8080),
				hubRoute("new.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080),
			}, TLS: apiTLS}),
		},
		"routes with the same host and path are matched in order": {
			in: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"routes":[` +
				`{"host":"a.example.com","path":"/x","pathType":"Exact"},` +
				`{"host":"a.example.com","path":"/x","pathType":"Prefix"}]}}`},
				v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{
					alphaRoute("a.example.com", "/x", "exact", 1),
					alphaRoute("a.example.com", "/x", "prefix", 2),
				}}),
			want: hubGateway(nil, v1.APIGatewaySpec{Routes: []v1.Route{
				hubRoute("a.example.com", "/x", v1.PathTypeExact, "exact", 1),
				hubRoute("a.example.com", "/x", v1.PathTypePrefix, "prefix", 2),
			}}),
			identity: true,
		},
		"a user's value wrapped by V1ToV1alpha1 is given back": {
			in: alphaGateway(map[string]string{DataAnnotation: `{"spec":{"ingressClassName":"nginx"},"annotation":"hello"}`},
				v1alpha1.APIGatewaySpec{}),
			want:     hubGateway(map[string]string{DataAnnotation: "hello"}, v1.APIGatewaySpec{IngressClassName: ptr.To("nginx")}),
			identity: true,
		},
		"an empty annotation map stays empty": {
			in:       alphaGateway(map[string]string{}, v1alpha1.APIGatewaySpec{}),
			want:     hubGateway(map[string]string{}, v1.APIGatewaySpec{}),
			identity: true,
		},
	}
	// Values that are not exactly what V1ToV1alpha1 writes are a user's:
	// kept in place, nothing restored from them.
	for name, value := range map[string]string{
		"text":                      "not JSON",
		"empty":                     "",
		"null":                      "null",
		"empty object":              "{}",
		"empty spec":                `{"spec":{}}`,
		"plain routes only":         `{"spec":{"routes":[{"host":"api.example.com","path":"/users/","pathType":"Prefix"}]}}`,
		"reformatted":               exactUsers[:len(exactUsers)-1] + " }",
		"unknown field":             `{"spec":{"ingressClassName":"nginx"},"owner":"me"}`,
		"backend in a route":        `{"spec":{"routes":[{"backendService":{"name":"x","port":1},"host":"api.example.com","path":"/users/","pathType":"Exact"}]}}`,
		"upper-case key":            `{"SPEC":{"ingressClassName":"nginx"}}`,
		"pass-through value nested": `{"annotation":"hello"}`,
		"trailing data":             tlsOnly + "{}",
		// What V1ToV1alpha1 writes for objects no v1 write can store: such
		// data would meet no schema on the way back in.
		"2,000 parentRefs (v1 allows 32)": beyondLimits(t, func(s *v1.APIGatewaySpec) {
			s.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{}}
			for i := range 2000 {
				s.Exposure.HTTPRoute.ParentRefs = append(s.Exposure.HTTPRoute.ParentRefs, v1.ParentGatewayReference{Name: fmt.Sprintf("g%d", i)})
			}
		}),
		"17 tls entries (v1 allows 16)": beyondLimits(t, func(s *v1.APIGatewaySpec) {
			for range 17 {
				s.TLS = append(s.TLS, v1.GatewayTLS{Hosts: []string{"api.example.com"}, SecretName: "tls"})
			}
		}),
		"an ingressClassName of 254 bytes": beyondLimits(t, func(s *v1.APIGatewaySpec) {
			s.IngressClassName = ptr.To(strings.Repeat("c", 254))
		}),
	} {
		tests["a user's value is kept: "+name] = struct {
			in       *v1alpha1.APIGateway
			want     *v1.APIGateway
			identity bool
		}{
			in:       alphaGateway(map[string]string{DataAnnotation: value}, v1alpha1.APIGatewaySpec{Routes: routesAlpha[:1]}),
			want:     hubGateway(map[string]string{DataAnnotation: value}, v1.APIGatewaySpec{Routes: []v1.Route{hubRoute("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080)}}),
			identity: true,
		}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := &v1.APIGateway{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "APIGateway"}}
			V1alpha1ToV1(tc.in, got)
			tc.want.TypeMeta = got.TypeMeta
			assert.Equal(t, tc.want, got)
			assert.Equal(t, "example.com/v1", got.APIVersion, "TypeMeta belongs to the caller")
			assert.Equal(t, before, tc.in, "the source must not change")

			back := &v1alpha1.APIGateway{}
			require.NoError(t, V1ToV1alpha1(got, back))
			if tc.identity {
				assert.Equal(t, tc.in, back, "v1alpha1 -> v1 -> v1alpha1 must be the identity")
			}
		})
	}
}

func TestStatusAndMetadataAreCopied(t *testing.T) {
	now := metav1.Now()
	hub := hubGateway(map[string]string{"a": "b"}, v1.APIGatewaySpec{TLS: apiTLS})
	hub.Labels = map[string]string{"app": "x"}
	hub.Generation, hub.ResourceVersion, hub.UID = 7, "42", "uid-1"
	hub.Finalizers = []string{"example.com/f"}
	hub.Status = v1.APIGatewayStatus{
		ObservedGeneration: 7, Replicas: 2, ReadyReplicas: 1, Selector: "app=x",
		Conditions: []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Rolling", LastTransitionTime: now}},
	}

	alpha := &v1alpha1.APIGateway{}
	require.NoError(t, V1ToV1alpha1(hub, alpha))

	wantMeta := *hub.ObjectMeta.DeepCopy()
	wantMeta.Annotations[DataAnnotation] = `{"spec":{"tls":[{"hosts":["api.example.com"],"secretName":"api-tls"}]}}`
	assert.Equal(t, wantMeta, alpha.ObjectMeta, "only the data annotation differs")
	assert.Equal(t, hub.Status, alpha.Status)

	alpha.Status.Conditions[0].Reason = "Changed"
	assert.Equal(t, "Rolling", hub.Status.Conditions[0].Reason, "status is copied, not shared")
}

func TestCorruptAnnotationNeverPanics(t *testing.T) {
	for name, value := range map[string]string{
		"truncated":      exactUsers[:40],
		"wrong types":    `{"spec":{"routes":"nope","tls":7}}`,
		"bad quantity":   `{"spec":{"resources":{"limits":{"cpu":"lots"}}}}`,
		"deeply nested":  `{"annotation":"{\"annotation\":\"{\\\"annotation\\\":\\\"x\\\"}\"}"}`,
		"huge number":    `{"spec":{"routes":[{"host":"a","path":"/","pathType":"Exact","backendService":{"port":99999999999}}]}}`,
		"invalid escape": `{"spec":{"ingressClassName":"\x"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			in := alphaGateway(map[string]string{DataAnnotation: value}, v1alpha1.APIGatewaySpec{Routes: []v1alpha1.Route{alphaRoute("a", "/", "s", 1)}})
			hub := &v1.APIGateway{}
			require.NotPanics(t, func() { V1alpha1ToV1(in, hub) })
			back := &v1alpha1.APIGateway{}
			require.NoError(t, V1ToV1alpha1(hub, back))
			assert.Equal(t, in, back)
		})
	}
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	var p payload
	p.Annotation = &s
	out, ok, err := encodeAnnotation(p)
	require.NoError(t, err)
	require.True(t, ok)
	// out is {"annotation":"..."}; keep the quoted string.
	return out[len(`{"annotation":`) : len(out)-1]
}

// TestAnnotationIsNotHTMLEscaped holds the DataAnnotation to one byte per
// '&', '<' and '>' of a path (encoding/json's default wrote six), and shows
// that a value written the old, escaped way, which a client that read a
// v1alpha1 object before the change may send back, still restores its data.
func TestAnnotationIsNotHTMLEscaped(t *testing.T) {
	routes := []v1.Route{hubRoute("api.example.com", "/a&b=<c>", v1.PathTypeExact, "s", 80)}
	hub := hubGateway(nil, v1.APIGatewaySpec{Routes: routes})
	alpha := &v1alpha1.APIGateway{}
	require.NoError(t, V1ToV1alpha1(hub, alpha))
	value := alpha.Annotations[DataAnnotation]
	assert.Equal(t, `{"spec":{"routes":[{"host":"api.example.com","path":"/a&b=<c>","pathType":"Exact"}]}}`, value)

	legacy := `{"spec":{"routes":[{"host":"api.example.com","path":"/a\u0026b=\u003cc\u003e","pathType":"Exact"}]}}`
	alpha.Annotations[DataAnnotation] = legacy
	back := &v1.APIGateway{}
	V1alpha1ToV1(alpha, back)
	assert.Equal(t, routes, back.Spec.Routes, "the escaped value must still restore pathType Exact")
	assert.NotContains(t, back.Annotations, DataAnnotation)
}

// beyondLimits is the conversion annotation V1ToV1alpha1 writes for a v1
// object of one route whose spec set changes beyond the v1 schema's size
// limits.
func beyondLimits(t *testing.T, set func(*v1.APIGatewaySpec)) string {
	t.Helper()
	hub := hubGateway(nil, v1.APIGatewaySpec{Routes: []v1.Route{hubRoute("api.example.com", "/users/", v1.PathTypePrefix, "user-service", 8080)}})
	set(&hub.Spec)
	alpha := &v1alpha1.APIGateway{}
	require.NoError(t, V1ToV1alpha1(hub, alpha))
	require.Contains(t, alpha.Annotations, DataAnnotation)
	return alpha.Annotations[DataAnnotation]
}
