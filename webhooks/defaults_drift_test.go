package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	jsonpatchv5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
)

// api/v1/defaults.Table is the only definition of the defaults; the
// mutating webhook's matchConditions (the API server skips the webhook for
// an object they say needs nothing) and its JSON patch are derived from it
// (defaults.NeedsDefaults, defaults.Patch), and api/v1/defaults'
// TestPolicyMatchesPatch holds the generated CEL to Patch in process for
// thousands of gateways. These tests are the one check through the real API
// server, with the generated webhook configuration, on the edge cases and a
// sample of random gateways: what it stores is what the table makes.

// The operator's and a namespace's defaults in this test: none of them is
// a value the generated gateways set themselves.
const (
	driftImage          = "registry.example/drift-gateway:1.0"
	driftNamespaceImage = "registry.example/namespace-gateway:2.0"
	driftReplicas       = 3
)

// TestDefaultsNoDriftThroughAPIServer writes generated gateways through the
// real API server, both versions, into a namespace with and one without
// the default-image annotation, and records which of them the API server
// sent to the mutating webhook. One it did not send must need nothing
// from Default; for one it sent, the webhook's patch and the stored object
// must be what Default makes of the object sent.
func TestDefaultsNoDriftThroughAPIServer(t *testing.T) {
	rec := &admissionRecorder{calls: map[string][]admissionCall{}}
	startRecordedWebhooks(t, rec, Options{DefaultImage: driftImage, DefaultReplicas: driftReplicas})
	namespaces := map[bool]*corev1.Namespace{
		false: driftNamespace(t, nil),
		true:  driftNamespace(t, map[string]string{v1.DefaultImageAnnotation: driftNamespaceImage}),
	}

	shapes := driftShapes()
	// sent and skipped count by version (v1alpha1 or not).
	var sent, skipped [2]int
	for _, s := range shapes {
		ns := namespaces[s.annotated]
		params := defaults.Operator{Image: driftImage, Replicas: driftReplicas}.Params(ns.Annotations)
		obj := s.object(ns.Name)
		written := asJSON(obj.Object)
		createErr := s.write(t.Context(), obj)
		calls := rec.callsFor(ns.Name, s.name)
		switch len(calls) {
		case 0:
			skipped[b2i(s.alpha)]++
			checkSkipped(t, s, obj, written, createErr, params)
		case 1:
			sent[b2i(s.alpha)]++
			checkSent(t, s, obj, calls[0], createErr, params)
		default:
			t.Errorf("%s: the API server called the mutating webhook %d times for one create", s, len(calls))
		}
	}
	t.Logf("%d gateways sent to the mutating webhook and %d not through v1, %d and %d through v1alpha1",
		sent[0], skipped[0], sent[1], skipped[1])
	// Both branches must be taken often, through both versions, or the
	// test proves little.
	for alpha, version := range []string{"v1", "v1alpha1"} {
		assert.Greater(t, sent[alpha], 10, "gateways written through %s and sent to the mutating webhook", version)
		assert.Greater(t, skipped[alpha], 10, "gateways written through %s and not sent to the mutating webhook", version)
	}
}

// checkSkipped holds a gateway the API server did not send to the mutating
// webhook: it must have been stored, and the table must change nothing in it.
// Every generated gateway is valid once defaulted, so a refusal means it
// was stored without a default it needed (the validating webhook and the
// schema refuse such an object).
func checkSkipped(t *testing.T, s shape, obj *unstructured.Unstructured, written string, createErr error, params defaults.Params) {
	t.Helper()
	if createErr != nil {
		t.Errorf("%s: not sent to the mutating webhook (matchConditions said it needs nothing), then refused: %v\nwritten: %s",
			s, createErr, written)
		return
	}
	stored := storedGateway(t, obj)
	want := tableDefaulted(t, stored, params)
	if !apiequality.Semantic.DeepEqual(stored.Spec, want.Spec) {
		t.Errorf("%s: not sent to the mutating webhook (matchConditions said it needs nothing), but the table changes the stored object (-stored +defaulted):\n%s\nwritten: %s",
			s, cmp.Diff(stored.Spec, want.Spec), written)
	}
}

