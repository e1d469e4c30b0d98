package webhooks

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
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
)

func init() {
	metrics.Registry.MustRegister(admissionRequests, admissionDenials)
}

// The label values of webhook and result.
const (
	webhookMutating   = "mutating"
	webhookValidating = "validating"

	resultAllowed = "allowed"
	resultDenied  = "denied"
	resultError   = "error"
)

// countingDefaulter counts the decisions of the Defaulter it wraps.
type countingDefaulter struct {
	admission.Defaulter[*v1.APIGateway]
}

var _ admission.Defaulter[*v1.APIGateway] = countingDefaulter{}

// Default implements admission.Defaulter.
func (d countingDefaulter) Default(ctx context.Context, gw *v1.APIGateway) error {
	err := d.Defaulter.Default(ctx, gw)
	operation := ""
	if req, reqErr := admission.RequestFromContext(ctx); reqErr == nil {
		operation = string(req.Operation)
	}
	recordAdmission(webhookMutating, operation, err)
	return err
}

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
