package parity

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/offline"
)

var (
	dryRunOnce     sync.Once
	dryRunClient   client.Client
	dryRunWarnings = &warningRecorder{}
)

// dryRun creates u with DryRun=All and strict field validation, as
// `kubectl apply --dry-run=server` does, and returns the API server's
// verdict. Requests are made one at a time, so each one's warnings are its
// own.
func dryRun(t *testing.T, u *unstructured.Unstructured) verdict {
	t.Helper()
	dryRunOnce.Do(func() {
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandler = dryRunWarnings
		var err error
		dryRunClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			panic(err)
		}
	})
	dryRunWarnings.take()
	err := dryRunClient.Create(t.Context(), u.DeepCopy(), client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
	return serverVerdict(err, dryRunWarnings.take())
}

// parityCount is how many objects TestGeneratedParity generates:
// PARITY_OBJECTS, or 3000 (about 30 s on two loaded cores).
func parityCount(t *testing.T) int {
	if s := os.Getenv("PARITY_OBJECTS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "PARITY_OBJECTS")
		return n
	}
	return 3000
}

// paritySeed seeds the generator: PARITY_SEED, or a fixed seed so a run
// is repeatable.
func paritySeed(t *testing.T) uint64 {
	if s := os.Getenv("PARITY_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "PARITY_SEED")
		return n
	}
	return 15
}

const (
	parityNamespace = "parity"
	namespaceImage  = "registry.example.com/team/nginx:1.29"
)

// TestGeneratedParity generates gateways of both versions, valid and
// not, and holds the offline checker's verdict on each to the API server's
// dry run with the webhooks serving: admitted or refused, the same field
// paths, the same warnings. The cluster holds a gateway whose route some
// generated ones take, a namespace with a default image and a Service with
// one port, which the offline checker gets as --kubeconfig and the input
// would give them. Then the admitted gateways are created for real: the
// defaults they are stored with are the offline checker's, and each read
// through the other version is what offline.Convert makes of it.
func TestGeneratedParity(t *testing.T) {
	ctx := t.Context()
	mgr := startWebhooks(t)
	checker, err := offline.NewChecker()
	require.NoError(t, err)
	related := setUpCluster(t, mgr.GetClient())
	cluster, err := offline.ClusterGateways(ctx, env.Kubeconfig, "")
	require.NoError(t, err)
	opts := offline.Options{Defaults: operatorDefaults, Gateways: cluster}

	n, seed := parityCount(t), paritySeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	started := time.Now()
	counts := map[string]int{}
	var admitted []*unstructured.Unstructured
	var gateways []*v1.APIGateway
	mismatches := 0
	for i := range n {
		u := generate(rng, i)
		server := dryRun(t, u)
		report := checker.Validate(ctx, append(append([]offline.Document{}, related...), offline.Document{File: "generated", Index: i, Object: u}), opts)
		o := report.Objects[len(report.Objects)-1]
		got := offlineVerdict(o)
		counts[u.GetAPIVersion()+" "+map[bool]string{true: "admitted", false: "refused"}[server.admitted]]++
		for _, p := range o.Errors {
			counts["rule "+p.Rule]++
		}
		if !server.equal(got) {
			mismatches++
			if mismatches <= 10 {
				data, _ := yaml.Marshal(u.Object)
				t.Errorf("object %d (seed %d):\n%s\nAPI server: %s\noffline:    %s\noffline errors: %+v", i, seed, data, server, got, o.Errors)
			}
			continue
		}
		if o.Valid {
			admitted = append(admitted, u)
			gateways = append(gateways, o.Gateway)
		}
	}
	t.Logf("%d generated objects (seed %d) in %v, %d mismatches: %v", n, seed, time.Since(started).Round(time.Millisecond), mismatches, counts)
	require.Zero(t, mismatches, "the offline verdict differs from the API server's")
	assert.Positive(t, counts["example.com/v1 admitted"])
	assert.Positive(t, counts["example.com/v1alpha1 admitted"])
	assert.Positive(t, counts["example.com/v1 refused"])
	assert.Positive(t, counts["example.com/v1alpha1 refused"])

	compareStored(t, admitted, gateways)
}

