package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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
		"route served by another gateway": {gw: validGateway(), others: []v1.APIGateway{*other}, want: []string{RuleConflict}},
		"several rules": {gw: gatewayWith(func(gw *v1.APIGateway) {
			gw.Spec.Routes[0].Path = "users"
			gw.Spec.TLS[0].SecretName = "Bad Secret"
		}), want: []string{validation.RulePath, validation.RuleTLSSecretName}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs, _ := Validate(tc.old, tc.gw, RelatedObjects{Gateways: tc.others})
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

func (s stubAdmission) Default(context.Context, *v1.APIGateway) error { return s.err }
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
	updateCtx := admission.NewContextWithRequest(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update}})

	deltas := counterDeltas(t,
		admissionRequests.WithLabelValues(webhookValidating, "CREATE", resultDenied),
		admissionRequests.WithLabelValues(webhookValidating, "UPDATE", resultAllowed),
		admissionRequests.WithLabelValues(webhookValidating, "DELETE", resultError),
		admissionRequests.WithLabelValues(webhookMutating, "UPDATE", resultError),
		admissionRequests.WithLabelValues(webhookMutating, "other", resultAllowed),
		admissionDenials.WithLabelValues(validation.RulePath),
	)
	_, err := countingValidator{stubAdmission{invalid}}.ValidateCreate(t.Context(), gw)
	assert.Equal(t, invalid, err, "the wrapped error is returned unchanged")
	_, _ = countingValidator{stubAdmission{}}.ValidateUpdate(t.Context(), gw, gw)
	_, _ = countingValidator{stubAdmission{unavailable}}.ValidateDelete(t.Context(), gw)
	assert.Equal(t, unavailable, countingDefaulter{stubAdmission{unavailable}}.Default(updateCtx, gw))
	// Without a request in the context the operation is unknown.
	assert.NoError(t, countingDefaulter{stubAdmission{}}.Default(t.Context(), gw))
	assert.Equal(t, []float64{1, 1, 1, 1, 1, 1}, deltas())
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
			// A host of its own: another test's gateway serves
			// api.example.com/, and routes conflict across namespaces.
			change: func(gw *v1.APIGateway) {
				gw.Spec.Routes[1].Host, gw.Spec.Routes[1].Path, gw.Spec.Routes[1].PathType = "match.example.com", "", ""
			},
			check: func(t *testing.T, gw *v1.APIGateway) {
				assert.Equal(t, v1.Route{Host: "match.example.com", Path: "/", PathType: v1.PathTypePrefix,
					BackendService: v1.BackendService{Name: "product-service", Port: 8081}}, gw.Spec.Routes[1])
			},
		},
		"no image": {
			change: func(gw *v1.APIGateway) { gw.Spec.Image = "" }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) { assert.Equal(t, flagImage, gw.Spec.Image) },
		},
		"no replicas": {
			change: func(gw *v1.APIGateway) { gw.Spec.Replicas = nil }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) { assert.Equal(t, ptr.To[int32](2), gw.Spec.Replicas) },
		},
		"an upper-case host": {
			change: func(gw *v1.APIGateway) { gw.Spec.Routes[0].Host = "API.example.com" }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) { assert.Equal(t, "api.example.com", gw.Spec.Routes[0].Host) },
		},
		"a host with a trailing dot": {
			change: func(gw *v1.APIGateway) { gw.Spec.Routes[1].Host = "api.example.com." }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) { assert.Equal(t, "api.example.com", gw.Spec.Routes[1].Host) },
		},
		"an upper-case TLS host": {
			change: func(gw *v1.APIGateway) { gw.Spec.TLS[0].Hosts[0] = "Api.Example.com" }, wantCalled: true,
			check: func(t *testing.T, gw *v1.APIGateway) {
				assert.Equal(t, []string{"api.example.com"}, gw.Spec.TLS[0].Hosts)
			},
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gatewayWith(tc.change)
			i++
			gw.Namespace, gw.Name = "match", fmt.Sprintf("gw-%d", i)
			for j := range gw.Spec.Routes {
				gw.Spec.Routes[j].Path = strings.Replace(gw.Spec.Routes[j].Path, "/", fmt.Sprintf("/%d-", i), 1)
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
