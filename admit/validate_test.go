package admit

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/render"
)

// The rules about the gateway alone are package validation's, tested there;
// these are the claims of other gateways that Validate adds: hosts owned
// by other namespaces (package ownership's table tests every case of the
// rule; these check the errors admission makes of it) and routes other
// gateways claimed first.
func TestValidateConflicts(t *testing.T) {
	const duplicate, forbidden = field.ErrorTypeDuplicate, field.ErrorTypeForbidden
	other := func(name string, routes ...v1.Route) v1.APIGateway {
		gw := validGateway()
		gw.Name, gw.Spec.Routes = name, routes
		return *gw
	}
	elsewhere := func(o v1.APIGateway) v1.APIGateway { o.Namespace = "elsewhere"; return o }
	shared := ownership.InterNamespaceAllowed
	tests := map[string]struct {
		mutate  func(*v1.APIGateway)
		related RelatedObjects
		want    []wantErr
	}{
		"gateway does not conflict with itself": {related: RelatedObjects{Gateways: []v1.APIGateway{*validGateway()}}},
		"other gateway's Exact route on a Prefix one's path": {related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
			o := other("exact", route("/users/", "s", 80))
			o.Spec.Routes[0].PathType = v1.PathTypeExact
			return o
		}()}}},
		"other gateway of another ingress class": {related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
			o := other("internal", route("/users/", "s", 80))
			o.Spec.IngressClassName = ptr.To("internal")
			return o
		}()}}},
		"other gateway of a class while this one has none, which is not the default": {related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
			o := other("nginx", route("/users/", "s", 80))
			o.Spec.IngressClassName = ptr.To("nginx")
			return o
		}()}}},
		"other gateway of the default class while this one has none": {
			related: RelatedObjects{Classes: ownership.Classes{Default: "nginx"}, Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("nginx", route("/users/", "s", 80))
				o.Spec.IngressClassName = ptr.To("nginx")
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway default/nginx, which claimed api.example.com/users (Prefix) first for the cluster's default ingress class`, RuleConflict}},
		},
		"other gateway on another path": {related: RelatedObjects{Gateways: []v1.APIGateway{other("o", route("/orders/", "s", 80))}}},
		"route served by another gateway": {
			related: RelatedObjects{Gateways: []v1.APIGateway{other("legacy", route("/products/", "s", 80))}},
			want: []wantErr{{"spec.routes[1]", duplicate,
				`host and path already served by APIGateway default/legacy, which claimed api.example.com/products (Prefix) first for the cluster's default ingress class; ` +
					`Ingress controllers merge a host's paths across namespaces, so only one gateway can have it`, RuleConflict}},
		},
		"the host of a gateway of another namespace": {
			related: RelatedObjects{Gateways: []v1.APIGateway{elsewhere(other("o", route("/orders/", "s", 80)))}},
			want: []wantErr{
				{"spec.routes[0].host", forbidden, `host api.example.com belongs to another namespace, which lends namespace default no path prefix covering api.example.com/users (Prefix): ` +
					`a host and the names below it belong to one namespace; ask the host's owners for a delegation (spec.delegations on one of their gateways), or use another host`, RuleHostOwned},
				{"spec.routes[1].host", forbidden, `host api.example.com belongs to another namespace`, RuleHostOwned},
			},
		},
		"the owner is named to a user who may read it": {
			related: RelatedObjects{Gateways: []v1.APIGateway{elsewhere(other("o", route("/orders/", "s", 80)))},
				Readable: func(ns string) bool { return ns == "elsewhere" }},
			want: []wantErr{
				{"spec.routes[0].host", forbidden, `host api.example.com belongs to namespace elsewhere (APIGateway elsewhere/o claimed it first), which lends`, RuleHostOwned},
				{"spec.routes[1].host", forbidden, `belongs to namespace elsewhere`, RuleHostOwned},
			},
		},
		"a namesake in another namespace is another gateway": {
			related: RelatedObjects{Gateways: []v1.APIGateway{elsewhere(*validGateway())}},
			want: []wantErr{
				{"spec.routes[0].host", forbidden, `belongs to another namespace`, RuleHostOwned},
				{"spec.routes[1].host", forbidden, `belongs to another namespace`, RuleHostOwned},
			},
		},
		"the host, in another class": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.IngressClassName = ptr.To("nginx") },
			related: RelatedObjects{Gateways: []v1.APIGateway{elsewhere(func() v1.APIGateway {
				o := other("internal", route("/orders/", "s", 80))
				o.Spec.IngressClassName = ptr.To("internal")
				return o
			}())}},
			want: []wantErr{
				{"spec.routes[0].host", forbidden, `belongs to another namespace`, RuleHostOwned},
				{"spec.routes[1].host", forbidden, `belongs to another namespace`, RuleHostOwned},
			},
		},
		"a name under another namespace's wildcard": {
			related: RelatedObjects{Gateways: []v1.APIGateway{elsewhere(func() v1.APIGateway {
				o := other("all", route("/", "s", 80))
				o.Spec.Routes[0].Host, o.Spec.TLS = "*.example.com", nil
				return o
			}())}},
			want: []wantErr{
				{"spec.routes[0].host", forbidden, `host api.example.com belongs to another namespace`, RuleHostOwned},
				{"spec.routes[1].host", forbidden, `host api.example.com belongs to another namespace`, RuleHostOwned},
			},
		},
		"a path the owner lends": {
			related: RelatedObjects{Gateways: []v1.APIGateway{elsewhere(func() v1.APIGateway {
				o := other("o", route("/orders/", "s", 80))
				o.Spec.Delegations = []v1.HostDelegation{{Host: "api.example.com", Namespace: "default", PathPrefixes: []v1.HTTPPath{"/users"}}}
				return o
			}())}},
			want: []wantErr{{"spec.routes[1].host", forbidden, `host api.example.com belongs to another namespace, which lends namespace default no path prefix covering api.example.com/products (Prefix)`, RuleHostOwned}},
		},
		"InterNamespaceAllowed: the host of another namespace, another path": {
			related: RelatedObjects{Policy: shared, Gateways: []v1.APIGateway{elsewhere(other("o", route("/orders/", "s", 80)))}},
		},
		"InterNamespaceAllowed: a route of another namespace": {
			related: RelatedObjects{Policy: shared, Gateways: []v1.APIGateway{elsewhere(other("o", route("/users/", "s", 80)))}},
			want:    []wantErr{{"spec.routes[0]", duplicate, `already served by an APIGateway of another namespace, which claimed api.example.com/users (Prefix) first`, RuleConflict}},
		},
		"route served by two other gateways: the first claim": {
			related: RelatedObjects{Gateways: []v1.APIGateway{
				other("b", route("/users/", "s", 80)),
				other("a", route("/users/", "s", 80)),
			}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway default/a, which`, RuleConflict}},
		},
		"route another gateway serves once normalised": {
			related: RelatedObjects{Gateways: []v1.APIGateway{other("legacy", route("/%70roducts", "s", 80))}},
			want:    []wantErr{{"spec.routes[1]", duplicate, `default/legacy, which claimed api.example.com/products (Prefix) first`, RuleConflict}},
		},
		"route another gateway of the same class serves": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.IngressClassName = ptr.To("nginx") },
			related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("nginx", route("/users/", "s", 80))
				o.Spec.IngressClassName = ptr.To("nginx")
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway default/nginx, which claimed api.example.com/users (Prefix) first for ingress class "nginx"`, RuleConflict}},
		},

		// With exposure HTTPRoute, the routes compete in each parent
		// Gateway, whatever its listener, and nowhere else.
		"route another gateway attaches to the same Gateway": {
			mutate: func(gw *v1.APIGateway) { attach(gw, gatewayRef("infra", "public", "https")) },
			related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				attach(&o, gatewayRef("infra", "public", "http"))
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway default/o, which claimed api.example.com/users (Prefix) first for Gateway infra/public; ` +
				`a Gateway merges the HTTPRoutes attached to it, whatever their namespaces, so only one gateway can have it`, RuleConflict}},
		},
		"route another gateway attaches to the second of two Gateways": {
			mutate: func(gw *v1.APIGateway) {
				attach(gw, gatewayRef("infra", "public", ""), gatewayRef("infra", "internal", ""))
			},
			related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/products/", "s", 80))
				attach(&o, gatewayRef("infra", "internal", ""))
				return o
			}()}},
			want: []wantErr{{"spec.routes[1]", duplicate, `default/o, which claimed api.example.com/products (Prefix) first for Gateway infra/internal; a Gateway merges`, RuleConflict}},
		},
		"route another gateway attaches to another Gateway": {
			mutate: func(gw *v1.APIGateway) { attach(gw, gatewayRef("infra", "public", "")) },
			related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				attach(&o, gatewayRef("infra", "internal", ""))
				return o
			}()}},
		},
		"route an Ingress-exposed gateway serves, to an HTTPRoute-exposed one": {
			mutate:  func(gw *v1.APIGateway) { attach(gw, gatewayRef("infra", "public", "")) },
			related: RelatedObjects{Gateways: []v1.APIGateway{other("legacy", route("/users/", "s", 80))}},
		},
		"route an HTTPRoute-exposed gateway serves, to an Ingress-exposed one": {
			related: RelatedObjects{Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				attach(&o, gatewayRef("infra", "public", ""))
				return o
			}()}},
		},
		// A parentRef without namespace names a Gateway in the gateway's
		// own namespace (two namespaces here: hosts are shared).
		"route a gateway of the Gateway's namespace attaches to it without naming the namespace": {
			mutate: func(gw *v1.APIGateway) { gw.Namespace = "b"; attach(gw, gatewayRef("a", "g", "")) },
			related: RelatedObjects{Policy: shared, Readable: func(string) bool { return true }, Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				o.Namespace = "a"
				attach(&o, gatewayRef("", "g", ""))
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway a/o, which claimed api.example.com/users (Prefix) first for Gateway a/g`, RuleConflict}},
		},
		"route attached without naming the namespace, to a Gateway another gateway names": {
			mutate: func(gw *v1.APIGateway) { gw.Namespace = "a"; attach(gw, gatewayRef("", "g", "")) },
			related: RelatedObjects{Policy: shared, Readable: func(string) bool { return true }, Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				o.Namespace = "b"
				attach(&o, gatewayRef("a", "g", ""))
				return o
			}()}},
			want: []wantErr{{"spec.routes[0]", duplicate, `already served by APIGateway b/o, which claimed api.example.com/users (Prefix) first for Gateway a/g`, RuleConflict}},
		},
		"namesake Gateways of two namespaces, both unnamed": {
			mutate: func(gw *v1.APIGateway) { attach(gw, gatewayRef("", "g", "")) },
			related: RelatedObjects{Policy: shared, Gateways: []v1.APIGateway{func() v1.APIGateway {
				o := other("o", route("/users/", "s", 80))
				o.Namespace = "elsewhere"
				attach(&o, gatewayRef("", "g", ""))
				return o
			}()}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(tc.mutate)
			errs, _ := Validate(nil, gw, tc.related)
			checkErrors(t, tc.want, errs)

			// An update from an object that shares no route checks the
			// same rules as a create.
			old := gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes = []v1.Route{route("/old/", "s", 80)} })
			updateErrs, _ := Validate(old, gw, tc.related)
			assert.Equal(t, errs, updateErrs)
		})
	}
}