// checkSent holds a gateway the API server sent to the mutating webhook:
// the webhook's patch applied to what it received, and the object the API
// server stored, must both equal what the table makes of what it received.
func checkSent(t *testing.T, s shape, obj *unstructured.Unstructured, call admissionCall, createErr error, params defaults.Params) {
	t.Helper()
	var received v1.APIGateway
	require.NoError(t, json.Unmarshal(call.object, &received), "%s: the object the webhook received", s)
	want := tableDefaulted(t, &received, params)

	patched, err := call.patched()
	switch {
	case err != nil:
		t.Errorf("%s: the mutating webhook's answer: %v\nreceived: %s", s, err, call.object)
	case !apiequality.Semantic.DeepEqual(patched.Spec, want.Spec):
		t.Errorf("%s: the mutating webhook's patch differs from Default (-patched +Default):\n%s\nreceived: %s\npatch: %s",
			s, cmp.Diff(patched.Spec, want.Spec), call.object, call.patch)
	}
	if createErr != nil {
		t.Errorf("%s: sent to the mutating webhook, then refused: %v\nreceived: %s\npatch: %s", s, createErr, call.object, call.patch)
		return
	}
	stored := storedGateway(t, obj)
	if !apiequality.Semantic.DeepEqual(stored.Spec, want.Spec) {
		t.Errorf("%s: the stored object is not Default of what the mutating webhook received (-stored +Default):\n%s\nreceived: %s\npatch: %s",
			s, cmp.Diff(stored.Spec, want.Spec), call.object, call.patch)
	}
}

// TestDefaultsNoDriftUnderVersionSkew sends the mutating webhook, as the
// API server would with a newer CRD than the operator's Go type, gateways
// with fields the type does not know at every level Default writes in.
// The patch must leave them as they are and still give Default's result.
// (The installed CRD would prune such fields, so the reviews go to the
// handler directly.)
func TestDefaultsNoDriftUnderVersionSkew(t *testing.T) {
	wh := mutatingWebhook(fakeReader(t, nil, defaultNamespace(nil)))
	for _, s := range driftShapes() {
		if s.alpha || s.apply {
			continue // the API server sends v1 only; an apply is the same JSON
		}
		doc := s.object("default").Object
		future := withFutureFields(doc)
		raw, err := json.Marshal(doc)
		require.NoError(t, err)
		resp := wh.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "u", Operation: admissionv1.Create, Namespace: "default", Name: s.name, Object: runtime.RawExtension{Raw: raw},
		}})
		require.True(t, resp.Allowed, "%s: %+v", s.name, resp.Result)
		patch, err := json.Marshal(resp.Patches)
		require.NoError(t, err)
		patched := raw
		if len(resp.Patches) > 0 {
			patched = applyPatch(t, string(raw), resp.Patches)
		}

		var after map[string]any
		require.NoError(t, json.Unmarshal(patched, &after))
		for path, value := range future {
			got, ok := lookup(after, path)
			assert.True(t, ok && asJSON(value) == asJSON(got),
				"%s: the patch lost or changed %s (%v, now %v)\nsent: %s\npatch: %s", s.name, path, value, got, raw, patch)
		}
		var received, got v1.APIGateway
		require.NoError(t, json.Unmarshal(raw, &received))
		require.NoError(t, json.Unmarshal(patched, &got))
		want := tableDefaulted(t, &received, testDefaults.Params(nil))
		assert.True(t, apiequality.Semantic.DeepEqual(want.Spec, got.Spec),
			"%s: the patch differs from Default (-Default +patched):\n%s", s.name, cmp.Diff(want.Spec, got.Spec))
	}
}

// withFutureFields adds to doc a field the Go type does not know beside
// each field Default writes, and returns their paths and values.
func withFutureFields(doc map[string]any) map[string]any {
	future := map[string]any{}
	add := func(m map[string]any, path string, value any) {
		m["futureField"] = value
		future[path+"/futureField"] = value
	}
	add(doc, "", map[string]any{"kept": true})
	spec := doc["spec"].(map[string]any)
	add(spec, "/spec", []any{"a", int64(1)})
	for i, r := range spec["routes"].([]any) {
		route := r.(map[string]any)
		add(route, fmt.Sprintf("/spec/routes/%d", i), fmt.Sprintf("route %d", i))
		add(route["backendService"].(map[string]any), fmt.Sprintf("/spec/routes/%d/backendService", i), int64(i))
	}
	if tls, ok := spec["tls"].([]any); ok {
		for i, entry := range tls {
			add(entry.(map[string]any), fmt.Sprintf("/spec/tls/%d", i), nil)
		}
	}
	return future
}

