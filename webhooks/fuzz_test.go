package webhooks

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
)

// What an admitted object's hosts and paths must look like, written
// independently of the validation code: the CRD schema's rules.
var (
	safePath = regexp.MustCompile(`^/[-A-Za-z0-9._~!&()*+,=:@%/]*$`)
	safeHost = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// FuzzAdmission feeds arbitrary objects through the decoding, defaulting
// and validation path of both webhooks. Neither may panic, each answers
// with a decision, defaulting is idempotent, and whatever validation admits
// has only safe hosts and paths. Run it with
//
//	go test ./webhooks -run '^$' -fuzz FuzzAdmission -fuzztime 30s
func FuzzAdmission(f *testing.F) {
	good, err := json.Marshal(validGateway())
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(good),
		`{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"a"},"spec":{"routes":[{"host":"API.Example.com.","backendService":{"name":"s","port":80}}]}}`,
		`{"apiVersion":"example.com/v1","kind":"APIGateway","spec":{"routes":[{"host":"a.com","path":"/a;}\n server {","backendService":{"name":"s","port":80}}]}}`,
		`{"apiVersion":"example.com/v1","kind":"APIGateway","spec":{"routes":[{"host":"*.a.com","path":"/%00/../","pathType":"Exact","backendService":{"name":"s","port":0}}],"tls":[{"hosts":["A.com."],"secretName":"x"}]}}`,
		`{"apiVersion":"example.com/v1","kind":"APIGateway","spec":{"replicas":-5,"image":"nginx:latest","routes":[]}}`,
		`{"apiVersion":"v1","kind":"Pod"}`,
		`{}`, `null`, `[]`, `{"spec":7}`, "\x00\xff",
	} {
		f.Add([]byte(seed))
	}

	hooks := newFuzzHooks(f)
	f.Fuzz(hooks.check)
}

// fuzzHooks are both webhooks as controller-runtime serves them, without
// their panic recovery so that a panic fails the fuzzer.
type fuzzHooks struct{ defaulter, validator *admission.Webhook }

func newFuzzHooks(tb testing.TB) fuzzHooks {
	reader := fakeReader(tb, nil, defaultNamespace(nil))
	return fuzzHooks{defaulter: mutatingWebhook(reader), validator: validatingWebhook(testFinder(tb))}
}

func (h fuzzHooks) check(t *testing.T, raw []byte) {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u", Operation: admissionv1.Create, Namespace: "default", Name: "gw",
		Object: runtime.RawExtension{Raw: raw},
	}}
	mutated := h.defaulter.Handle(t.Context(), req)
	if !mutated.Allowed && (mutated.Result == nil || mutated.Result.Message == "") {
		t.Fatalf("mutating webhook denied without a reason: %+v", mutated)
	}
	if mutated.Allowed {
		assertPatchDefaults(t, raw, mutated.Patches)
	}
	validated := h.validator.Handle(t.Context(), req)
	if !validated.Allowed && (validated.Result == nil || validated.Result.Message == "") {
		t.Fatalf("validating webhook denied without a reason: %+v", validated)
	}

	if !mutated.Allowed {
		return
	}
	var gw v1.APIGateway
	if json.Unmarshal(applied(t, raw, mutated.Patches), &gw) != nil {
		return
	}
	if errs, _ := admit.Validate(nil, &gw, admit.RelatedObjects{}); len(errs) == 0 {
		assertSafe(t, &gw)
	}
}

func assertSafe(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	for _, r := range gw.Spec.Routes {
		if !safeHost.MatchString(string(r.Host)) || len(r.Host) > 253 {
			t.Fatalf("admitted unsafe host %q", r.Host)
		}
		p := r.Path
		if !safePath.MatchString(string(p)) || strings.Contains(string(p), "//") || strings.Contains(string(p), "/../") ||
			strings.Contains(string(p), "/./") || strings.HasSuffix(string(p), "/..") || strings.HasSuffix(string(p), "/.") {
			t.Fatalf("admitted unsafe path %q", p)
		}
	}
}

// assertPatchDefaults checks that ops, applied to raw as the API server
// applies them, give an object the table has nothing left to do in
// (defaults.Patch): the patch addresses only what raw holds, and the
// defaults are idempotent.
func assertPatchDefaults(t *testing.T, raw []byte, ops []jsonpatch.Operation) {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(applied(t, raw, ops), &obj), "the patched object")
	if again := defaults.Patch(obj, testDefaults.Params(nil)); len(again) > 0 {
		t.Fatalf("the patched object still needs defaults:\nraw   %s\npatch %v\nagain %v", raw, ops, again)
	}
}

// applied is raw with ops applied as the API server applies them.
func applied(t *testing.T, raw []byte, ops []jsonpatch.Operation) []byte {
	t.Helper()
	if len(ops) == 0 {
		return raw
	}
	data, err := json.Marshal(ops)
	require.NoError(t, err)
	patch, err := jsonpatchv5.DecodePatch(data)
	require.NoError(t, err)
	patched, err := patch.Apply(raw)
	require.NoError(t, err, "patch %s does not apply to %s", data, raw)
	return patched
}

// The patch applies, and leaves nothing to default, for random gateways
// and for JSON shapes a typed decoder would make something else of (no
// spec, null routes and hosts).
func TestDefaultingPatchApplies(t *testing.T) {
	hooks := newFuzzHooks(t)
	raws := []string{
		`{}`, `{"spec":null}`, `{"spec":{}}`, `{"spec":{"routes":null}}`, `{"spec":{"routes":[null]}}`,
		`{"spec":{"routes":[{"host":"A.com"},null,{}]}}`, `{"spec":{"image":"","replicas":null,"routes":[{"host":"a.com","path":null}]}}`,
		`{"spec":{"tls":[null,{"hosts":[null,"B.com."]}],"routes":[{"host":"b.com."}]}}`,
		`{"metadata":{"name":"x"},"spec":{"image":"i:1","replicas":2,"routes":[{"host":"a.com","path":"/","pathType":"Exact"}]}}`,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		data, err := json.Marshal(randomGateway(rng))
		require.NoError(t, err)
		raws = append(raws, string(data))
	}
	for _, raw := range raws {
		resp := hooks.defaulter.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "u", Operation: admissionv1.Create, Namespace: "default", Name: "gw", Object: runtime.RawExtension{Raw: []byte(raw)},
		}})
		require.True(t, resp.Allowed, "%s: %+v", raw, resp.Result)
		assertPatchDefaults(t, []byte(raw), resp.Patches)
	}
}

// randomGateway leaves out or mis-cases what Default fills in or fixes.
func randomGateway(rng *rand.Rand) *v1.APIGateway {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	gw := &v1.APIGateway{}
	gw.Spec.Image = v1.Image(pick("", "nginx:1.27"))
	if rng.IntN(2) == 0 {
		gw.Spec.Replicas = ptr.To(int32(rng.IntN(4)))
	}
	hosts := []string{"a.com", "A.com", "a.com.", "B.Example.COM.", "*.x.io"}
	for range rng.IntN(5) {
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{
			Host: v1.Hostname(pick(hosts...)), Path: v1.HTTPPath(pick("", "/", "/x/")), PathType: v1.PathType(pick("", "Prefix", "Exact")),
			BackendService: v1.BackendService{Name: "s", Port: 80},
		})
	}
	for range rng.IntN(3) {
		tls := v1.GatewayTLS{SecretName: "s"}
		for range rng.IntN(3) {
			tls.Hosts = append(tls.Hosts, pick(hosts...))
		}
		gw.Spec.TLS = append(gw.Spec.TLS, tls)
	}
	return gw
}
