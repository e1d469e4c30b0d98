package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

var gatewayKind = schema.GroupKind{Group: "example.com", Kind: "APIGateway"}

// TestDeniedRules runs real validation failures through the denial
// metric's rule labels: each is the rule its errors name (Origin).
func TestDeniedRules(t *testing.T) {
	other := gatewayWith(func(gw *v1.APIGateway) { gw.Name = "other" })
	tests := map[string]struct {
		old, gw *v1.APIGateway
		others  []v1.APIGateway
		want    []string
	}{
		"bad host": {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "Bad_Host" }),
			// The TLS host list no longer names that route's host: not a new rule.
			want: []string{validation.RuleHost}},
		"two bad hosts count once": {gw: gatewayWith(func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].Host, gw.Spec.Routes[1].Host = "https://a.example.com", "10.0.0.1"
			gw.Spec.TLS = nil
		}), want: []string{validation.RuleHost}},
		"bad path":          {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes[0].Path = "/a/../b" }), want: []string{validation.RulePath}},
		"bad backend port":  {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes[0].BackendService.Port = 0 }), want: []string{validation.RuleBackendPort}},
		"bad backend name":  {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes[0].BackendService.Name = "1svc" }), want: []string{validation.RuleBackendName}},
		"missing image":     {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Image = "" }), want: []string{validation.RuleImage}},
		"name not a label":  {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Name = "a.b" }), want: []string{validation.RuleName}},
		"no routes":         {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes, gw.Spec.TLS = nil, nil }), want: []string{validation.RuleRoutes}},
		"too many routes":   {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Routes = make([]v1.Route, 101) }), want: []string{validation.RuleRoutes}},
		"tls host unrouted": {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts = []string{"www.example.com"} }), want: []string{validation.RuleTLSHosts}},
		"ingress class":     {gw: gatewayWith(func(gw *v1.APIGateway) { gw.Spec.IngressClassName = ptr.To("Nginx") }), want: []string{validation.RuleIngressClassName}},
		"route repeated in the gateway": {gw: gatewayWith(func(gw *v1.APIGateway) {
			gw.Spec.Routes[1] = gw.Spec.Routes[0]
		}), want: []string{validation.RuleDuplicateRoute}},
		"route served by another gateway": {gw: validGateway(), others: []v1.APIGateway{*other}, want: []string{admit.RuleConflict}},
		"several rules": {gw: gatewayWith(func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].Path = "users"
			gw.Spec.TLS[0].SecretName = "Bad Secret"
		}), want: []string{validation.RulePath, validation.RuleTLSSecretName}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs, _ := admit.Validate(tc.old, tc.gw, admit.RelatedObjects{Gateways: tc.others})
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.want, deniedRules(newInvalid(tc.gw.Name, errs)))
		})
	}
}

// A denial that is not the rules' own, or an error without an Origin,
// counts as "other": a label value never comes from anywhere else.
func TestDeniedRulesWithoutARule(t *testing.T) {
	withoutOrigin := field.ErrorList{field.Invalid(field.NewPath("spec", "routes").Index(0).Child("x[evil.example.com]"), "x", "bad")}
	tests := map[string]error{
		"an Invalid status not made by the rules": apierrors.NewInvalid(gatewayKind, "gw", withoutOrigin),
		"a field error without an Origin":         newInvalid("gw", withoutOrigin),
		"no field errors":                         newInvalid("gw", nil),
		"forbidden":                               apierrors.NewForbidden(schema.GroupResource{}, "x", errors.New("no")),
	}
	for name, err := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, []string{"other"}, deniedRules(err))
		})
	}
}

