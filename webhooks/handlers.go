package webhooks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
)

// The paths the webhooks are served on; the +kubebuilder:webhook markers in
// webhooks.go name the same.
const (
	MutatePath   = "/mutate-example-com-v1-apigateway"
	ValidatePath = "/validate-example-com-v1-apigateway"
)

// Why these handlers instead of controller-runtime's generic
// admission.WithDefaulter/WithValidator: under load (benchmark B2) the
// generic ones spent most of their time outside our code. Each request's
// object went through apimachinery's universal deserializer (two full JSON
// passes plus a validity scan), and the defaulter's patch was found by
// marshalling the object and diffing both documents as generic JSON
// (gomodules.xyz/jsonpatch's CreatePatch). Here the object is decoded once,
// with encoding/json/v2's implementation (about three times faster on a
// 10-route gateway), and the patch is the one api/v1/defaults.Table makes,
// field by field, as the defaults policy it generates makes it in the API
// server. The request, response and error handling around them is
// controller-runtime's admission.Webhook as before.

// mutatingHandler serves the mutating webhook.
type mutatingHandler struct {
	defaulter *Defaulter
}

var _ admission.Handler = mutatingHandler{}

// Handle decodes the object and answers with the JSON patch the defaults
// table makes of it (defaults.Patch): members the table does not name
// are never touched.
func (h mutatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	defer observeAdmission(webhookMutating, &req, time.Now())
	switch req.Operation {
	case admissionv1.Delete, admissionv1.Connect:
		return admission.Allowed("")
	}
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	audit := map[string]string{AuditRequestVersion: requestVersion(&req)}
	params := h.defaulter.Operator.Params(nil)
	ops := defaults.Patch(obj, params)
	if slices.ContainsFunc(ops, fillsImage) {
		// The namespace is read only when its annotation can matter: it
		// may name the image.
		namespace, _, _ := unstructured.NestedString(obj, "metadata", "namespace")
		if namespace == "" {
			namespace = req.Namespace
		}
		annotations, err := h.defaulter.namespaceAnnotations(ctx, namespace)
		if err != nil {
			recordAdmission(webhookMutating, string(req.Operation), err)
			return withAudit(denial(nil, err), audit)
		}
		params.NamespaceAnnotations = annotations
		ops = defaults.Patch(obj, params)
		audit[AuditImageSource] = imageFromFlag
		if params.ImageFromNamespace() {
			audit[AuditImageSource] = imageFromNamespace
		}
	}
	recordAdmission(webhookMutating, string(req.Operation), nil)
	if len(ops) == 0 {
		return withAudit(admission.Allowed(""), audit)
	}
	audit[AuditDefaults] = strings.Join(defaults.AuditNames(ops), ",")
	annotateSpan(ctx, audit)
	patch := make([]jsonpatch.Operation, len(ops))
	for i, op := range ops {
		patch[i] = jsonpatch.NewOperation(op.Op, op.Path, op.Value)
	}
	return withAudit(admission.Patched("", patch...), audit)
}

// fillsImage reports whether op fills in spec.image.
func fillsImage(op defaults.Op) bool { return op.Name == "image" }

// decodeObject decodes an APIGateway as an AdmissionReview carries it, as
// JSON: the defaults table reads it so, members the Go type does not know
// included. It may leave out apiVersion and kind, but may not name another
// type.
func decodeObject(raw []byte) (map[string]any, error) {
	if err := checkObject(raw); err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := jsonv2.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decoding the APIGateway: %w", err)
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if err := checkType(apiVersion, kind); err != nil {
		return nil, err
	}
	return obj, nil
}

// validatingHandler serves the validating webhook.
type validatingHandler struct {
	validator admission.Validator[*v1.APIGateway]
}

var _ admission.Handler = validatingHandler{}

// Handle decodes the object (and the old one on update) and validates it.
func (h validatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	defer observeAdmission(webhookValidating, &req, time.Now())
	ctx = admission.NewContextWithRequest(ctx, req)
	var (
		warnings admission.Warnings
		err      error
	)
	switch req.Operation {
	case admissionv1.Connect:
		return admission.Allowed("")
	case admissionv1.Create:
		gw, decodeErr := decodeGateway(req.Object.Raw)
		if decodeErr != nil {
			return admission.Errored(http.StatusBadRequest, decodeErr)
		}
		warnings, err = h.validator.ValidateCreate(ctx, gw)
	case admissionv1.Update:
		gw, decodeErr := decodeGateway(req.Object.Raw)
		if decodeErr != nil {
			return admission.Errored(http.StatusBadRequest, decodeErr)
		}
		old, decodeErr := decodeGateway(req.OldObject.Raw)
		if decodeErr != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("old object: %w", decodeErr))
		}
		warnings, err = h.validator.ValidateUpdate(ctx, old, gw)
	case admissionv1.Delete:
		// The API server sends the object being deleted as the old object.
		old, decodeErr := decodeGateway(req.OldObject.Raw)
		if decodeErr != nil {
			return admission.Errored(http.StatusBadRequest, decodeErr)
		}
		warnings, err = h.validator.ValidateDelete(ctx, old)
	default:
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("unknown operation %q", req.Operation))
	}
	audit := map[string]string{AuditRequestVersion: requestVersion(&req)}
	if err != nil {
		maps.Copy(audit, denialAudit(err))
	}
	annotateSpan(ctx, audit)
	if err != nil {
		return withAudit(denial(warnings, err), audit)
	}
	return withAudit(admission.Allowed("").WithWarnings(warnings...), audit)
}

// denial answers with err's status (Invalid carries the field causes kubectl
// prints), or a plain denial for an error without one.
func denial(warnings admission.Warnings, err error) admission.Response {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		status := apiStatus.Status()
		resp := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Result: &status}}
		return resp.WithWarnings(warnings...)
	}
	return admission.Denied(err.Error()).WithWarnings(warnings...)
}

// decodeGateway decodes an APIGateway as an AdmissionReview carries it. The
// object may leave out apiVersion and kind (they are then the v1
// APIGateway's), but may not name another type: with matchPolicy
// Equivalent the API server sends v1 whatever version the client wrote.
func decodeGateway(raw []byte) (*v1.APIGateway, error) {
	if err := checkObject(raw); err != nil {
		return nil, err
	}
	gw := &v1.APIGateway{}
	if err := jsonv2.Unmarshal(raw, gw); err != nil {
		return nil, fmt.Errorf("decoding the APIGateway: %w", err)
	}
	if err := checkType(gw.APIVersion, gw.Kind); err != nil {
		return nil, err
	}
	return gw, nil
}

// checkObject refuses raw unless it is a JSON object: null would decode
// into an empty gateway, which no patch addresses; the API server sends
// objects only.
func checkObject(raw []byte) error {
	if len(raw) == 0 {
		return errors.New("there is no content to decode")
	}
	if jsontext.Value(raw).Kind() != '{' {
		return errors.New("the APIGateway must be a JSON object")
	}
	return nil
}

// checkType refuses an object that names another type than the v1
// APIGateway (leaving them out is fine).
func checkType(apiVersion, kind string) error {
	if (apiVersion != "" && apiVersion != v1.GroupVersion.String()) || (kind != "" && kind != apiGatewayKind) {
		return fmt.Errorf("expected an APIGateway of %s, got apiVersion %q, kind %q", v1.GroupVersion, apiVersion, kind)
	}
	return nil
}

const apiGatewayKind = "APIGateway"
