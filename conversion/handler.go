package conversion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/inflight"
)

// MaxRequestBytes is the largest ConversionReview body the handler reads;
// a larger one is answered 413. The API server converts a whole LIST in one
// review, so the limit must hold every object of the largest list the
// cluster serves: 128 MiB is some 80,000 gateways of 1.5 kB.
const MaxRequestBytes = 128 << 20

// HeldPerRequestByte bounds the bytes the handler holds per byte of the
// review it serves: the request body, the converted objects (half as large
// again as their sources when they carry the preserving annotation) and
// the objects being converted. TestConvertHeldMemory holds the handler to
// it; the webhook server's in-flight bound weighs conversion requests by
// it. Measured on a 32 MiB review of 10-route gateways with v1-only data:
// 94 MiB at the peak with GOGC=10 (BenchmarkConvertHeap32MiB).
const HeldPerRequestByte = 3

// The apiVersion and kind of the ConversionReviews the handler answers; the
// CRD asks for conversionReviewVersions [v1] only.
const (
	reviewAPIVersion = "apiextensions.k8s.io/v1"
	reviewKind       = "ConversionReview"
	gatewayKind      = "APIGateway"
)

var (
	v1APIVersion       = v1.GroupVersion.String()
	v1alpha1APIVersion = v1alpha1.GroupVersion.String()
)

// parallelThreshold is the number of objects from which a review is
// converted on all CPUs; a smaller one (a GET, a write) stays on the
// request's goroutine, where starting workers would cost more than it saves.
const parallelThreshold = 64

var log = logf.Log.WithName("conversion-webhook")

// NewWebhookHandler returns the http.Handler that serves the CRD's
// conversion webhook (apiextensions.k8s.io/v1 ConversionReview) at /convert.
// See the package documentation for why it replaces controller-runtime's.
func NewWebhookHandler() http.Handler {
	return &handler{maxBytes: MaxRequestBytes, converters: converters}
}

// reviewDecodeOptions skip the check for duplicate member names while
// the review is read: decoding each object checks its own members (and
// names the object when that fails), and checking them twice would cost a
// map of names per JSON object of the review on the one goroutine that
// reads it all.
var reviewDecodeOptions = jsontext.AllowDuplicateNames(true)

// handler converts ConversionReviews with converters; maxBytes bounds the
// request body. Both are fields so that tests can shrink the one and break
// the other.
type handler struct {
	maxBytes   int64
	converters []*converter
}

// reviewIn is an apiextensionsv1.ConversionReview as the API server sends it,
// with the objects kept raw: each is decoded once, straight into its Go
// type, instead of into a RawExtension and again through a scheme.
type reviewIn struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Request    *reviewRequest `json:"request"`
}

// reviewRequest is apiextensionsv1.ConversionRequest with raw objects.
type reviewRequest struct {
	UID               types.UID        `json:"uid"`
	DesiredAPIVersion string           `json:"desiredAPIVersion"`
	Objects           []jsontext.Value `json:"objects"`
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "a ConversionReview must be POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, status, err := readBody(w, r, h.maxBytes)
	if err == nil {
		status = http.StatusBadRequest
		var req *reviewRequest
		if req, err = decodeReview(r.Context(), body); err == nil {
			if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
				span.SetAttributes(attribute.Int("apigateway.objects", len(req.Objects)),
					attribute.String("apigateway.desired_api_version", req.DesiredAPIVersion))
			}
			out := convertRequest(r.Context(), h.converters, req)
			if errors.As(out.err, new(*inflight.Error)) {
				// An answer, not a failed conversion: the
				// API server's client (client-go) retries a
				// 429 that carries Retry-After.
				log.Info("Refusing a conversion request", "uid", req.UID, "reason", out.err.Error())
				inflight.WriteError(w, out.err)
				return
			}
			writeReview(w, req.UID, out)
			return
		}
		if errors.As(err, new(*inflight.Error)) {
			log.Info("Refusing a conversion request", "reason", err.Error())
			inflight.WriteError(w, err)
			return
		}
	}
	log.Error(err, "Rejecting a conversion request", "status", status)
	http.Error(w, err.Error(), status)
}