// lookup finds the member at a JSON pointer of objects and arrays.
func lookup(doc any, pointer string) (any, bool) {
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		switch node := doc.(type) {
		case map[string]any:
			v, ok := node[token]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			var i int
			if _, err := fmt.Sscan(token, &i); err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			doc = node[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// shape is a gateway as a client writes it. Optional members are any: a
// nil member is left out, null is sent as JSON null and "" as the empty
// string, for the API server and the matchConditions tell them apart.
type shape struct {
	name      string
	alpha     bool // written through v1alpha1
	apply     bool // applied server-side rather than created
	annotated bool // in the namespace with the default-image annotation
	image     any
	replicas  any
	class     any
	routes    []routeShape
	tls       [][]string
}

type routeShape struct {
	host           string
	path, pathType any
	port           int64
}

type jsonNull struct{}

// null is a member the client sends as JSON null.
var null any = jsonNull{}

func put(m map[string]any, key string, value any) {
	switch value {
	case nil:
	case null:
		m[key] = nil
	default:
		m[key] = value
	}
}

func (s shape) String() string {
	version, how := "v1", "created"
	if s.alpha {
		version = "v1alpha1"
	}
	if s.apply {
		how = "applied server-side"
	}
	return fmt.Sprintf("%s (%s, %s, annotated namespace %t)", s.name, version, how, s.annotated)
}

// write creates obj, or applies it server-side: the API server builds the
// object it admits differently for each (an apply keeps a member sent as
// null).
func (s shape) write(ctx context.Context, obj *unstructured.Unstructured) error {
	if s.apply {
		return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("drift-test"), client.ForceOwnership)
	}
	return env.Client.Create(ctx, obj)
}

// object is s as its version's client sends it. v1alpha1 has no pathType,
// TLS or ingress class; its prefix is v1's path.
func (s shape) object(namespace string) *unstructured.Unstructured {
	spec := map[string]any{}
	put(spec, "image", s.image)
	put(spec, "replicas", s.replicas)
	routes := make([]any, 0, len(s.routes))
	for _, r := range s.routes {
		route := map[string]any{"host": r.host}
		if s.alpha {
			route["serviceName"], route["servicePort"] = "svc", r.port
			put(route, "prefix", r.path)
		} else {
			route["backendService"] = map[string]any{"name": "svc", "port": r.port}
			put(route, "path", r.path)
			put(route, "pathType", r.pathType)
		}
		routes = append(routes, route)
	}
	spec["routes"] = routes
	apiVersion := "example.com/v1alpha1"
	if !s.alpha {
		apiVersion = v1.GroupVersion.String()
		put(spec, "ingressClassName", s.class)
		for i, hosts := range s.tls {
			tls, _ := spec["tls"].([]any)
			entry := map[string]any{"hosts": toAny(hosts), "secretName": fmt.Sprintf("tls-%d", i)}
			spec["tls"] = append(tls, entry)
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": apiGatewayKind,
		"metadata": map[string]any{"name": s.name, "namespace": namespace},
		"spec":     spec,
	}}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// driftHost is route j's host in gateway name: its own, so that no two
// routes of any gateway in the cluster conflict whatever their paths.
func driftHost(name string, j int) string {
	return fmt.Sprintf("r%d.%s.drift.example.com", j, name)
}

// driftShapes are the edge cases and 40 random gateways, the same on
// every run (TestPolicyMatchesPatch evaluates thousands in process).
func driftShapes() []shape {
	shapes := edgeShapes()
	rng := rand.New(rand.NewPCG(14, 2))
	for i := range 40 {
		shapes = append(shapes, randomShape(rng, fmt.Sprintf("rand-%d", i)))
	}
	return shapes
}

// edgeShapes are every combination of image, replicas, a route's path and
// pathType, namespace, version and way of writing, plus hosts Default
// normalizes and values it must leave alone.
func edgeShapes() []shape {
	var shapes []shape
	members := func(present string) []any { return []any{nil, "", present} }
	for _, w := range writers() {
		pathTypes := members("Exact")
		if w.alpha {
			pathTypes = []any{nil}
		}
		for _, annotated := range []bool{false, true} {
			for _, image := range members("nginx:1.27") {
				for _, replicas := range []any{nil, int64(0), int64(5)} {
					for _, path := range members("/e/") {
						for _, pathType := range pathTypes {
							name := fmt.Sprintf("edge-%d", len(shapes))
							shapes = append(shapes, shape{
								name: name, alpha: w.alpha, apply: w.apply, annotated: annotated, image: image, replicas: replicas,
								routes: []routeShape{{host: driftHost(name, 0), path: path, pathType: pathType, port: 80}},
							})
						}
					}
				}
			}
		}
	}
	// complete adds a gateway that needs nothing from Default, changed
	// by change.
	complete := func(w writer, change func(s *shape)) {
		name := fmt.Sprintf("edge-%d", len(shapes))
		s := shape{name: name, alpha: w.alpha, apply: w.apply, image: "nginx:1.27", replicas: int64(2), routes: []routeShape{
			{host: driftHost(name, 0), path: "/", pathType: "Prefix", port: 80},
			{host: driftHost(name, 1), path: "/Upper/Case", pathType: "Exact", port: 8080},
		}}
		change(&s)
		shapes = append(shapes, s)
	}
	for _, w := range writers() {
		complete(w, func(*shape) {})
		complete(w, func(s *shape) { s.routes[0].host = strings.ToUpper(s.routes[0].host) })
		complete(w, func(s *shape) { s.routes[1].host += "." })
		complete(w, func(s *shape) { s.routes[1].host = "*.W" + s.routes[1].host })
		complete(w, func(s *shape) { s.routes[0].host = "*." + s.routes[0].host })
		complete(w, func(s *shape) { s.image, s.replicas = null, null })
		complete(w, func(s *shape) { s.routes[0].path = null })
		if !w.alpha {
			complete(w, func(s *shape) { s.tls = [][]string{{s.routes[0].host, s.routes[1].host}} })
			complete(w, func(s *shape) { s.tls = [][]string{{s.routes[0].host}, {strings.ToUpper(s.routes[1].host)}} })
			complete(w, func(s *shape) { s.tls = [][]string{{s.routes[0].host + "."}} })
			complete(w, func(s *shape) { s.class = "internal"; s.routes[1].pathType = null })
		}
	}
	return shapes
}

// writer is a version and a way to write a gateway.
type writer struct{ alpha, apply bool }

func writers() []writer {
	return []writer{{false, false}, {false, true}, {true, false}, {true, true}}
}

// randomShape is a complete gateway for a third of the time, and otherwise
// one with one to three gaps Default fills in or hosts it normalizes.
func randomShape(rng *rand.Rand, name string) shape {
	pick := func(vs ...any) any { return vs[rng.IntN(len(vs))] }
	s := shape{
		name: name, alpha: rng.IntN(3) == 0, apply: rng.IntN(2) == 0, annotated: rng.IntN(2) == 0,
		image: pick("nginx:1.27", "registry.example/team/gw@sha256:"+strings.Repeat("ab", 32)), replicas: int64(rng.IntN(101)),
		class: pick(nil, nil, "internal"),
	}
	for j := range 1 + rng.IntN(4) {
		host := driftHost(name, j)
		if rng.IntN(4) == 0 {
			host = "*." + host
		}
		s.routes = append(s.routes, routeShape{
			host: host, path: pick("/", "/api/", "/Mixed/Case", "/v1/x~y"), pathType: pick("Prefix", "Exact"),
			port: 1 + rng.Int64N(65535),
		})
	}
	if !s.alpha && rng.IntN(2) == 0 {
		s.tls = make([][]string, 1+rng.IntN(2))
		for _, r := range s.routes {
			if rng.IntN(3) > 0 {
				k := rng.IntN(len(s.tls))
				s.tls[k] = append(s.tls[k], r.host)
			}
		}
		s.tls = deleteEmpty(s.tls)
	}
	if rng.IntN(3) == 0 {
		return s
	}
	gaps := []func(){
		func() { s.image = pick(nil, null, "") },
		func() { s.replicas = pick(nil, null) },
		func() { r := &s.routes[rng.IntN(len(s.routes))]; r.path = pick(nil, null, "") },
		func() { r := &s.routes[rng.IntN(len(s.routes))]; r.pathType = pick(nil, null, "") },
		func() { r := &s.routes[rng.IntN(len(s.routes))]; r.host = unnormalized(rng, r.host) },
		func() {
			if len(s.tls) > 0 {
				hosts := s.tls[rng.IntN(len(s.tls))]
				i := rng.IntN(len(hosts))
				hosts[i] = unnormalized(rng, hosts[i])
			}
		},
	}
	for range 1 + rng.IntN(3) {
		gaps[rng.IntN(len(gaps))]()
	}
	return s
}

// unnormalized is a spelling of host that NormalizeHost turns back into it:
// some letters upper-cased, a trailing dot, or both.
func unnormalized(rng *rand.Rand, host string) string {
	b := []byte(host)
	for i, c := range b {
		if 'a' <= c && c <= 'z' && rng.IntN(3) == 0 {
			b[i] = c - ('a' - 'A')
		}
	}
	if rng.IntN(2) == 0 && !strings.HasSuffix(host, ".") {
		b = append(b, '.')
	}
	return string(b)
}

func deleteEmpty(lists [][]string) [][]string {
	out := lists[:0]
	for _, l := range lists {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func asJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(data)
}

// driftNamespace creates a namespace of its own with annotations, and
// deletes the gateways the test wrote there when it ends (envtest never
// finishes deleting a namespace, and the hosts are reused under -count).
func driftNamespace(t *testing.T, annotations map[string]string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "drift-", Annotations: annotations}}
	require.NoError(t, env.Client.Create(t.Context(), ns))
	t.Cleanup(func() {
		assert.NoError(t, env.Client.DeleteAllOf(context.Background(), &v1.APIGateway{}, client.InNamespace(ns.Name)))
	})
	return ns
}

// storedGateway reads obj's namespace and name back as v1, from the API
// server.
func storedGateway(t *testing.T, obj *unstructured.Unstructured) *v1.APIGateway {
	t.Helper()
	gw := &v1.APIGateway{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), gw))
	return gw
}

