package webhooks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
)

// The paths the webhooks are served on; the +kubebuilder:webhook markers in
// webhooks.go name the same.
const (
	MutatePath   = "/mutate-example-com-v1-apigateway"
	ValidatePath = "/validate-example-com-v1-apigateway"
)

// Why these handlers instead of controller-runtime's generic
// admission.WithDefaulter/WithValidator, which call the same Defaulter and
// Validator: under load (benchmark B2) the generic ones spent most of their
// time outside our code. Each request's object went through apimachinery's
// universal deserializer (two full JSON passes plus a validity scan), and
// the defaulter's patch was found by marshalling the object and diffing both
// documents as generic JSON (gomodules.xyz/jsonpatch's CreatePatch). Here
// the object is decoded once, with encoding/json/v2's implementation (about
// three times faster on a 10-route gateway), and the patch is built from the
// handful of fields Default can set. The request, response and error
// handling around them is controller-runtime's admission.Webhook as before.

// mutatingHandler serves the mutating webhook.
type mutatingHandler struct {
	defaulter admission.Defaulter[*v1.APIGateway]
}

var _ admission.Handler = mutatingHandler{}

// Handle decodes the object, defaults it and answers with a JSON patch of
// exactly what changed.
func (h mutatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	defer observeAdmission(webhookMutating, &req, time.Now())
	switch req.Operation {
	case admissionv1.Delete, admissionv1.Connect:
		return admission.Allowed("")
	}
	gw, err := decodeGateway(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	audit := map[string]string{AuditRequestVersion: requestVersion(&req)}
	if err := tooMany(gw); err != nil {
		// The schema refuses it anyway: a patch per route of a
		// list of a million would cost what its limit prevents.
		return withAudit(denial(nil, err), audit)
	}
	before := gw.Spec.DeepCopy()
	ctx, imageSource := withImageSource(admission.NewContextWithRequest(ctx, req))
	if err := h.defaulter.Default(ctx, gw); err != nil {
		return withAudit(denial(nil, err), audit)
	}
	patch, sure := defaultingPatch(before, &gw.Spec)
	if len(patch) == 0 {
		return withAudit(admission.Allowed(""), audit)
	}
	audit[AuditDefaults] = defaultsAudit(before, &gw.Spec)
	if before.Image == "" {
		audit[AuditImageSource] = *imageSource
	}
	annotateSpan(ctx, audit)
	if !sure {
		parents, err := parentOps(req.Object.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		patch = append(parents, patch...)
	}
	return withAudit(admission.Patched("", patch...), audit)
}

// defaultingPatch returns the JSON patch that turns before into after, where
// after is before defaulted by Default: it compares only the fields Default
// sets (TestDefaultingPatchMatchesDefault and the drift tests keep the two
// in step), so members the Go type does not know (a newer CRD's) are left
// as they are. It reports false when the request's JSON may lack the
// objects the patch addresses (no spec, or a route that decoded from
// null): the caller then puts parentOps first.
func defaultingPatch(before, after *v1.APIGatewaySpec) ([]jsonpatch.Operation, bool) {
	sure := len(before.Routes) > 0 || before.Image != "" || before.Replicas != nil
	ops := make([]jsonpatch.Operation, 0, 2)
	// "add" also replaces a member that is present but empty or null.
	add := func(path string, value any) { ops = append(ops, jsonpatch.NewOperation("add", path, value)) }
	if before.Image != after.Image {
		add("/spec/image", after.Image)
	}
	if before.Replicas == nil && after.Replicas != nil {
		add("/spec/replicas", *after.Replicas)
	}
	for i := range before.Routes {
		b, a := &before.Routes[i], &after.Routes[i]
		if *b == (v1.Route{}) {
			sure = false
		}
		prefix := "/spec/routes/" + strconv.Itoa(i)
		if b.Host != a.Host {
			ops = append(ops, jsonpatch.NewOperation("replace", prefix+"/host", a.Host))
		}
		if b.Path != a.Path {
			add(prefix+"/path", a.Path)
		}
		if b.PathType != a.PathType {
			add(prefix+"/pathType", a.PathType)
		}
	}
	for i := range before.TLS {
		for j, host := range before.TLS[i].Hosts {
			if host != after.TLS[i].Hosts[j] {
				path := "/spec/tls/" + strconv.Itoa(i) + "/hosts/" + strconv.Itoa(j)
				ops = append(ops, jsonpatch.NewOperation("replace", path, after.TLS[i].Hosts[j]))
			}
		}
	}
	return ops, sure
}

// parentOps returns the operations that make the objects defaultingPatch
// addresses exist in raw, the object as the request sent it: the spec when
// it is missing or null, and each route that is null. Nothing else is
// replaced, so members the Go type does not know stay.
func parentOps(raw []byte) ([]jsonpatch.Operation, error) {
	var doc struct {
		Spec *struct {
			Routes []jsontext.Value `json:"routes"`
		} `json:"spec"`
	}
	if err := jsonv2.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decoding the APIGateway: %w", err)
	}
	empty := map[string]any{}
	if doc.Spec == nil {
		return []jsonpatch.Operation{jsonpatch.NewOperation("add", "/spec", empty)}, nil
	}
	var ops []jsonpatch.Operation
	for i, r := range doc.Spec.Routes {
		if string(r) == "null" {
			ops = append(ops, jsonpatch.NewOperation("replace", "/spec/routes/"+strconv.Itoa(i), empty))
		}
	}
	return ops, nil
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
	if len(raw) == 0 {
		return nil, errors.New("there is no content to decode")
	}
	if jsontext.Value(raw).Kind() != '{' {
		// null would decode into an empty gateway, which no patch
		// addresses; the API server sends objects only.
		return nil, errors.New("the APIGateway must be a JSON object")
	}
	gw := &v1.APIGateway{}
	if err := jsonv2.Unmarshal(raw, gw); err != nil {
		return nil, fmt.Errorf("decoding the APIGateway: %w", err)
	}
	if (gw.APIVersion != "" && gw.APIVersion != v1.GroupVersion.String()) || (gw.Kind != "" && gw.Kind != apiGatewayKind) {
		return nil, fmt.Errorf("expected an APIGateway of %s, got apiVersion %q, kind %q",
			v1.GroupVersion, gw.APIVersion, gw.Kind)
	}
	return gw, nil
}

const apiGatewayKind = "APIGateway"
