package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

var testDefaults = Defaults{Image: "registry.example/nginx:1.27", Replicas: 3}

func TestDefault(t *testing.T) {
	tests := map[string]struct {
		in, want func(*v1.APIGateway)
	}{
		"complete object is unchanged": {},
		"image from the defaults": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Image = "" },
			want: func(gw *v1.APIGateway) { gw.Spec.Image = testDefaults.Image },
		},
		"replicas from the defaults": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Replicas = nil },
			want: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](3) },
		},
		"replicas 0 is kept": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](0) },
			want: func(gw *v1.APIGateway) { gw.Spec.Replicas = ptr.To[int32](0) },
		},
		"path defaults to /": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "" },
			want: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Path = "/" },
		},
		"pathType defaults to Prefix": {
			in: func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = "" },
		},
		"Exact is kept": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = v1.PathTypeExact },
			want: func(gw *v1.APIGateway) { gw.Spec.Routes[1].PathType = v1.PathTypeExact },
		},
		"host lower-cased and trailing dot removed, in routes and tls": {
			in: func(gw *v1.APIGateway) {
				gw.Spec.Routes[0].Host = "API.Example.COM."
				gw.Spec.TLS[0].Hosts[0] = "Api.Example.Com."
			},
		},
		"wildcard host lower-cased": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "*.Example.com" },
			want: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "*.example.com" },
		},
		"two trailing dots are left for validation to reject": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "API.example.com.." },
			want: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "api.example.com.." },
		},
		"non-ASCII letters are not folded": {
			// The Kelvin sign lower-cases to an ASCII k under Unicode rules.
			in:   func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "\u212Aube.Example.com" },
			want: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "\u212Aube.example.com" },
		},
		"path is not rewritten": {
			in:   func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path = "/A/../B" },
			want: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path = "/A/../B" },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(tc.in)
			Default(gw, testDefaults)
			assert.Equal(t, gatewayWith(tc.want), gw)

			again := gw.DeepCopy()
			Default(again, testDefaults)
			assert.Equal(t, gw, again, "Default must be idempotent")
		})
	}
}

func TestDefaultsForNamespace(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        string
	}{
		"no annotations":     {want: testDefaults.Image},
		"other annotations":  {annotations: map[string]string{"a": "b"}, want: testDefaults.Image},
		"annotation wins":    {annotations: map[string]string{v1.DefaultImageAnnotation: "ns/nginx:2"}, want: "ns/nginx:2"},
		"blank annotation":   {annotations: map[string]string{v1.DefaultImageAnnotation: "  "}, want: testDefaults.Image},
		"annotation trimmed": {annotations: map[string]string{v1.DefaultImageAnnotation: " ns/nginx:2\n"}, want: "ns/nginx:2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := testDefaults.ForNamespace(tc.annotations)
			assert.Equal(t, tc.want, d.Image)
			assert.Equal(t, testDefaults.Replicas, d.Replicas)
		})
	}
}

// A gateway written with only what the user must give passes validation
// once defaulted, with the operator's own defaults.
func TestDefaultedObjectIsValid(t *testing.T) {
	gw := &v1.APIGateway{Spec: v1.APIGatewaySpec{
		Routes: []v1.Route{{Host: "API.example.com.", BackendService: v1.BackendService{Name: "svc", Port: 80}}},
		TLS:    []v1.GatewayTLS{{Hosts: []string{"api.EXAMPLE.com"}, SecretName: "tls"}},
	}}
	gw.Name, gw.Namespace = "minimal", "default"
	Default(gw, Defaults{Image: DefaultImage, Replicas: DefaultReplicas})

	errs, warnings := Validate(nil, gw, RelatedObjects{})
	require.Empty(t, errs)
	assert.Equal(t, []string{"spec.replicas: 1 runs a single gateway pod with no redundancy: a node drain or a pod restart " +
		"interrupts traffic; set 2 or more for production"}, []string(warnings))
	assert.Equal(t, v1.Route{Host: "api.example.com", Path: "/", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "svc", Port: 80}}, gw.Spec.Routes[0])
}