func TestAdmissionResult(t *testing.T) {
	tests := map[string]struct {
		err  error
		want string
	}{
		"allowed":             {want: resultAllowed},
		"invalid":             {err: apierrors.NewInvalid(gatewayKind, "gw", field.ErrorList{field.Required(field.NewPath("spec"), "")}), want: resultDenied},
		"forbidden":           {err: apierrors.NewForbidden(schema.GroupResource{}, "gw", errors.New("no")), want: resultDenied},
		"cache unavailable":   {err: apierrors.NewServiceUnavailable("cache"), want: resultError},
		"too many requests":   {err: apierrors.NewTooManyRequests("slow down", 1), want: resultError},
		"error with a status": {err: errors.New("boom"), want: resultError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, admissionResult(tc.err))
		})
	}
	assert.Equal(t, "other", operationLabel("PATCH"))
	assert.Equal(t, "UPDATE", operationLabel("UPDATE"))
}

// stubAdmission returns err from every call.
type stubAdmission struct{ err error }

func (s stubAdmission) ValidateCreate(context.Context, *v1.APIGateway) (admission.Warnings, error) {
	return nil, s.err
}
func (s stubAdmission) ValidateUpdate(context.Context, *v1.APIGateway, *v1.APIGateway) (admission.Warnings, error) {
	return nil, s.err
}
func (s stubAdmission) ValidateDelete(context.Context, *v1.APIGateway) (admission.Warnings, error) {
	return nil, s.err
}

func TestCountingWrappers(t *testing.T) {
	gw := validGateway()
	invalid := newInvalid("gw", field.ErrorList{field.Invalid(field.NewPath("spec", "routes").Index(0).Child("path"), "x", "bad").WithOrigin(validation.RulePath)})
	unavailable := apierrors.NewServiceUnavailable("cache")

	deltas := counterDeltas(t,
		admissionRequests.WithLabelValues(webhookValidating, "CREATE", resultDenied),
		admissionRequests.WithLabelValues(webhookValidating, "UPDATE", resultAllowed),
		admissionRequests.WithLabelValues(webhookValidating, "DELETE", resultError),
		admissionDenials.WithLabelValues(validation.RulePath),
	)
	_, err := countingValidator{stubAdmission{invalid}}.ValidateCreate(t.Context(), gw)
	assert.Equal(t, invalid, err, "the wrapped error is returned unchanged")
	_, _ = countingValidator{stubAdmission{}}.ValidateUpdate(t.Context(), gw, gw)
	_, _ = countingValidator{stubAdmission{unavailable}}.ValidateDelete(t.Context(), gw)
	assert.Equal(t, []float64{1, 1, 1, 1}, deltas())
}

// TestAdmissionMetricsThroughAPIServer counts what the real API server's
// calls produce: one gateway admitted, one denied.
func TestAdmissionMetricsThroughAPIServer(t *testing.T) {
	startWebhooks(t, Options{DefaultImage: flagImage, DefaultReplicas: 2})
	ctx := t.Context()
	createNamespace(t, "metrics", "")

	deltas := counterDeltas(t,
		admissionRequests.WithLabelValues(webhookMutating, "CREATE", resultAllowed),
		admissionRequests.WithLabelValues(webhookValidating, "CREATE", resultAllowed),
		admissionRequests.WithLabelValues(webhookValidating, "CREATE", resultDenied),
		admissionDenials.WithLabelValues(validation.RuleDuplicateRoute),
		admissionDenials.WithLabelValues(validation.RuleTLSHosts),
	)
	// A host of its own: a route another test's gateway serves, in any
	// namespace, would be refused.
	good := "routes:\n- host: metrics.example.com\n  backendService: {name: svc, port: 80}\n"
	require.NoError(t, kubectl(ctx, manifest("metrics", "good", good), "apply", "-f", "-").Err)
	// Applying an unchanged object again makes no request: start afresh
	// under -count.
	t.Cleanup(func() {
		assert.NoError(t, kubectl(context.Background(), nil, "delete", "apigateways.example.com", "good", "-n", "metrics").Err)
	})
	// Routes the schema admits (it runs before the validating webhook)
	// but the validating webhook refuses: the same once normalised.
	bad := "routes:\n- host: bad.example.com\n  path: /a\n  backendService: {name: svc, port: 80}\n" +
		"- host: bad.example.com\n  path: /a/\n  backendService: {name: svc, port: 80}\n"
	res := kubectl(ctx, manifest("metrics", "bad", bad), "apply", "-f", "-")
	require.Error(t, res.Err)
	require.Contains(t, res.Stderr, "same host, path and pathType as spec.routes[0] once normalised")

	assert.Equal(t, []float64{2, 1, 1, 1, 0}, deltas(), "mutating allowed both, validating allowed one and denied one, for its routes")
}

