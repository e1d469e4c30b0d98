package offline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
)

var testDefaults = defaults.Operator{Image: defaults.DefaultImage, Replicas: defaults.DefaultReplicas}

func check(t *testing.T, yamlText string, opts Options) Report {
	t.Helper()
	c, err := NewChecker()
	require.NoError(t, err)
	docs, err := Parse("in.yaml", []byte(yamlText))
	require.NoError(t, err)
	if opts.Defaults == (defaults.Operator{}) {
		opts.Defaults = testDefaults
	}
	return c.Validate(t.Context(), docs, opts)
}

const gwHead = "apiVersion: example.com/v1\nkind: APIGateway\nmetadata: {name: gw, namespace: default}\n"
const alphaHead = "apiVersion: example.com/v1alpha1\nkind: APIGateway\nmetadata: {name: gw, namespace: default}\n"

// TestValidate holds each stage of the pipeline to the verdict and field
// path the API server gives (the parity test holds them to the server).
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, in          string
		opts              Options
		field, rule, text string // of the first error; empty field and rule: valid
	}{
		{name: "valid v1", in: gwHead + "spec:\n  image: nginx:1.27\n  routes:\n  - {host: a.example.com, path: /x, backendService: {name: s, port: 80}}\n"},
		{name: "valid v1alpha1", in: alphaHead + "spec:\n  image: nginx:1.27\n  routes:\n  - {host: a.example.com, prefix: /x, serviceName: s, servicePort: 80}\n"},
		{name: "unknown field", in: gwHead + "spec:\n  imag: nginx\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 80}}\n",
			field: "spec.imag", rule: RuleStrictFields, text: `unknown field "spec.imag"`},
		{name: "schema: port range", in: gwHead + "spec:\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 0}}\n",
			field: "spec.routes[0].backendService.port", rule: RuleSchema},
		{name: "CEL: v1alpha1 prefix", in: alphaHead + "spec:\n  routes:\n  - {host: a.example.com, prefix: orders, serviceName: s, servicePort: 80}\n",
			field: "spec.routes[0].prefix", rule: RuleCEL, text: "must start with '/'"},
		{name: "CEL at the root: name", in: strings.Replace(gwHead, "name: gw", "name: a.b", 1) + "spec:\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 80}}\n",
			field: "<nil>", text: "DNS-1035 label"},
		{name: "CEL across fields: TLS host", in: gwHead + "spec:\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 80}}\n  tls:\n  - {hosts: [b.example.com], secretName: s}\n",
			field: "spec.tls", rule: RuleCEL, text: "host b.example.com is not the host of any of the gateway's routes"},
		{name: "webhook: a duplicate once decoded", in: gwHead + "spec:\n  routes:\n  - {host: a.example.com, path: /users, backendService: {name: s, port: 80}}\n  - {host: a.example.com, path: /%75sers, backendService: {name: s, port: 80}}\n",
			field: "spec.routes[1]", text: "same host, path and pathType as spec.routes[0] once normalised"},
		{name: "conflict with an earlier gateway", in: gwHead + "spec:\n  routes:\n  - {host: a.example.com, path: /x, backendService: {name: s, port: 80}}\n---\n" +
			strings.Replace(gwHead, "name: gw", "name: gw2", 1) + "spec:\n  routes:\n  - {host: a.example.com, path: /x, backendService: {name: t, port: 80}}\n",
			field: "spec.routes[0]", rule: admit.RuleConflict, text: "already served by APIGateway default/gw"},
		{name: "each alone: no conflict with an earlier gateway", in: gwHead + "spec:\n  routes:\n  - {host: a.example.com, path: /x, backendService: {name: s, port: 80}}\n---\n" +
			strings.Replace(gwHead, "name: gw", "name: gw2", 1) + "spec:\n  routes:\n  - {host: a.example.com, path: /x, backendService: {name: t, port: 80}}\n",
			opts: Options{EachAlone: true, Gateways: []v1.APIGateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "held"},
				Spec: v1.APIGatewaySpec{Routes: []v1.Route{{Host: "a.example.com", Path: "/", PathType: v1.PathTypePrefix}}}}}}},
		{name: "unserved version", in: "apiVersion: example.com/v2\nkind: APIGateway\nmetadata: {name: gw}\n", rule: RuleVersion, text: "no matches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := check(t, tc.in, tc.opts)
			var first *Problem
			for _, o := range r.Objects {
				if len(o.Errors) > 0 {
					first = &o.Errors[0]
					break
				}
			}
			if tc.field == "" && tc.rule == "" {
				assert.True(t, r.Valid(), "%+v", r.Objects)
				return
			}
			require.NotNil(t, first, "an error is expected: %+v", r.Objects)
			assert.False(t, r.Valid())
			assert.Equal(t, tc.field, first.Field)
			if tc.rule != "" {
				assert.Equal(t, tc.rule, first.Rule)
			}
			assert.Contains(t, first.Message, tc.text)
		})
	}
}

// TestValidateDefaults: the defaults the mutating webhook fills in, the
// namespace's image included, reach the admitted gateway and its warnings.
func TestValidateDefaults(t *testing.T) {
	in := "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, annotations: {example.com/default-gateway-image: 'corp/nginx:2'}}\n---\n" +
		"apiVersion: example.com/v1\nkind: APIGateway\nmetadata: {name: gw, namespace: team}\nspec:\n  routes:\n  - {host: A.example.com, backendService: {name: s, port: 80}}\n"
	r := check(t, in, Options{})
	require.True(t, r.Valid(), "%+v", r.Objects)
	require.Len(t, r.Objects, 2)
	assert.NotEmpty(t, r.Objects[0].Note)
	gw := r.Objects[1].Gateway
	require.NotNil(t, gw)
	assert.Equal(t, v1.Image("corp/nginx:2"), gw.Spec.Image)
	assert.Equal(t, int32(1), *gw.Spec.Replicas)
	assert.Equal(t, v1.Hostname("a.example.com"), gw.Spec.Routes[0].Host)
	assert.Equal(t, v1.HTTPPath("/"), gw.Spec.Routes[0].Path)
	assert.Contains(t, strings.Join(r.Objects[1].Warnings, "\n"), "spec.replicas: 1")
}

