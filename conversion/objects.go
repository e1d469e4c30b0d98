package conversion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/inflight"
)

var (
	// decodeOptions are json/v2's defaults, which read Kubernetes JSON as
	// apimachinery does (member names case-sensitive, unknown members
	// ignored) and reject what the API server never sends (duplicate
	// member names, invalid UTF-8) with an error instead of guessing.
	decodeOptions = json.DefaultOptionsV2()
	// encodeOptions make json/v2 write what encoding/json, and so
	// controller-runtime's handler, wrote: omitempty omits false and 0, nil
	// slices and maps are null, map keys are sorted, and invalid UTF-8 (which
	// decoding already rejects) becomes U+FFFD instead of an error.
	encodeOptions = json.JoinOptions(
		jsonv1.OmitEmptyWithLegacySemantics(true),
		json.FormatNilSliceAsNull(true),
		json.FormatNilMapAsNull(true),
		json.Deterministic(true),
		jsontext.AllowInvalidUTF8(true),
	)
)

// JSONOptions are the options the conversion webhook decodes and encodes
// objects with, for callers that must read and write them byte for byte as
// it does (the offline convert command).
func JSONOptions() (decode, encode json.Options) { return decodeOptions, encodeOptions }

// converter converts objects to one API version, from the other one.
type converter struct {
	from, to string // apiVersions
	// convert decodes one object of version from and appends it to buf,
	// converted to version to.
	convert func(raw jsontext.Value, buf *bytes.Buffer) error
	metrics *directionMetrics
}

// converters are the conversions between the two versions.
var converters = []*converter{
	{from: v1APIVersion, to: v1alpha1APIVersion, convert: toV1alpha1, metrics: downMetrics},
	{from: v1alpha1APIVersion, to: v1APIVersion, convert: toV1, metrics: upMetrics},
}

// converterTo returns the one of converters to the desired apiVersion.
func converterTo(converters []*converter, desired string) (*converter, error) {
	for _, c := range converters {
		if c.to == desired {
			return c, nil
		}
	}
	return nil, fmt.Errorf("cannot convert to desiredAPIVersion %q: APIGateway is served as %s and %s",
		desired, v1APIVersion, v1alpha1APIVersion)
}

// errWrongType reports an object whose apiVersion or kind is not the one
// its converter converts from.
var errWrongType = errors.New("not the source apiVersion and kind")

// toV1alpha1 is converter.convert from v1 to v1alpha1.
func toV1alpha1(raw jsontext.Value, buf *bytes.Buffer) error {
	src := &v1.APIGateway{}
	if err := json.Unmarshal(raw, src, decodeOptions); err != nil {
		return err
	}
	if src.APIVersion != v1APIVersion || src.Kind != gatewayKind {
		return errWrongType
	}
	dst := &v1alpha1.APIGateway{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1APIVersion, Kind: gatewayKind}}
	if err := V1ToV1alpha1(src, dst); err != nil {
		return err
	}
	return json.MarshalWrite(buf, dst, encodeOptions)
}

// toV1 is converter.convert from v1alpha1 to v1.
func toV1(raw jsontext.Value, buf *bytes.Buffer) error {
	src := &v1alpha1.APIGateway{}
	if err := json.Unmarshal(raw, src, decodeOptions); err != nil {
		return err
	}
	if src.APIVersion != v1alpha1APIVersion || src.Kind != gatewayKind {
		return errWrongType
	}
	dst := &v1.APIGateway{TypeMeta: metav1.TypeMeta{APIVersion: v1APIVersion, Kind: gatewayKind}}
	V1alpha1ToV1(src, dst)
	return json.MarshalWrite(buf, dst, encodeOptions)
}

// converted is the outcome of a ConversionRequest: the converted objects in
// request order, as comma-separated runs of JSON, or the error that fails
// the whole request (the API server takes all objects or none).
type converted struct {
	runs [][]byte
	err  error
}

// convertRequest converts every object of req to req.DesiredAPIVersion,
// charging the request's in-flight reservation (ctx) for what that holds.
func convertRequest(ctx context.Context, converters []*converter, req *reviewRequest) converted {
	c, err := converterTo(converters, req.DesiredAPIVersion)
	if err != nil {
		return converted{err: err}
	}
	workers := runtime.GOMAXPROCS(0)
	if len(req.Objects) < parallelThreshold || workers == 1 {
		run, err := c.convertRun(ctx, req.Objects, 0)
		return converted{runs: [][]byte{run}, err: err}
	}
	return c.convertParallel(ctx, req.Objects, workers)
}

// runSize is how many objects a worker converts at a time: small enough
// that the workers finish together, large enough that claiming a run costs
// nothing.
func runSize(n, workers int) int {
	return min(max(n/(workers*8), 16), 256)
}

// convertParallel converts objects in runs on workers goroutines, keeping
// their order. It reports the error of the first failing object, so the
// answer does not depend on scheduling.
func (c *converter) convertParallel(ctx context.Context, objects []jsontext.Value, workers int) converted {
	size := runSize(len(objects), workers)
	runs := make([][]byte, (len(objects)+size-1)/size)
	errs := make([]error, len(runs))
	var next atomic.Int64
	work := func() {
		for i := int(next.Add(1)) - 1; i < len(runs); i = int(next.Add(1)) - 1 {
			first := i * size
			runs[i], errs[i] = c.convertRun(ctx, objects[first:min(first+size, len(objects))], first)
		}
	}
	var wg sync.WaitGroup
	for range min(workers, len(runs)) - 1 {
		wg.Go(work)
	}
	work() // the request's goroutine is one of the workers
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return converted{err: err}
		}
	}
	return converted{runs: runs}
}