// counterDeltas returns a function that reports how much each counter grew
// since counterDeltas was called.
func counterDeltas(t *testing.T, counters ...prometheus.Counter) func() []float64 {
	t.Helper()
	before := make([]float64, len(counters))
	for i, c := range counters {
		before[i] = testutil.ToFloat64(c)
	}
	return func() []float64 {
		grew := make([]float64, len(counters))
		for i, c := range counters {
			grew[i] = testutil.ToFloat64(c) - before[i]
		}
		return grew
	}
}

// The API server calls the mutating webhook only for an object that may
// need a default or a normalized host (its matchConditions): a complete
// object costs one webhook round trip, not two, and still gets everything
// it needs.
func TestMutatingWebhookOnlyWhenNeeded(t *testing.T) {
	startWebhooks(t, Options{DefaultImage: flagImage, DefaultReplicas: 2})
	createNamespace(t, "match", "")
	tests := map[string]struct {
		change     func(*v1.APIGateway)
		wantCalled bool
		check      func(*testing.T, *v1.APIGateway)
	}{
		"complete": {},
		"no path or pathType: the schema's defaults fill them in first": {
			// A host of its own: another gateway of this test serves
			// match.example.com/.
			change: func(gw *v1.APIGateway) {
				gw.Spec.Routes[1].Host, gw.Spec.Routes[1].Path, gw.Spec.Routes[1].PathType = "paths.match.example.com", "", ""
			},
			check: func(t *testing.T, gw *v1.APIGateway) {
				assert.Equal(t, v1.Route{Host: "paths.match.example.com", Path: "/", PathType: v1.PathTypePrefix,
					BackendService: v1.BackendService{Name: "product-service", Port: 8081}}, gw.Spec.Routes[1])
			},
		},
		"no image": {
			change: func(gw *v1.APIGateway) { gw.Spec.Image = "" }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) { assert.Equal(t, flagImage, string(gw.Spec.Image)) },
		},
		"no replicas": {
			change: func(gw *v1.APIGateway) { gw.Spec.Replicas = nil }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) { assert.Equal(t, ptr.To[int32](2), gw.Spec.Replicas) },
		},
		"an upper-case host": {
			change: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "MATCH.example.com" }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) {
				assert.Equal(t, v1.Hostname("match.example.com"), gw.Spec.Routes[0].Host)
			},
		},
		"a host with a trailing dot": {
			change: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "match.example.com." }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) {
				assert.Equal(t, v1.Hostname("match.example.com"), gw.Spec.Routes[1].Host)
			},
		},
		"an upper-case TLS host": {
			change: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts[0] = "Match.Example.com" }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) {
				assert.Equal(t, []string{"match.example.com"}, gw.Spec.TLS[0].Hosts)
			},
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// A host of the namespace's own: another test's namespace
			// claimed api.example.com.
			gw := gatewayWith(func(gw *v1.APIGateway) { onHost(gw, "match.example.com") })
			if tc.change != nil {
				tc.change(gw)
			}
			i++
			gw.Namespace, gw.Name = "match", fmt.Sprintf("gw-%d", i)
			for j := range gw.Spec.Routes {
				gw.Spec.Routes[j].Path = v1.HTTPPath(strings.Replace(string(gw.Spec.Routes[j].Path), "/", fmt.Sprintf("/%d-", i), 1))
			}
			deltas := counterDeltas(t,
				admissionRequests.WithLabelValues(webhookMutating, "CREATE", resultAllowed),
				admissionRequests.WithLabelValues(webhookValidating, "CREATE", resultAllowed))
			require.NoError(t, env.Client.Create(t.Context(), gw))
			t.Cleanup(func() { assert.NoError(t, env.Client.Delete(context.Background(), gw)) })

			called := 0.0
			if tc.wantCalled {
				called = 1
			}
			assert.Equal(t, []float64{called, 1}, deltas(), "mutating and validating webhook calls")
			if tc.check != nil {
				tc.check(t, get(t, "match", gw.Name))
			}
		})
	}
}