// TestValidatePortWarnings: a Service of the input without a route's
// port warns, for a backend and for an externalAuth Service alike, as the
// webhook does (admit.Validate); a Service the input lacks does not.
func TestValidatePortWarnings(t *testing.T) {
	in := "apiVersion: v1\nkind: Service\nmetadata: {name: oauth2-proxy, namespace: team}\nspec: {ports: [{port: 80}]}\n---\n" +
		"apiVersion: example.com/v1\nkind: APIGateway\nmetadata: {name: gw, namespace: team}\nspec:\n  replicas: 2\n  routes:\n" +
		"  - {host: a.example.com, backendService: {name: oauth2-proxy, port: 4180}}\n" +
		"  - {host: b.example.com, backendService: {name: s, port: 80}, externalAuth: {service: oauth2-proxy, port: 4180, path: /oauth2/auth}}\n" +
		"  - {host: c.example.com, backendService: {name: s, port: 80}, externalAuth: {service: missing, port: 4180, path: /oauth2/auth}}\n"
	r := check(t, in, Options{})
	require.True(t, r.Valid(), "%+v", r.Objects)
	assert.Equal(t, []string{`spec.routes[0].backendService: Service "oauth2-proxy" has no port 4180 (its ports: 80)`},
		r.Objects[1].Warnings, "one warning per Service and port")
	in = strings.Replace(in, "backendService: {name: oauth2-proxy, port: 4180}", "backendService: {name: s, port: 80}", 1)
	r = check(t, in, Options{})
	require.True(t, r.Valid(), "%+v", r.Objects)
	assert.Equal(t, []string{`spec.routes[1].externalAuth: Service "oauth2-proxy" has no port 4180 (its ports: 80)`}, r.Objects[1].Warnings)
}

// TestValidateKeepStatus: with KeepStatus an admitted gateway keeps the
// status the input gives it, of either version; without, it has none, as
// after a create.
func TestValidateKeepStatus(t *testing.T) {
	status := "status:\n  observedGeneration: 4\n  claims:\n    routes:\n    - {route: Prefix a.example.com/x, since: '2026-01-02T03:04:05.000006Z', lost: true}\n"
	for _, head := range []string{gwHead + "spec:\n  routes:\n  - {host: a.example.com, path: /x, backendService: {name: s, port: 80}}\n",
		alphaHead + "spec:\n  routes:\n  - {host: a.example.com, prefix: /x, serviceName: s, servicePort: 80}\n"} {
		r := check(t, head+status, Options{KeepStatus: true})
		require.True(t, r.Valid(), "%+v", r.Objects)
		gw := r.Objects[0].Gateway
		assert.Equal(t, int64(4), gw.Status.ObservedGeneration)
		require.NotNil(t, gw.Status.Claims)
		require.Len(t, gw.Status.Claims.Routes, 1)
		c := gw.Status.Claims.Routes[0]
		assert.Equal(t, "Prefix a.example.com/x", c.Route)
		assert.True(t, c.Lost)
		assert.True(t, c.Since.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)), "%v", c.Since)

		r = check(t, head+status, Options{})
		require.True(t, r.Valid(), "%+v", r.Objects)
		assert.Nil(t, r.Objects[0].Gateway.Status.Claims, "a create drops the status")
	}
	r := check(t, gwHead+"spec:\n  routes:\n  - {host: a.example.com, backendService: {name: s, port: 80}}\nstatus: {claims: {routes: [{route: 7}]}}\n", Options{KeepStatus: true})
	assert.False(t, r.Valid(), "a status of the wrong shape is refused")
}

// TestSamplesOffline: the samples' documented errors come out of the
// offline pipeline with no cluster.
func TestSamplesOffline(t *testing.T) {
	c, err := NewChecker()
	require.NoError(t, err)
	root := filepath.Join("..", "manifests", "samples")
	valid, err := Read([]string{root + "/apigateway_v1.yaml", root + "/apigateway_v1alpha1.yaml", root + "/apigateway_httproute.yaml"}, nil)
	require.NoError(t, err)
	r := c.Validate(t.Context(), valid, Options{Defaults: testDefaults})
	require.True(t, r.Valid(), "%+v", r.Objects)
	invalid, err := filepath.Glob(filepath.Join(root, "invalid", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, invalid)
	for _, f := range invalid {
		t.Run(filepath.Base(f), func(t *testing.T) {
			docs, err := Read([]string{f}, nil)
			require.NoError(t, err)
			r := c.Validate(t.Context(), append(append([]Document{}, valid...), docs...), Options{Defaults: testDefaults})
			o := r.Objects[len(r.Objects)-1]
			require.False(t, o.Valid)
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, line := range strings.Split(string(data), "\n") {
				if want, ok := strings.CutPrefix(line, "# error: "); ok {
					got := make([]string, len(o.Errors))
					for i, e := range o.Errors {
						got[i] = e.Field + ": " + e.Message
					}
					assert.Contains(t, strings.Join(got, "\n"), strings.TrimSpace(want))
				}
			}
		})
	}
}