// setUpCluster creates what the generated gateways meet in the cluster and
// returns the input documents that tell the offline checker the same: the
// parity namespace with its default image, and a Service with port 80.
func setUpCluster(t *testing.T, cache client.Reader) []offline.Document {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: parityNamespace, Annotations: map[string]string{v1.DefaultImageAnnotation: namespaceImage}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: parityNamespace, Name: "svc-a"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	seed := &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "holder"}, Spec: v1.APIGatewaySpec{
		Image: "nginx:1.27", Replicas: new(int32(2)),
		Routes: []v1.Route{{Host: "taken.example.com", Path: "/taken/", PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "svc-a", Port: 80}}},
	}}
	for _, obj := range []client.Object{ns, svc, seed} {
		require.NoError(t, env.Client.Create(ctx, obj))
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(context.Background(), obj))) })
	}
	// The webhooks read both from caches: wait until they see them, as
	// they would a moment later in a cluster.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if cache.Get(ctx, client.ObjectKeyFromObject(seed), &v1.APIGateway{}) != nil {
			return false, nil
		}
		probe := generated(map[string]any{"image": "nginx:1.27", "replicas": int64(2), "routes": []any{
			map[string]any{"host": "probe.example.com", "backendService": map[string]any{"name": "svc-a", "port": int64(81)}},
		}}, "v1", parityNamespace, "probe")
		return len(dryRun(t, probe).warnings) > 0, nil
	})
	require.NoError(t, err, "the webhooks never saw the seed gateway and the Service's ports")

	var docs []offline.Document
	for _, obj := range []client.Object{ns, svc} {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: content}
		u.SetAPIVersion("v1")
		u.SetKind(map[bool]string{true: "Namespace", false: "Service"}[obj == client.Object(ns)])
		docs = append(docs, offline.Document{File: "cluster", Object: u})
	}
	return docs
}

// compareStored creates the admitted gateways for real, each through its
// own version, and reads each back through both: the v1 form is what the
// offline checker defaulted (gateways), and each version's form is what
// offline.Convert makes of the other's.
func compareStored(t *testing.T, admitted []*unstructured.Unstructured, gateways []*v1.APIGateway) {
	t.Helper()
	ctx := t.Context()
	created, conflicts := 0, 0
	for i, u := range admitted {
		obj := u.DeepCopy()
		// Nothing would remove a finalizer, and the object would outlive
		// the test; conversion leaves finalizers alone.
		obj.SetFinalizers(nil)
		err := env.Client.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))
		if apierrors.IsInvalid(err) && (strings.Contains(err.Error(), "already served by") || strings.Contains(err.Error(), "belongs to")) {
			// Two admitted gateways with one route, or on one host from two
			// namespaces: each was judged alone, and the second loses.
			conflicts++
			continue
		}
		require.NoError(t, err, "creating admitted object %d", i)
		created++
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(context.Background(), obj))) })

		key := client.ObjectKeyFromObject(obj)
		forms := map[string]*unstructured.Unstructured{}
		for _, version := range offline.Versions {
			got := &unstructured.Unstructured{}
			got.SetAPIVersion(v1.GroupVersion.Group + "/" + version)
			got.SetKind("APIGateway")
			require.NoError(t, env.Client.Get(ctx, key, got))
			forms[version] = got
		}
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gateways[i])
		require.NoError(t, err)
		assert.Equal(t, jsonOf(t, want["spec"]), jsonOf(t, forms["v1"].Object["spec"]), "object %d: stored with the offline defaults", i)
		for from, to := range map[string]string{"v1": "v1alpha1", "v1alpha1": "v1"} {
			converted, err := offline.Convert(forms[from], to)
			require.NoError(t, err)
			assert.Equal(t, userFields(t, forms[to]), userFields(t, converted), "object %d: %s read as %s", i, from, to)
		}
	}
	t.Logf("conversion parity: %d gateways created and read through both versions, %d refused as conflicts", created, conflicts)
	assert.Positive(t, created)
}

