package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The audit annotations the webhooks put on their answers. The API server
// records each in the request's audit event under the webhook's name, as
// "vapigateway-v1.example.com/denied-rules". Their values are versions,
// rule ids, field names and namespace/name pairs, bounded in number: never
// a string a user wrote into the spec.
const (
	// AuditRequestVersion is the API version the client wrote (v1,
	// v1alpha1 or other), so v1alpha1 writers can be found.
	AuditRequestVersion = "request-version"
	// AuditDeniedRules are the rule ids (field.Error.Origin) of a denial,
	// comma-separated and sorted.
	AuditDeniedRules = "denied-rules"
	// AuditConflictHolders are the gateways, as namespace/name, that hold
	// the routes a denial calls conflicting.
	AuditConflictHolders = "conflict-holders"
	// AuditDefaults are the fields the mutating webhook filled in or
	// normalized: image, replicas, path, pathType, host, tlsHost.
	AuditDefaults = "defaults"
	// AuditImageSource says where a defaulted image came from:
	// namespace-annotation or operator-flag.
	AuditImageSource = "image-source"
)

// The values of AuditImageSource.
const (
	imageFromNamespace = "namespace-annotation"
	imageFromFlag      = "operator-flag"
)

// withAudit returns resp with the non-empty annotations added.
func withAudit(resp admission.Response, annotations map[string]string) admission.Response {
	for k, v := range annotations {
		if v == "" {
			continue
		}
		if resp.AuditAnnotations == nil {
			resp.AuditAnnotations = map[string]string{}
		}
		resp.AuditAnnotations[k] = v
	}
	return resp
}

// denialAudit is the audit of a denial: the rules broken and, for a
// conflict, who holds the routes.
func denialAudit(err error) map[string]string {
	var inv *invalidError
	if !errors.As(err, &inv) {
		return nil
	}
	var rules []string
	for _, e := range inv.errs {
		if e.Origin != "" && !slices.Contains(rules, e.Origin) {
			rules = append(rules, e.Origin)
		}
	}
	slices.Sort(rules)
	return map[string]string{AuditDeniedRules: strings.Join(rules, ","), AuditConflictHolders: boundedList(inv.holders)}
}

// maxAuditNames bounds a list in an audit annotation.
const maxAuditNames = 5

func boundedList(names []string) string {
	if len(names) > maxAuditNames {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:maxAuditNames], ","), len(names)-maxAuditNames)
	}
	return strings.Join(names, ",")
}

// annotateSpan puts the audit annotations on the request's span too (a
// no-op span when tracing is off), as apigateway.<key> attributes: a trace
// shows which rules denied a write and what was defaulted.
func annotateSpan(ctx context.Context, annotations map[string]string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	for k, v := range annotations {
		if v != "" {
			span.SetAttributes(attribute.String("apigateway."+k, v))
		}
	}
}