func TestRequestVersion(t *testing.T) {
	gvk := func(version string) *metav1.GroupVersionKind {
		return &metav1.GroupVersionKind{Group: "example.com", Version: version, Kind: "APIGateway"}
	}
	tests := map[string]struct {
		kind, requestKind *metav1.GroupVersionKind
		want              string
	}{
		// matchPolicy Equivalent: the object arrives as v1, requestKind
		// says what the client wrote.
		"written as v1alpha1, converted to v1": {kind: gvk("v1"), requestKind: gvk("v1alpha1"), want: "v1alpha1"},
		"written as v1":                        {kind: gvk("v1"), requestKind: gvk("v1"), want: "v1"},
		"no requestKind (an older API server)": {kind: gvk("v1"), want: "v1"},
		"a version we do not serve":            {kind: gvk("v1"), requestKind: gvk("v2beta1"), want: "other"},
		"anything else is bounded":             {kind: gvk("v1"), requestKind: gvk("api.example.com/users"), want: "other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Kind: *tc.kind, RequestKind: tc.requestKind}}
			assert.Equal(t, tc.want, requestVersion(&req))
		})
	}
}

// slowAdmission is stubAdmission taking at least delay for each call.
type slowAdmission struct {
	stubAdmission
	delay time.Duration
}

func (s slowAdmission) ValidateUpdate(ctx context.Context, old, gw *v1.APIGateway) (admission.Warnings, error) {
	time.Sleep(s.delay)
	return s.stubAdmission.ValidateUpdate(ctx, old, gw)
}

// histogramOf reads the sample count and sum of one histogram series.
func histogramOf(t *testing.T, labels ...string) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	require.NoError(t, admissionDuration.WithLabelValues(labels...).(prometheus.Metric).Write(&m))
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// TestAdmissionLatencyAndVersion runs requests through the handlers and
// checks that each is timed under its webhook, operation and the version
// the client wrote, including one that fails to decode, and that only the
// validating webhook counts writes by version.
func TestAdmissionLatencyAndVersion(t *testing.T) {
	const delay = 20 * time.Millisecond
	raw, err := json.Marshal(validGateway())
	require.NoError(t, err)
	request := func(op admissionv1.Operation, version string, object []byte) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: op, Object: runtime.RawExtension{Raw: object}, OldObject: runtime.RawExtension{Raw: raw},
			Kind:        metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "APIGateway"},
			RequestKind: &metav1.GroupVersionKind{Group: "example.com", Version: version, Kind: "APIGateway"},
		}}
	}
	slow := slowAdmission{delay: delay}
	// The defaulter reads the namespace of a gateway without an image.
	slowNamespaces := fakeReader(t, &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		time.Sleep(delay)
		return c.Get(ctx, key, obj, opts...)
	}}, defaultNamespace(nil))
	imageless := gatewayWith(func(gw *v1.APIGateway) { gw.Spec.Image = "" })
	rawImageless, err := json.Marshal(imageless)
	require.NoError(t, err)
	tests := map[string]struct {
		handler   admission.Handler
		req       admission.Request
		labels    []string
		minSum    time.Duration
		byVersion float64
	}{
		"mutating, written as v1alpha1": {
			handler: mutatingHandler{&Defaulter{Namespaces: slowNamespaces, Operator: testDefaults}}, req: request(admissionv1.Create, "v1alpha1", rawImageless),
			labels: []string{webhookMutating, "CREATE", "v1alpha1"}, minSum: delay,
		},
		"validating, written as v1alpha1": {
			handler: validatingHandler{slow}, req: request(admissionv1.Update, "v1alpha1", raw),
			labels: []string{webhookValidating, "UPDATE", "v1alpha1"}, minSum: delay, byVersion: 1,
		},
		"validating, an object that does not decode": {
			handler: validatingHandler{slow}, req: request(admissionv1.Create, "v1", []byte(`[]`)),
			labels: []string{webhookValidating, "CREATE", "v1"}, byVersion: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			count, sum := histogramOf(t, tc.labels...)
			versions := counterDeltas(t, admissionVersions.WithLabelValues(tc.labels[2], tc.labels[1]))
			tc.handler.Handle(t.Context(), tc.req)
			gotCount, gotSum := histogramOf(t, tc.labels...)
			assert.Equal(t, count+1, gotCount, "one request, one observation")
			assert.GreaterOrEqual(t, gotSum-sum, tc.minSum.Seconds(), "the handler's time is in the observation")
			assert.Equal(t, []float64{tc.byVersion}, versions())
		})
	}
}