// readBody returns the whole request body, up to limit bytes, and the
// HTTP status for its error: as the webhook server's budget read it
// (inflight.Body), or, outside the budget, read here.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, error) {
	tooLarge := fmt.Errorf("the ConversionReview is larger than the limit of %d bytes", limit)
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, tooLarge
	}
	if body, ok := inflight.Body(r.Context()); ok {
		if int64(len(body)) > limit {
			return nil, http.StatusRequestEntityTooLarge, tooLarge
		}
		return body, http.StatusOK, nil
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		// One allocation: ReadFrom wants MinRead spare bytes to see EOF.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		// The limit that tripped: the webhook server's in-flight bound
		// may cut a body of unknown length off before this one.
		return nil, http.StatusRequestEntityTooLarge,
			fmt.Errorf("the ConversionReview is larger than the limit of %d bytes", min(maxErr.Limit, limit))
	}
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the ConversionReview: %w", err)
	}
	return buf.Bytes(), http.StatusOK, nil
}

// decodeReview decodes a ConversionReview body and returns its request.
// The request's objects are sub-slices of body, not copies: a review is as
// large as the LIST it converts, and a copy of every object would hold it
// all twice while it is converted.
func decodeReview(ctx context.Context, body []byte) (*reviewRequest, error) {
	var rv reviewIn
	if err := json.Unmarshal(body, &rv, reviewDecodeOptions, objectsInPlace(ctx, body)); err != nil {
		return nil, fmt.Errorf("decoding the ConversionReview: %w", err)
	}
	if rv.APIVersion != reviewAPIVersion || rv.Kind != reviewKind {
		return nil, fmt.Errorf("expected a %s %s, got apiVersion %q, kind %q", reviewAPIVersion, reviewKind, rv.APIVersion, rv.Kind)
	}
	if rv.Request == nil {
		return nil, errors.New("the ConversionReview has no request")
	}
	return rv.Request, nil
}

// objectsInPlace decodes each jsontext.Value of a review read from body as
// the span of body it was read from (the decoder reports where a value
// ends; its own buffer is not ours to keep). The value is capped at its
// end, so an append to it cannot write over the next object.
//
// The request (ctx) is charged for the slice of values as it grows, a
// batch of objects at a time: a review of "{}" objects is a slice header
// per three bytes.
func objectsInPlace(ctx context.Context, body []byte) json.Options {
	const batch = 1024
	// While append grows the slice, the old array and the new one, up
	// to twice as large, are both held.
	const perObject = int64(3 * unsafe.Sizeof(jsontext.Value{}))
	n := 0
	return json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *jsontext.Value) error {
		if n%batch == 0 {
			if err := inflight.Charge(ctx, batch*perObject); err != nil {
				return err
			}
		}
		n++
		val, err := dec.ReadValue()
		if err != nil {
			return err
		}
		end := dec.InputOffset()
		*v = jsontext.Value(body[end-int64(len(val)) : end : end])
		return nil
	}))
}

// writeReview writes the ConversionReview that answers the request uid
// with out. It assembles the JSON itself: the converted objects are JSON
// already, and encoding them through a struct would validate and copy
// every one of them again.
func writeReview(w http.ResponseWriter, uid types.UID, out converted) {
	result := successResult
	if out.err != nil {
		log.Error(out.err, "Failing a conversion request", "uid", uid)
		out.runs = nil
		result = failureResult(out.err)
	}
	// The uid was decoded as valid UTF-8, so quoting it cannot fail.
	head, _ := jsontext.AppendQuote([]byte(`{"apiVersion":"`+reviewAPIVersion+`","kind":"`+reviewKind+`","response":{"uid":`), uid)
	head = append(head, `,"convertedObjects":[`...)
	tail := append(append([]byte(`],"result":`), result...), "}}\n"...)

	size := len(head) + max(len(out.runs)-1, 0) + len(tail)
	for _, run := range out.runs {
		size += len(run)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	var err error
	write := func(p []byte) {
		if err == nil {
			_, err = w.Write(p)
		}
	}
	write(head)
	for i, run := range out.runs {
		if i > 0 {
			write([]byte{','})
		}
		write(run)
		// The connection has it: the heap need not while the rest is
		// written to a client that reads slowly.
		out.runs[i] = nil
	}
	write(tail)
	if err != nil {
		log.Error(err, "Writing the conversion response", "uid", uid)
	}
}

// successResult is the encoded result of a successful conversion, the
// same for every request.
var successResult = mustMarshal(metav1.Status{Status: metav1.StatusSuccess})

// failureResult is the encoded result of a failed conversion. Encoding a
// Status cannot fail: encodeOptions replace invalid UTF-8.
func failureResult(err error) []byte {
	return mustMarshal(metav1.Status{Status: metav1.StatusFailure, Message: err.Error()})
}

// mustMarshal encodes a value that cannot fail to encode.
func mustMarshal(v any) []byte {
	out, err := json.Marshal(v, encodeOptions)
	if err != nil {
		panic(err)
	}
	return out
}