// userFields are the parts of an object a user writes and conversion
// rewrites, as JSON: apiVersion, kind, name, namespace, labels,
// annotations and spec.
func userFields(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	return jsonOf(t, map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "name": u.GetName(), "namespace": u.GetNamespace(),
		"labels": u.GetLabels(), "annotations": u.GetAnnotations(), "spec": u.Object["spec"],
	})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// generated is an APIGateway of version with spec.
func generated(spec map[string]any, version, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(v1.GroupVersion.Group + "/" + version)
	u.SetKind("APIGateway")
	u.SetNamespace(namespace)
	if name != "" {
		u.SetName(name)
	}
	return u
}

// generate makes the i-th object: each field is drawn from values that
// pass, or one time in ten from values that break one rule or another, so
// about a third of the objects are admitted.
func generate(rng *rand.Rand, i int) *unstructured.Unstructured {
	version := pick(rng, "v1", "v1", "v1alpha1")
	spec := map[string]any{}
	if image := draw(rng, []string{"-", "-", "nginx:1.27", "nginx", "nginx:latest", "registry.example.com:5000/team/nginx@sha256:" + strings.Repeat("ab", 32)},
		[]string{"Bad Image", ""}); image != "-" {
		spec["image"] = image
	}
	if r := draw[any](rng, []any{nil, nil, int64(1), int64(2), int64(3), int64(0)}, []any{int64(-1), int64(101), "two"}); r != nil {
		spec["replicas"] = r
	}
	routes := make([]any, 0, 3)
	for range draw(rng, []int{1, 1, 1, 2, 2, 3}, []int{0}) {
		routes = append(routes, route(rng, version))
	}
	if len(routes) > 0 && rng.IntN(15) == 0 {
		routes = append(routes, routes[0]) // a route twice
	}
	if rng.IntN(30) != 0 {
		spec["routes"] = routes
	}
	if version == "v1" {
		v1Extras(rng, spec, routes)
	}
	if rng.IntN(30) == 0 {
		spec["weight"] = int64(3) // an unknown field
	}
	name := draw(rng, []string{"gw-%d"}, []string{"Gw-%d", "gw.%d", "%d-gw", strings.Repeat("g", 60) + "-%d", ""})
	if strings.Contains(name, "%d") {
		name = fmt.Sprintf(name, i)
	}
	u := generated(spec, version, pick(rng, parityNamespace, parityNamespace, parityNamespace, "default"), name)
	if rng.IntN(10) == 0 {
		u.SetLabels(map[string]string{"team": draw(rng, []string{"a", "b"}, []string{"bad label!"})})
	}
	if rng.IntN(40) == 0 {
		u.Object["metadata"].(map[string]any)["labelz"] = map[string]any{"team": "a"} // an unknown field of the metadata
	}
	if rng.IntN(20) == 0 {
		u.SetFinalizers([]string{pick(rng, "example.com/cleanup", "cleanup", "example.com", "kubernetes", "Bad Finalizer")})
	}
	if rng.IntN(10) == 0 {
		u.SetAnnotations(map[string]string{pick(rng, "note", "conversion.example.com/v1-spec"): pick(rng, "x", `{"spec":{}}`, "not json")})
	}
	return u
}