// attach exposes gw through HTTPRoutes attached to refs, without the
// spec.tls that exposure refuses.
func attach(gw *v1.APIGateway, refs ...v1.ParentGatewayReference) {
	gw.Spec.TLS = nil
	gw.Spec.Exposure = &v1.Exposure{Type: v1.ExposureHTTPRoute, HTTPRoute: &v1.HTTPRouteExposure{ParentRefs: refs}}
}

// gatewayRef references Gateway name; namespace and listener "" leave
// them unset.
func gatewayRef(namespace, name, listener string) v1.ParentGatewayReference {
	p := v1.ParentGatewayReference{Name: name}
	if namespace != "" {
		p.Namespace = ptr.To(namespace)
	}
	if listener != "" {
		p.SectionName = ptr.To(listener)
	}
	return p
}

// A conflict the gateway already had does not block its updates; a route
// it adds is checked; and a gateway reported as losing routes is checked
// whole.
func TestValidateUpdateRatchetsConflicts(t *testing.T) {
	legacy := validGateway()
	legacy.Name = "legacy"
	others := RelatedObjects{Gateways: []v1.APIGateway{*legacy}}

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
	errs, _ = Validate(gw, withClass, RelatedObjects{Gateways: []v1.APIGateway{classed}})
	require.Len(t, errs, 2, "%v", errs)

	old.Spec.Routes = old.Spec.Routes[:1]
	errs, _ = Validate(old, gw, others)
	checkErrors(t, []wantErr{{"spec.routes[1]", field.ErrorTypeDuplicate, `already served by APIGateway default/legacy`, RuleConflict}}, errs)

	// A gateway whose status says it loses a route (it was stored while
	// the webhook did not answer) is checked whole: it cannot be updated
	// while it asks for a route another gateway holds.
	losing := validGateway()
	losing.Status.Claims = &v1.Claims{Routes: []v1.RouteClaim{{Route: "Prefix api.example.com/users", Lost: true}}}
	update := losing.DeepCopy()
	update.Labels = map[string]string{"team": "a"}
	errs, _ = Validate(losing, update, others)
	require.Len(t, errs, 2, "every route held by legacy: %v", errs)
}