// startRecordedWebhooks runs the webhooks as startWebhooks does, with rec
// recording every request to the mutating webhook and its answer.
func startRecordedWebhooks(t *testing.T, rec *admissionRecorder, opts Options) {
	t.Helper()
	require.NotNil(t, env, "no control plane")
	mgrOpts := env.ManagerOptions()
	mgrOpts.WebhookServer = recordingServer{Server: mgrOpts.WebhookServer, path: MutatePath, rec: rec}
	mgr, err := ctrl.NewManager(env.Config, mgrOpts)
	require.NoError(t, err)
	require.NoError(t, SetupWithManager(mgr, opts))
	env.StartManager(t, mgr)
}

// recordingServer is a webhook server that records what one path receives
// and answers, around the handler SetupWithManager registers there.
type recordingServer struct {
	webhook.Server
	path string
	rec  *admissionRecorder
}

func (s recordingServer) Register(path string, hook http.Handler) {
	if path == s.path {
		hook = s.rec.wrap(hook)
	}
	s.Server.Register(path, hook)
}

// admissionRecorder keeps each admission request's object and the answer's
// patch, by namespace/name.
type admissionRecorder struct {
	mu    sync.Mutex
	calls map[string][]admissionCall
}

// admissionCall is one admission request as the webhook received and
// answered it.
type admissionCall struct {
	object  []byte
	allowed bool
	result  *metav1.Status
	patch   []byte
}

