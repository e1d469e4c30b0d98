package webhooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/apigateway-operator/inflight"
)

// admissionCopies is the bytes an admission request holds per byte of its
// body: chargeDecoded reads the body whole, controller-runtime's
// admission.Webhook reads it again (growing its buffer as it reads) and
// decodes the review with a copy of the object, and the collector lags
// behind all of it; what the handler decodes from the object is charged
// apart, by chargeDecoded. A 1 MiB review of a legitimate gateway held
// 4.1 MiB at the peak on an idle machine and 6.2 MiB under a loaded CI
// run; TestAdmissionHoldsNoMoreThanCharged holds the two together to such
// measurements.
const admissionCopies = 6

// chargeDecoded reads an admission request's body and charges the request
// for the most it decodes into (inflight.DecodedBound) before
// controller-runtime and the handler decode it: a review of a few
// megabytes of "{}" routes would otherwise decode into gigabytes. The
// body's size is bounded already: by its Content-Length, which the budget
// checked, or by the budget's limit on a body of unknown length.
func chargeDecoded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength) + bytes.MinRead)
		}
		if _, err := buf.ReadFrom(r.Body); err != nil {
			status := http.StatusBadRequest
			if errors.As(err, new(*http.MaxBytesError)) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, fmt.Sprintf("reading the AdmissionReview: %v", err), status)
			return
		}
		if err := inflight.Charge(r.Context(), inflight.DecodedBound(buf.Bytes())); err != nil {
			logf.FromContext(r.Context()).Info("Refusing an admission request", "path", r.URL.Path, "reason", err.Error())
			inflight.WriteError(w, err)
			return
		}
		r.Body = io.NopCloser(&buf)
		next.ServeHTTP(w, r)
	})
}