// TestWarnings is the table of the warnings a user gets: those about the
// gateway alone from the warnings policy (manifests/policy/warnings.yaml,
// its CEL evaluated in process as the API server does), then those that
// need other objects from Validate.
func TestWarnings(t *testing.T) {
	compiled, err := CompiledWarnings()
	require.NoError(t, err)
	tests := map[string]struct {
		mutate func(*v1.APIGateway)
		ports  map[string][]int32
		want   []string
	}{
		"none": {},
		"image without a tag": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx" },
			want:   []string{`spec.image has no tag, which means "latest": pods may run different builds; pin a version (as in nginx:1.27) or a digest`},
		},
		"image from a registry with a port, without a tag": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "registry:5000/team/nginx" },
			want:   []string{`spec.image has no tag`},
		},
		"image tagged latest": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx:latest" },
			want:   []string{`spec.image uses the tag "latest": pods may run different builds; pin a version or a digest`},
		},
		"image from a registry with a port, pinned": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "registry:5000/nginx:1.27" },
		},
		"latest but pinned by digest": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = v1.Image("nginx:latest@sha256:" + strings.Repeat("0", 64)) },
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
		"externalAuth Service without the port": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].ExternalAuth = &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}
			},
			ports: map[string][]int32{"oauth2-proxy": {80}},
			want:  []string{`spec.routes[0].externalAuth: Service "oauth2-proxy" has no port 4180 (its ports: 80)`},
		},
		"externalAuth Service with the port": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].ExternalAuth = &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}
			},
			ports: map[string][]int32{"oauth2-proxy": {4180}},
		},
		"externalAuth on a backend Service without the port: one warning": {
			mutate: func(gw *v1.APIGateway) {
				gw.Spec.Routes[1].ExternalAuth = &v1.ExternalAuth{Service: "user-service", Port: 8080, Path: "/auth"}
			},
			ports: map[string][]int32{"user-service": {80}},
			want:  []string{"spec.routes[0].backendService: Service \"user-service\" has no port 8080"},
		},
		"one warning per Service and port": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Routes[1].BackendService = gw.Spec.Routes[0].BackendService },
			ports:  map[string][]int32{"user-service": {80}},
			want:   []string{"spec.routes[0].backendService: Service \"user-service\" has no port 8080"},
		},
		"an image with many tags": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "nginx:latest:latest" },
		},
		"upper-case LATEST is a tag like another": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "ghcr.io/x/y:LATEST" },
		},
		"a tag after the last slash only": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image = "registry:5000/team/nginx:latest" },
			want:   []string{`spec.image uses the tag "latest"`},
		},
		"all at once": {
			mutate: func(gw *v1.APIGateway) { gw.Spec.Image, gw.Spec.Replicas = "nginx:latest", ptr.To[int32](1) },
			ports:  map[string][]int32{"product-service": {80}},
			want:   []string{"spec.image ", "spec.replicas:", "spec.routes[1].backendService:"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(tc.mutate)
			errs, portWarnings := Validate(nil, gw, RelatedObjects{ServicePorts: tc.ports})
			require.Empty(t, errs)
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gw)
			require.NoError(t, err)
			warnings := append(compiled.Warnings(t.Context(), &unstructured.Unstructured{Object: obj}), portWarnings...)
			require.Len(t, warnings, len(tc.want), "warnings: %q", warnings)
			for i, w := range tc.want {
				assert.Contains(t, warnings[i], w)
			}
		})
	}
}