// route is a route of version.
func route(rng *rand.Rand, version string) map[string]any {
	host := draw(rng, []string{"api.example.com", "shop.example.com", "a%d.example.com", "a%d.example.com", "API.Example.COM", "*.example.com", "taken.example.com"},
		[]string{"10.0.0.1", "", "a..b.com", "x_y.example.com", strings.Repeat("a", 64) + ".com", "*.com"})
	if strings.Contains(host, "%d") {
		host = fmt.Sprintf(host, rng.IntN(1000))
	}
	path := draw(rng, []string{"-", "/", "/x", "/users/", "/taken/", "/taken", "/%41bc"},
		[]string{"x", "/a//b", "/a/./b", "/%0d", "/a b", "/ü", "/%2F", ""})
	name := draw(rng, []string{"svc-a", "svc-a", "svc-b"}, []string{"Bad_Name", "", "a.b"})
	port := draw(rng, []int64{80, 80, 8080, 81}, []int64{0, 65536})
	r := map[string]any{"host": host}
	if version == "v1alpha1" {
		if path != "-" {
			r["prefix"] = path
		}
		r["serviceName"], r["servicePort"] = name, port
		return r
	}
	if path != "-" {
		r["path"] = path
	}
	if pt := draw(rng, []string{"-", "-", "Prefix", "Exact"}, []string{"ImplementationSpecific", "Regex"}); pt != "-" {
		r["pathType"] = pt
	}
	r["backendService"] = map[string]any{"name": name, "port": port}
	if rng.IntN(6) == 0 {
		r["rules"] = []any{rule(rng)}
		if rng.IntN(3) == 0 {
			delete(r, "backendService")
		}
	}
	if rng.IntN(8) == 0 {
		r["sourceRanges"] = sourceRanges(rng)
	}
	if rng.IntN(8) == 0 {
		r["externalAuth"] = externalAuth(rng)
	}
	if rng.IntN(8) == 0 {
		r["redirect"] = redirect(rng)
		if rng.IntN(2) == 0 {
			delete(r, "backendService")
		}
	}
	if rng.IntN(40) == 0 {
		r["weight"] = int64(1) // an unknown field
	}
	return r
}

// sourceRanges are a route's source ranges: allow, deny, both or neither,
// two networks each (the same one twice, sometimes), of both families,
// canonical or not.
func sourceRanges(rng *rand.Rand) map[string]any {
	cidr := func() any {
		return draw(rng, []string{"10.0.0.0/8", "203.0.113.7/32", "2001:db8::/32", "::/0"}, []string{"10.0.0.1/8", "2001:DB8::/32", "10.0.0.0", ""})
	}
	s := map[string]any{}
	for _, list := range []string{"allow", "deny"} {
		if rng.IntN(2) == 0 {
			s[list] = []any{cidr(), cidr()}
		}
	}
	return s
}

// redirect is a route's redirect: some of its fields, each valid or not
// (an empty redirect changes nothing, and is refused).
func redirect(rng *rand.Rand) map[string]any {
	rd := map[string]any{}
	if rng.IntN(2) == 0 {
		rd["scheme"] = draw(rng, []string{"https", "http"}, []string{"HTTPS", "ftp"})
	}
	if rng.IntN(3) == 0 {
		rd["hostname"] = draw(rng, []string{"www.example.com", "docs.example.com"}, []string{"*.example.com", "Bad_Host", "10.0.0.1", "a b"})
	}
	if rng.IntN(4) == 0 {
		rd["port"] = draw(rng, []int64{443, 8443}, []int64{0, 65536})
	}
	if rng.IntN(2) == 0 {
		rd["path"] = map[string]any{
			"type":  draw(rng, []string{"ReplaceFullPath", "ReplacePrefixMatch"}, []string{"Regex", ""}),
			"value": draw(rng, []string{"/", "/new/", "/caf%C3%A9"}, []string{"//evil.example.com", "/a b", "x", `/a"b`}),
		}
	}
	if rng.IntN(3) == 0 {
		rd["statusCode"] = draw(rng, []int64{301, 302, 303, 307, 308}, []int64{300, 200})
	}
	return rd
}

