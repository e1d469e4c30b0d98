package webhooks

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/internal/testenv"
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
	scheme := testenv.NewScheme()
	reader := fakeReader(tb, nil, defaultNamespace(nil))
	return fuzzHooks{
		defaulter: admission.WithDefaulter[*v1.APIGateway](scheme, &Defaulter{Namespaces: reader, Defaults: testDefaults}).WithRecoverPanic(false),
		validator: admission.WithValidator[*v1.APIGateway](scheme, &Validator{Gateways: reader}).WithRecoverPanic(false),
	}
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
	validated := h.validator.Handle(t.Context(), req)
	if !validated.Allowed && (validated.Result == nil || validated.Result.Message == "") {
		t.Fatalf("validating webhook denied without a reason: %+v", validated)
	}

	var gw v1.APIGateway
	if json.Unmarshal(raw, &gw) != nil {
		return
	}
	Default(&gw, testDefaults)
	again := gw.DeepCopy()
	Default(again, testDefaults)
	if !equalJSON(t, &gw, again) {
		t.Fatalf("Default is not idempotent:\n%+v\n%+v", gw.Spec, again.Spec)
	}
	if errs, _ := Validate(nil, &gw, Context{}); len(errs) == 0 {
		assertSafe(t, &gw)
	}
}

func assertSafe(t *testing.T, gw *v1.APIGateway) {
	t.Helper()
	for _, r := range gw.Spec.Routes {
		if !safeHost.MatchString(r.Host) || len(r.Host) > 253 {
			t.Fatalf("admitted unsafe host %q", r.Host)
		}
		p := r.Path
		if !safePath.MatchString(p) || strings.Contains(p, "//") || strings.Contains(p, "/../") ||
			strings.Contains(p, "/./") || strings.HasSuffix(p, "/..") || strings.HasSuffix(p, "/.") {
			t.Fatalf("admitted unsafe path %q", p)
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