// TestValidateStopsAtTooMany: a list beyond its limit is the one error
// reported, however many of its elements are invalid too: a million of
// them must not cost a million errors, nor a million index lookups, nor
// warnings.
func TestValidateStopsAtTooMany(t *testing.T) {
	gw := validGateway()
	gw.Spec.TLS = []v1.GatewayTLS{{Hosts: make([]string, 100_000)}}
	gw.Spec.Routes = append(gw.Spec.Routes, make([]v1.Route, 100_000)...)
	errs, warnings := Validate(nil, gw, RelatedObjects{})
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Field + ": " + e.Type.String()
	}
	assert.Equal(t, []string{"spec.routes: Too many", "spec.tls[0].hosts: Too many"}, got)
	assert.Empty(t, warnings)
}

// TestValidateRefusesAnObjectV1alpha1CannotCarry: Validate reports, at
// spec, a gateway whose v1alpha1 form would need more annotation bytes
// than conversion.MaxV1alpha1AnnotationBytes; one that fits passes.
func TestValidateRefusesAnObjectV1alpha1CannotCarry(t *testing.T) {
	gw := validGateway()
	gw.Spec.Routes = nil
	for i := range 100 {
		path := "/" + strings.Repeat("a&", 500) + strconv.Itoa(i)
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypeExact,
			BackendService: v1.BackendService{Name: "svc", Port: 80}})
	}
	errs, _ := Validate(nil, gw, RelatedObjects{})
	assert.Empty(t, errs, "100 long Exact routes fit once '&' takes one byte")

	gw.Annotations = map[string]string{"note": strings.Repeat("x", 150<<10)}
	errs, _ = Validate(nil, gw, RelatedObjects{})
	require.Len(t, errs, 1)
	assert.Equal(t, "spec", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "too large to be read through v1alpha1")
}

