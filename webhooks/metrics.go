package webhooks

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// conflictDetail starts the message of a route another gateway serves
// (validateConflicts).
const conflictDetail = "host and path already served by"

// indexes matches the list indexes of a field path, as in routes[3].
var indexes = regexp.MustCompile(`\[[^\]]*\]`)

// knownRules are the denial rules: the field path of what validation
// checks, without "spec." and indexes, plus "conflict" for a route another
// gateway serves. Anything else counts as "other", so a path that carries
// user data can never become a label value.
var knownRules = map[string]bool{
	"name": true, "image": true, "replicas": true,
	"routes": true, "routes.duplicate": true, "conflict": true,
	"routes.host": true, "routes.path": true, "routes.pathType": true,
	"routes.backendService.name": true, "routes.backendService.port": true,
	"tls.hosts": true, "tls.secretName": true,
}

// deniedRules returns the distinct rules an Invalid error's causes name.
func deniedRules(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return []string{"other"}
	}
	var rules []string
	seen := map[string]bool{}
	for _, c := range status.Status().Details.Causes {
		if r := ruleOf(c); !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
	}
	return rules
}

// ruleOf derives a cause's rule from its type and field path: a duplicate
// route is a conflict when another gateway serves it (the message of
// validateConflicts) and a repeat within the gateway otherwise.
func ruleOf(c metav1.StatusCause) string {
	path := indexes.ReplaceAllString(c.Field, "")
	path = strings.TrimPrefix(path, "spec.")
	if path == "metadata.name" {
		path = "name"
	}
	if path == "routes" && c.Type == metav1.CauseTypeFieldValueDuplicate {
		path = "routes.duplicate"
		if strings.Contains(c.Message, conflictDetail) {
			path = "conflict"
		}
	}
	if !knownRules[path] {
		return "other"
	}
	return path
}