// TestRequestsByVersionThroughAPIServer writes one gateway through each
// version with kubectl: the real API server converts the v1alpha1 one to
// v1 before admission, and the metric still names v1alpha1 as what the
// client wrote.
func TestRequestsByVersionThroughAPIServer(t *testing.T) {
	startWebhooks(t, Options{DefaultImage: flagImage, DefaultReplicas: 2})
	ctx := t.Context()
	createNamespace(t, "by-version", "")
	alphaCount, _ := histogramOf(t, webhookValidating, "CREATE", "v1alpha1")
	deltas := counterDeltas(t,
		admissionVersions.WithLabelValues("v1alpha1", "CREATE"),
		admissionVersions.WithLabelValues("v1", "CREATE"),
	)
	alpha := "apiVersion: example.com/v1alpha1\nkind: APIGateway\nmetadata:\n  name: alpha\n  namespace: by-version\n" +
		"spec:\n  image: nginx:1.27\n  routes:\n  - host: alpha.by-version.example.com\n    prefix: /\n    serviceName: svc\n    servicePort: 80\n"
	require.NoError(t, kubectl(ctx, strings.NewReader(alpha), "create", "-f", "-").Err)
	good := "routes:\n- host: v1.by-version.example.com\n  backendService: {name: svc, port: 80}\n"
	require.NoError(t, kubectl(ctx, manifest("by-version", "v1", good), "create", "-f", "-").Err)
	t.Cleanup(func() {
		assert.NoError(t, kubectl(context.Background(), nil, "delete", "apigateways.example.com", "--all", "-n", "by-version").Err)
	})

	assert.Equal(t, []float64{1, 1}, deltas(), "one create written as v1alpha1, one as v1")
	gotAlpha, _ := histogramOf(t, webhookValidating, "CREATE", "v1alpha1")
	assert.Equal(t, alphaCount+1, gotAlpha)
}

// TestAdmissionBucketsReachPastTheTimeout reads the timeoutSeconds the
// generated webhook configurations give the API server: a latency
// histogram whose last bucket is below it hides exactly the requests that
// are about to fail.
func TestAdmissionBucketsReachPastTheTimeout(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "manifests", "webhook", "manifests.yaml"))
	require.NoError(t, err)
	var timeouts []int32
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var cfg struct {
			Webhooks []struct {
				TimeoutSeconds *int32 `json:"timeoutSeconds"`
			} `json:"webhooks"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &cfg))
		for _, w := range cfg.Webhooks {
			require.NotNil(t, w.TimeoutSeconds, "a webhook without timeoutSeconds waits the API server's default of 10 s")
			timeouts = append(timeouts, *w.TimeoutSeconds)
		}
	}
	require.Len(t, timeouts, 2)
	top := admissionBuckets[len(admissionBuckets)-1]
	for _, timeout := range timeouts {
		assert.Greater(t, top, float64(timeout))
		assert.Contains(t, admissionBuckets, float64(timeout), "a bound at the timeout itself tells near from past")
	}
}