// convertRun converts objects, the first of which has index first in the
// request, into one comma-separated run of JSON. It stops at the first
// object that fails: the request fails with it.
func (c *converter) convertRun(ctx context.Context, objects []jsontext.Value, first int) ([]byte, error) {
	size := 0
	for _, raw := range objects {
		size += len(raw) + 1
	}
	// A converted object is about as large as its source.
	buf := bytes.NewBuffer(make([]byte, 0, outputAllowance(size)))
	done := 0
	defer func() { c.metrics.success.Add(float64(done)) }()
	for i, raw := range objects {
		if i > 0 {
			buf.WriteByte(',')
		}
		ok, err := c.convertOne(ctx, buf, raw, first+i)
		if err != nil {
			return nil, err
		}
		if ok {
			done++
		}
	}
	return trim(buf.Bytes()), nil
}

// trim returns run without the spare capacity growing its buffer left: a
// run that outgrew the estimate can hold twice its length, and the runs
// of a large review are all held until the whole response is written.
func trim(run []byte) []byte {
	if cap(run)-len(run) <= len(run)/8 {
		return run
	}
	return bytes.Clone(run)
}

// convertOne appends raw, the object at index in the request, to buf,
// converted, and reports whether it converted it. An object already in the
// target version (which the API server does not send) is appended
// unchanged.
//
// While raw is decoded the request holds the most it can decode into
// (inflight.DecodedBound): a few bytes of JSON can stand for a hundred
// times as many of Go values, which HeldPerRequestByte does not cover.
// Once converted, the values are garbage and only the output stays: the
// part of it beyond what HeldPerRequestByte allows stays charged, three
// times: the run's buffer grows by doubling, and is trimmed by a copy;
// and objectOverhead.
func (c *converter) convertOne(ctx context.Context, buf *bytes.Buffer, raw jsontext.Value, index int) (bool, error) {
	decoded := inflight.DecodedBound(raw)
	if err := inflight.Charge(ctx, decoded); err != nil {
		return false, c.objectError(raw, index, err)
	}
	start := time.Now()
	mark := buf.Len()
	err := c.safeConvert(raw, buf)
	inflight.Refund(ctx, decoded)
	if err == nil {
		c.metrics.duration.Observe(time.Since(start).Seconds())
		if err := inflight.Charge(ctx, objectOverhead+3*max(0, int64(buf.Len()-mark-outputAllowance(len(raw))))); err != nil {
			return false, c.objectError(raw, index, err)
		}
		return true, nil
	}
	buf.Truncate(mark)
	head, headErr := peek(raw)
	switch {
	case headErr == nil && head.Kind == gatewayKind && head.APIVersion == c.to:
		buf.Write(raw)
		return false, nil
	case headErr == nil && (head.Kind != gatewayKind || head.APIVersion != c.from):
		return false, fmt.Errorf("objects[%d]%s: apiVersion %q, kind %q is not an APIGateway of %s or %s",
			index, head.name(), head.APIVersion, head.Kind, v1APIVersion, v1alpha1APIVersion)
	}
	c.metrics.failure.Inc()
	return false, c.objectError(raw, index, err)
}

// objectOverhead is what each converted object holds beyond what its
// bytes are charged, measured rather than derived: a review of 5,000
// objects of 120 bytes (TestConvertHoldsNoMoreThanCharged's "many small
// v1 objects") held 1.1 to 1.6 KiB per object at the peak, some 300 bytes
// more than its input and output were charged, and more under load. A
// large list of real gateways (1.5 kB each) is charged a tenth more.
const objectOverhead = 512

// outputAllowance is the part of an object's output that
// HeldPerRequestByte counts, for an object of size bytes: what convertRun
// sizes its buffer for.
func outputAllowance(size int) int {
	return size + size/4
}

// objectError is err, which failed the conversion of raw, the object at
// index in the request, named. It wraps err: an *inflight.Error keeps its
// status.
func (c *converter) objectError(raw jsontext.Value, index int, err error) error {
	head, _ := peek(raw)
	return fmt.Errorf("converting objects[%d]%s from %s to %s: %w", index, head.name(), c.from, c.to, err)
}

// safeConvert is c.convert, with a panic turned into an error: one bad
// object must fail its request, not the webhook server.
func (c *converter) safeConvert(raw jsontext.Value, buf *bytes.Buffer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error(nil, "Conversion panicked", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return c.convert(raw, buf)
}

// objectHead is what identifies an object, for error messages.
type objectHead struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

// peek reads the head of an object that failed to convert.
func peek(raw jsontext.Value) (objectHead, error) {
	var head objectHead
	err := json.Unmarshal(raw, &head, decodeOptions)
	return head, err
}

// name is the object's name, with its namespace, for messages: empty when
// unknown.
func (h *objectHead) name() string {
	switch {
	case h.Metadata.Name == "":
		return ""
	case h.Metadata.Namespace == "":
		return fmt.Sprintf(" (%s)", h.Metadata.Name)
	}
	return fmt.Sprintf(" (%s/%s)", h.Metadata.Namespace, h.Metadata.Name)
}
