package defaults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
)

// object is a v1 APIGateway of spec, as JSON decodes it.
func object(t testing.TB, spec string) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{"apiVersion": "example.com/v1", "kind": "APIGateway",
		"metadata": {"name": "gw", "namespace": "ns"}, "spec": `+spec+`}`), &obj))
	return obj
}

func TestPatch(t *testing.T) {
	params := defaults.Params{Image: "flag/nginx:1", Replicas: ptr.To[int32](2)}
	tests := map[string]struct {
		spec   string
		params *defaults.Params
		want   []string // op path value
		audit  []string
	}{
		"complete":                   {spec: `{"image": "x:1", "replicas": 1, "routes": [{"host": "a.example.com", "path": "/", "pathType": "Prefix"}]}`},
		"no spec":                    {spec: `null`},
		"empty spec":                 {spec: `{}`, want: []string{"add /spec/image flag/nginx:1", "add /spec/replicas 2"}, audit: []string{"image", "replicas"}},
		"image empty":                {spec: `{"image": "", "replicas": 1}`, want: []string{"add /spec/image flag/nginx:1"}, audit: []string{"image"}},
		"image null":                 {spec: `{"image": null, "replicas": 1}`, want: []string{"add /spec/image flag/nginx:1"}},
		"replicas 0":                 {spec: `{"image": "x", "replicas": 0}`},
		"replicas \"\" is not unset": {spec: `{"image": "x", "replicas": ""}`},
		"the namespace's image": {
			spec:   `{"replicas": 1}`,
			params: &defaults.Params{Image: "flag", NamespaceAnnotations: map[string]string{v1.DefaultImageAnnotation: "  team/nginx:2 "}},
			want:   []string{"add /spec/image team/nginx:2"},
		},
		"no parameters": {spec: `{}`, params: &defaults.Params{}},
		"routes": {
			spec: `{"image": "x", "replicas": 1, "routes": [{"host": "API.Example.com."}, null, {"host": "b.example.com", "path": "", "pathType": "Exact"}, {"host": "c.com.."}]}`,
			want: []string{
				"add /spec/routes/0/path /", "add /spec/routes/2/path /", "add /spec/routes/3/path /",
				"add /spec/routes/0/pathType Prefix", "add /spec/routes/3/pathType Prefix",
				"replace /spec/routes/0/host api.example.com",
			},
			audit: []string{"path", "pathType", "host"},
		},
		"TLS hosts": {
			spec:  `{"image": "x", "replicas": 1, "routes": [], "tls": [{"hosts": ["A.example.com", "b.example.com.", null]}, null, {"hosts": null}, {}, {"hosts": ["C.COM"]}]}`,
			want:  []string{"replace /spec/tls/0/hosts/0 a.example.com", "replace /spec/tls/0/hosts/1 b.example.com", "replace /spec/tls/4/hosts/0 c.com"},
			audit: []string{"tlsHost"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := params
			if tc.params != nil {
				p = *tc.params
			}
			ops := defaults.Patch(object(t, tc.spec), p)
			var got []string
			for _, op := range ops {
				got = append(got, fmt.Sprintf("%s %s %v", op.Op, op.Path, op.Value))
			}
			assert.Equal(t, tc.want, got)
			if tc.audit != nil {
				assert.Equal(t, tc.audit, defaults.AuditNames(ops))
			}
		})
	}
}

// TestPolicyMatchesPatch evaluates the generated MutatingAdmissionPolicy
// (manifests/policy/defaults.yaml) with the API server's CEL libraries and
// requires, for thousands of generated gateways, with and without
// parameters and a namespace image, exactly the object Patch makes; and
// the generated matchCondition to call the webhook exactly when Patch,
// with every parameter set, changes something.
func TestPolicyMatchesPatch(t *testing.T) {
	mp, err := admit.CompiledDefaults()
	require.NoError(t, err)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	full := defaults.Params{Image: "flag/nginx:1", Replicas: ptr.To[int32](3)}
	paramsets := []defaults.Params{
		full,
		{},
		{Image: "flag/nginx:1"},
		{Replicas: ptr.To[int32](0)},
		{Image: "flag", Replicas: ptr.To[int32](1), NamespaceAnnotations: map[string]string{v1.DefaultImageAnnotation: " team:2 "}},
		{NamespaceAnnotations: map[string]string{v1.DefaultImageAnnotation: "   "}},
	}
	called, skipped := 0, 0
	for i := range 3000 {
		spec := randomSpec(rng)
		p := paramsets[i%len(paramsets)]
		obj := object(t, spec)

		ops := defaults.Patch(obj, p)
		want := applied(t, obj, ops)
		got, err := mp.Apply(ctx, &unstructured.Unstructured{Object: object(t, spec)}, paramData(p), p.NamespaceAnnotations)
		require.NoError(t, err, "spec %s", spec)
		require.Equal(t, want, roundTrip(t, got.Object), "spec %s, params %+v: the policy (actual) and Patch (expected) differ", spec, p)

		calls, err := admit.CallsMutatingWebhook(ctx, &unstructured.Unstructured{Object: object(t, spec)})
		require.NoError(t, err, "spec %s", spec)
		needs := len(defaults.Patch(object(t, spec), full)) > 0
		require.Equal(t, needs, calls, "spec %s: the webhook's matchCondition (actual) and Patch with every parameter (expected) differ", spec)
		if calls {
			called++
		} else {
			skipped++
		}
	}
	t.Logf("3000 generated gateways: the webhook is called for %d, skipped for %d", called, skipped)
	assert.Greater(t, called, 300)
	assert.Greater(t, skipped, 300)
}

// roundTrip is obj as JSON decodes its encoding (numbers as float64).
func roundTrip(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	doc, err := json.Marshal(obj)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(doc, &out))
	return out
}

// paramData is p as the policy's parameter ConfigMap holds it.
func paramData(p defaults.Params) map[string]string {
	data := map[string]string{}
	if p.Image != "" {
		data[defaults.ParamImage] = p.Image
	}
	if p.Replicas != nil {
		data[defaults.ParamReplicas] = strconv.Itoa(int(*p.Replicas))
	}
	return data
}

// applied is obj with ops applied, as JSON decodes it.
func applied(t *testing.T, obj map[string]any, ops []defaults.Op) map[string]any {
	t.Helper()
	doc, err := json.Marshal(obj)
	require.NoError(t, err)
	if len(ops) > 0 {
		raw, err := json.Marshal(ops)
		require.NoError(t, err)
		patch, err := jsonpatchv5.DecodePatch(raw)
		require.NoError(t, err)
		doc, err = patch.Apply(doc)
		require.NoError(t, err)
	}
	var out map[string]any
	require.NoError(t, json.Unmarshal(doc, &out))
	return out
}

// randomSpec is a spec in which every field of the Table is missing,
// null, empty or set (spelt canonically or not) at random, in every list
// the Table walks, with null elements and lists among them: as the API
// server would hand the policy JSON after the schema's decoding (types as
// the schema says, except nulls, which it keeps where it allows them). It
// reads the Table, so a new row is exercised with no change here.
func randomSpec(rng *rand.Rand) string {
	if rng.IntN(20) == 0 {
		return "null"
	}
	spec := map[string]any{}
	for i := range defaults.Table {
		d := &defaults.Table[i]
		if len(d.Lists) == 0 {
			setRandom(rng, spec, d.Field, d)
			continue
		}
		fillList(rng, spec, d.Lists, d)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// fillList gives the list lists[0] of m (made if missing, at random) and
// the lists below it elements that hold d's field at random.
func fillList(rng *rand.Rand, m map[string]any, lists []string, d *defaults.Default) {
	items, exists := m[lists[0]].([]any)
	if !exists {
		if _, set := m[lists[0]]; set || rng.IntN(8) == 0 {
			m[lists[0]] = nil // null, once and for all rows
			return
		}
		for range rng.IntN(4) {
			if rng.IntN(10) == 0 {
				items = append(items, nil)
				continue
			}
			items = append(items, map[string]any{})
		}
		m[lists[0]] = items
	}
	for j, item := range items {
		if len(lists) > 1 {
			if e, ok := item.(map[string]any); ok {
				fillList(rng, e, lists[1:], d)
			}
			continue
		}
		if d.Field == "" {
			items[j] = randomValue(rng, d)
			continue
		}
		if e, ok := item.(map[string]any); ok {
			setRandom(rng, e, d.Field, d)
		}
	}
}

// setRandom leaves m's field out, or sets it to a random value of d's.
func setRandom(rng *rand.Rand, m map[string]any, field string, d *defaults.Default) {
	if rng.IntN(4) == 0 {
		return
	}
	m[field] = randomValue(rng, d)
}

// randomValue is null, or a value of d's kind: empty, set, or for a
// Canonical one spelt every which way.
func randomValue(rng *rand.Rand, d *defaults.Default) any {
	if rng.IntN(6) == 0 {
		return nil
	}
	if d.Canonical != nil {
		hosts := []string{"api.example.com", "API.Example.com", "api.example.com.", "a.com..", "*.Example.COM.", "ö.example.com", "", ".", "X"}
		return hosts[rng.IntN(len(hosts))]
	}
	if !d.Fill.IsString() {
		return []int64{0, 1, 2, 7}[rng.IntN(4)]
	}
	values := []string{"", "set", "/users/", "Exact"}
	if s, ok := d.Fill.Literal.(string); ok {
		values = append(values, s)
	}
	return values[rng.IntN(len(values))]
}

// TestDefaultedObjectIsValid: a gateway written with only what the user
// must give passes validation once defaulted with the operator's own
// defaults, and defaulting it again changes nothing.
func TestDefaultedObjectIsValid(t *testing.T) {
	obj := object(t, `{"routes": [{"host": "API.example.com.", "backendService": {"name": "svc", "port": 80}}],
		"tls": [{"hosts": ["api.EXAMPLE.com"], "secretName": "tls"}]}`)
	op := defaults.Operator{Image: defaults.DefaultImage, Replicas: defaults.DefaultReplicas}
	defaulted := applied(t, obj, defaults.Patch(obj, op.Params(nil)))
	assert.Empty(t, defaults.Patch(defaulted, op.Params(nil)), "defaulting is idempotent")

	gw := &v1.APIGateway{}
	raw, err := json.Marshal(defaulted)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, gw))
	gw.Name, gw.Namespace = "minimal", "default"
	require.Empty(t, validation.Validate(nil, gw))
	assert.Equal(t, v1.Route{Host: "api.example.com", Path: "/", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "svc", Port: 80}}, gw.Spec.Routes[0])
	assert.Equal(t, []string{"api.example.com"}, gw.Spec.TLS[0].Hosts)
	assert.Equal(t, ptr.To(defaults.DefaultReplicas), gw.Spec.Replicas)
}

// TestApplyIsJSONPatch: Apply does what a JSON patch library does with the
// same operations.
func TestApplyIsJSONPatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := defaults.Params{Image: "i:1", Replicas: ptr.To[int32](2)}
	for range 500 {
		spec := randomSpec(rng)
		obj := object(t, spec)
		want := applied(t, obj, defaults.Patch(obj, p))
		got := object(t, spec)
		defaults.Apply(got, defaults.Patch(got, p))
		require.Equal(t, want, roundTrip(t, got), "spec %s", spec)
	}
}
