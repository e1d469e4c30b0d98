package webhooks

import (
	"net/http"

	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/apigateway-operator/inflight"
)

// admissionCopies is the bytes an admission request holds per byte of its
// body: the budget reads the body whole (inflight.Budget.Wrap), controller-runtime's
// admission.Webhook reads it again (growing its buffer as it reads) and
// decodes the review with a copy of the object, and the collector lags
// behind all of it; what the handler decodes from the object is charged
// apart, by chargeDecoded. A 1 MiB review of a legitimate gateway held
// 4.1 MiB at the peak on an idle machine and 6.2 MiB under a loaded CI
// run; TestAdmissionHoldsNoMoreThanCharged holds the two together to such
// measurements.
const admissionCopies = 6

// chargeDecoded charges an admission request for the most its body
// decodes into (inflight.DecodedBound) before controller-runtime and the
// handler decode it: a review of a few megabytes of "{}" routes would
// otherwise decode into gigabytes. The budget (inflight.Budget.Wrap) read
// the body, bounded and charged, before this runs.
func chargeDecoded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := inflight.Body(r.Context())
		if !ok {
			http.Error(w, "the AdmissionReview was not read through the webhook server's budget", http.StatusInternalServerError)
			return
		}
		if err := inflight.Charge(r.Context(), inflight.DecodedBound(body)); err != nil {
			logf.FromContext(r.Context()).Info("Refusing an admission request", "path", r.URL.Path, "reason", err.Error())
			inflight.WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