// TestValidateRefusesAGatewayTooLargeToRender: Validate reports, at
// spec.routes with rule configSize, a gateway whose nginx configuration
// would pass render.MaxConfigBytes, naming the bound. 100 routes that
// each change 96 headers with one-letter values fit the v1alpha1
// annotation (that rule passes) but render past the bound; 100 routes
// with every setting and a few headers each, and the same gateway with
// maximal values, show the two sides.
func TestValidateRefusesAGatewayTooLargeToRender(t *testing.T) {
	withHeaders := func(n, valueLen int) *v1.APIGateway {
		gw := validGateway()
		gw.Spec.Routes = nil
		for i := range 100 {
			r := route("/api"+strconv.Itoa(i), "svc", 80)
			r.RateLimit = &v1.RateLimit{RequestsPerSecond: 10, Burst: 5}
			r.AdditionalBackends = []v1.WeightedBackend{{Name: "canary", Port: 80, Weight: 10}}
			r.RewritePrefix = "/"
			mod := func() *v1.HeaderModifier {
				m := &v1.HeaderModifier{}
				for j := range n {
					name := v1.HTTPHeaderName("X" + strconv.FormatInt(int64(j), 16))
					h := v1.HTTPHeader{Name: name, Value: v1.HTTPHeaderValue(strings.Repeat("v", valueLen))}
					switch j % 3 {
					case 0:
						m.Set = append(m.Set, h)
					case 1:
						m.Add = append(m.Add, h)
					default:
						m.Remove = append(m.Remove, name)
					}
				}
				return m
			}
			r.RequestHeaders, r.ResponseHeaders = mod(), mod()
			gw.Spec.Routes = append(gw.Spec.Routes, r)
		}
		return gw
	}
	tests := map[string]struct {
		gw    *v1.APIGateway
		rules []string
	}{
		"100 routes, a few headers each":           {gw: withHeaders(6, 16)},
		"100 routes, 96 short header changes each": {gw: withHeaders(48, 1), rules: []string{validation.RuleConfigSize}},
		"100 routes, 96 maximal header changes":    {gw: withHeaders(48, 1024), rules: []string{RuleV1alpha1Size, validation.RuleConfigSize}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs, _ := Validate(nil, tc.gw, RelatedObjects{})
			var rules []string
			for _, e := range errs {
				rules = append(rules, e.Origin)
				if e.Origin == validation.RuleConfigSize {
					assert.Equal(t, "spec.routes", e.Field)
					assert.Contains(t, e.Detail, "over the bound of "+strconv.Itoa(render.MaxConfigBytes))
				}
			}
			assert.Equal(t, tc.rules, rules, "%v", errs)
		})
	}
}