// patched is the call's object with its patch applied.
func (c admissionCall) patched() (*v1.APIGateway, error) {
	if !c.allowed {
		return nil, fmt.Errorf("not allowed: %+v", c.result)
	}
	out := c.object
	if len(c.patch) > 0 {
		patch, err := jsonpatchv5.DecodePatch(c.patch)
		if err != nil {
			return nil, err
		}
		if out, err = patch.Apply(c.object); err != nil {
			return nil, err
		}
	}
	gw := &v1.APIGateway{}
	return gw, json.Unmarshal(out, gw)
}

func (r *admissionRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		answer := &teeWriter{ResponseWriter: w}
		next.ServeHTTP(answer, req)

		var in, out admissionv1.AdmissionReview
		if json.Unmarshal(body, &in) != nil || in.Request == nil || json.Unmarshal(answer.body.Bytes(), &out) != nil || out.Response == nil {
			return // not a review: the webhook said so to the caller
		}
		call := admissionCall{object: in.Request.Object.Raw, allowed: out.Response.Allowed, result: out.Response.Result, patch: out.Response.Patch}
		key := in.Request.Namespace + "/" + in.Request.Name
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls[key] = append(r.calls[key], call)
	})
}

func (r *admissionRecorder) callsFor(namespace, name string) []admissionCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[namespace+"/"+name]
}

// teeWriter keeps a copy of the body it writes.
type teeWriter struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

// tableDefaulted is gw as the table defaults it (defaults.Patch), the
// definition.
func tableDefaulted(t *testing.T, gw *v1.APIGateway, params defaults.Params) *v1.APIGateway {
	t.Helper()
	out, err := defaults.Defaulted(gw, params)
	require.NoError(t, err)
	return out
}