// externalAuth is a route's external authentication: a Service, a port
// and a path, and sometimes headers, a sign-in URL and a timeout, valid
// or not.
func externalAuth(rng *rand.Rand) map[string]any {
	a := map[string]any{
		// svc-a, the cluster's Service, has port 80 only: 4180 warns.
		"service": draw(rng, []string{"oauth2-proxy", "auth", "svc-a"}, []string{"Auth", "auth.other", ""}),
		"port":    draw(rng, []int64{4180, 80}, []int64{0, 65536}),
		"path":    draw(rng, []string{"/oauth2/auth", "/"}, []string{"/caf%C3%A9", "auth", "/a/../b"}),
	}
	header := func() any {
		return draw(rng, []string{"Cookie", "X-Auth-Request-User"}, []string{"Host", "Connection", "X-Original-URI", "X Team"})
	}
	if rng.IntN(2) == 0 {
		a["forwardHeaders"] = []any{header(), header()}
	}
	if rng.IntN(2) == 0 {
		a["responseHeaders"] = []any{header()}
	}
	if rng.IntN(2) == 0 {
		a["signInURL"] = draw(rng, []string{"https://login.example.com/start", "https://login.example.com/start?app=a&b=c"},
			[]string{"http://login.example.com/", "https://login.example.com/#x", "https://login.example.com/$host", "/start"})
	}
	if rng.IntN(2) == 0 {
		a["timeoutSeconds"] = draw(rng, []int64{1, 30}, []int64{0, 31})
	}
	return a
}

// rule is one of a route's rules: one match of one kind of condition,
// and a backend.
func rule(rng *rand.Rand) map[string]any {
	var match map[string]any
	switch rng.IntN(4) {
	case 0:
		h := map[string]any{"name": draw(rng, []string{"X-Canary", "x-team"}, []string{"Bad Name", "Upgrade", ""}), "type": draw(rng, []string{"Exact"}, []string{"Regex"})}
		if rng.IntN(4) == 0 {
			h["type"] = "Present"
		} else {
			h["value"] = draw(rng, []string{"always", "a b"}, []string{`a"b`, "a$b", ""})
		}
		match = map[string]any{"headers": []any{h}}
	case 1:
		match = map[string]any{"queryParams": []any{map[string]any{
			"name": draw(rng, []string{"debug"}, []string{"my-param", ""}), "type": "Exact", "value": draw(rng, []string{"1", "a-b"}, []string{"a b", "a&b"}),
		}}}
	case 2:
		match = map[string]any{"cookies": []any{map[string]any{
			"name": draw(rng, []string{"session"}, []string{"my-session"}), "value": draw(rng, []string{"beta"}, []string{"a;b", ""}),
		}}}
	default:
		match = map[string]any{"method": draw(rng, []string{"GET", "POST"}, []string{"get", "PURGE"})}
	}
	return map[string]any{
		"matches":        []any{match},
		"backendService": map[string]any{"name": draw(rng, []string{"canary"}, []string{"Bad_Name"}), "port": draw(rng, []int64{8080}, []int64{0})},
	}
}

// v1Extras adds some of the fields only v1 has.
func v1Extras(rng *rand.Rand, spec map[string]any, routes []any) {
	if rng.IntN(5) == 0 {
		host := "other.example.com"
		if len(routes) > 0 && rng.IntN(3) != 0 {
			host, _ = routes[0].(map[string]any)["host"].(string)
		}
		spec["tls"] = []any{map[string]any{"hosts": []any{host}, "secretName": draw(rng, []string{"tls-secret"}, []string{"Bad_Secret"})}}
	}
	if rng.IntN(6) == 0 {
		spec["ingressClassName"] = draw(rng, []string{"nginx", "internal"}, []string{"Bad Class"})
	}
	if rng.IntN(8) == 0 {
		spec["resources"] = map[string]any{pick(rng, "limits", "requests"): map[string]any{"cpu": draw(rng, []string{"100m", "1"}, []string{"lots"})}}
	}
}

// draw draws one of good, or one time in ten one of bad.
func draw[T any](rng *rand.Rand, good, bad []T) T {
	if rng.IntN(10) == 0 {
		return pick(rng, bad...)
	}
	return pick(rng, good...)
}

// pick draws one of values.
func pick[T any](rng *rand.Rand, values ...T) T { return values[rng.IntN(len(values))] }
