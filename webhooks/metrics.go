package webhooks

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// The admission metrics, served with controller-runtime's on the metrics
// endpoint. Every label value comes from a fixed set: never a name, a host,
// a path or an index from the object.
var (
	admissionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apigateway_admission_requests_total",
		Help: "APIGateway admission decisions, by webhook (mutating, validating), operation and result (allowed, denied, error).",
	}, []string{"webhook", "operation", "result"})
	admissionDenials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apigateway_admission_denials_total",
		Help: "APIGateway writes the validating webhook denied, by the rule they broke (a request breaking several rules counts once for each).",
	}, []string{"rule"})
	admissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "apigateway_admission_duration_seconds",
		Help: "How long a webhook took to answer an APIGateway admission request, from the decoded request to the response, " +
			"by webhook (mutating, validating), operation and the API version the client wrote (v1, v1alpha1, other).",
		Buckets: admissionBuckets,
	}, []string{"webhook", "operation", "version"})
	admissionVersions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apigateway_admission_requests_by_version_total",
		Help: "APIGateway writes by the API version the client wrote (v1, v1alpha1, other) and operation, counted once each " +
			"by the validating webhook: the clients still writing v1alpha1, to find before it is removed.",
	}, []string{"version", "operation"})
)

// admissionBuckets are the admission latency buckets. The API server gives
// up on a webhook after its timeoutSeconds (5 s), so the buckets reach past
// it, and are dense from 1 to 5 s: controller-runtime's own
// controller_runtime_webhook_latency_seconds has no bound between 1 s and
// 10 s, so its p99 cannot tell 2 s from 4.5 s, which is the difference
// between fine and about to fail (the WebhookLatencyNearTimeout alert fires
// above 3 s).
var admissionBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 7.5, 10}

func init() {
	metrics.Registry.MustRegister(admissionRequests, admissionDenials, admissionDuration, admissionVersions)
}

// observeAdmission records one request a webhook answered, begun at start:
// its latency and, from the validating webhook, which sees every create
// and update once (the mutating one is skipped by its matchConditions),
// the API version the client wrote. Call it deferred, first thing in the
// handler.
func observeAdmission(webhook string, req *admission.Request, start time.Time) {
	version, operation := requestVersion(req), operationLabel(string(req.Operation))
	admissionDuration.WithLabelValues(webhook, operation, version).Observe(time.Since(start).Seconds())
	if webhook == webhookValidating {
		admissionVersions.WithLabelValues(version, operation).Inc()
	}
}

// requestVersion is the API version the client wrote: requestKind, since
// with matchPolicy Equivalent the API server converts the object to v1 and
// says so in kind. Anything but the two served versions is other.
func requestVersion(req *admission.Request) string {
	kind := req.RequestKind
	if kind == nil {
		kind = &req.Kind
	}
	switch kind.Version {
	case v1.GroupVersion.Version, v1alpha1.GroupVersion.Version:
		return kind.Version
	}
	return "other"
}

// The label values of webhook and result.
const (
	webhookMutating   = "mutating"
	webhookValidating = "validating"

	resultAllowed = "allowed"
	resultDenied  = "denied"
	resultError   = "error"
)

// countingValidator counts the decisions of the Validator it wraps, and its
// denials by rule.
type countingValidator struct {
	admission.Validator[*v1.APIGateway]
}

var _ admission.Validator[*v1.APIGateway] = countingValidator{}

// ValidateCreate implements admission.Validator.
func (v countingValidator) ValidateCreate(ctx context.Context, gw *v1.APIGateway) (admission.Warnings, error) {
	w, err := v.Validator.ValidateCreate(ctx, gw)
	recordAdmission(webhookValidating, string(admissionv1.Create), err)
	return w, err
}

// ValidateUpdate implements admission.Validator.
func (v countingValidator) ValidateUpdate(ctx context.Context, old, gw *v1.APIGateway) (admission.Warnings, error) {
	w, err := v.Validator.ValidateUpdate(ctx, old, gw)
	recordAdmission(webhookValidating, string(admissionv1.Update), err)
	return w, err
}

// ValidateDelete implements admission.Validator.
func (v countingValidator) ValidateDelete(ctx context.Context, gw *v1.APIGateway) (admission.Warnings, error) {
	w, err := v.Validator.ValidateDelete(ctx, gw)
	recordAdmission(webhookValidating, string(admissionv1.Delete), err)
	return w, err
}

// recordAdmission counts one decision and, for a denial, the rules broken.
func recordAdmission(webhook, operation string, err error) {
	result := admissionResult(err)
	admissionRequests.WithLabelValues(webhook, operationLabel(operation), result).Inc()
	if result == resultDenied {
		for _, rule := range deniedRules(err) {
			admissionDenials.WithLabelValues(rule).Inc()
		}
	}
}

// operationLabel bounds the operation label to the admission operations.
func operationLabel(op string) string {
	switch admissionv1.Operation(op) {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return op
	}
	return "other"
}

// admissionResult is allowed for no error, denied for a verdict on the
// object (a 4xx status such as Invalid) and error when the webhook could
// not decide (the cache unavailable: a 5xx or 429, or an error without a
// status).
func admissionResult(err error) string {
	if err == nil {
		return resultAllowed
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return resultError
	}
	code := status.Status().Code
	if code >= 400 && code < 500 && code != http.StatusTooManyRequests {
		return resultDenied
	}
	return resultError
}

// ruleOther is the rule label of a denial that names no rule: one not
// made by the validation rules, or an error without an Origin.
const ruleOther = "other"

// deniedRules returns the distinct rules a denial's errors name, in the
// order of the errors. The rule is each error's Origin, which only the
// rules' own constants set (validation.RuleHost, RuleConflict, ...): a
// label value can never carry user data, and a new rule is counted under
// its own name without a list here to keep in step.
func deniedRules(err error) []string {
	var invalid *invalidError
	if !errors.As(err, &invalid) || len(invalid.errs) == 0 {
		return []string{ruleOther}
	}
	var rules []string
	for _, e := range invalid.errs {
		r := e.Origin
		if r == "" {
			r = ruleOther
		}
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	return rules
}
