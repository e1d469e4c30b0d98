package reloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"example.com/apigateway-operator/push"
)

// servePush takes configurations the operator pushes (PushPath): checked
// against the identity in the pod's current volume, then loaded as a
// changed volume would be. ctx is the reloader's: a push whose sender
// hangs up is still loaded, or refused, to the end.
func (r *reloader) servePush(ctx context.Context) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		steps := startSteps()
		if req.ContentLength > push.MaxEnvelope {
			http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
			return
		}
		// The slot is taken before the body is read, so that at most one
		// envelope is in memory whoever sends.
		if !r.takePushSlot(req.Context()) {
			// Closing the connection answers at once: otherwise the
			// server reads the unread body (up to 256 KiB) before it
			// writes the answer, and a sender that waits for the answer
			// before sending more waits out ReadTimeout.
			w.Header().Set("Connection", "close")
			r.log.Info("push", "code", http.StatusTooManyRequests, "message", "another push is being processed")
			http.Error(w, "another push is being processed; retry", http.StatusTooManyRequests)
			return
		}
		defer func() { <-r.pushing }()
		steps.done("queue")
		envelope, err := io.ReadAll(http.MaxBytesReader(w, req.Body, push.MaxEnvelope))
		var over *http.MaxBytesError
		switch {
		case errors.As(err, &over):
			http.Error(w, tooLarge, http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		steps.done("read")
		// Waiting for a volume change in progress, then nginx -t and the
		// reload, outlast the server's WriteTimeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(2*r.applyBound() + 5*time.Second))
		code, serial, msg := r.push(ctx, envelope, steps)
		r.log.Info("push", append([]any{"code", code, "serial", serial}, append(steps.attrs, "message", msg)...)...)
		if code != http.StatusOK {
			http.Error(w, msg, code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(r.snapshot())
	}
}

// pushQueueWait bounds how long a push waits in line for the push slot.
// The server's ReadTimeout (10 s) runs from the request's start, so the
// body has at least the other half of it (1 MiB in 5 s is 200 KiB/s).
const pushQueueWait = 5 * time.Second

// takePushSlot takes the push slot, waiting for it, body unread, in the
// one place in line while the sender waits, at most pushQueueWait; false
// when the place is taken too, or the wait ends. A change made right
// after the previous one is served finds that push still in hand (the
// old workers retiring, some 100 ms): it goes on as soon as it ends,
// where a 429 would cost the operator's backoff, 0.2 s or more.
func (r *reloader) takePushSlot(ctx context.Context) bool {
	select {
	case r.pushing <- struct{}{}:
		return true
	default:
	}
	select {
	case r.queued <- struct{}{}:
		defer func() { <-r.queued }()
	default:
		return false
	}
	wait := time.NewTimer(pushQueueWait)
	defer wait.Stop()
	select {
	case r.pushing <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-wait.C:
	}
	return false
}

var tooLarge = fmt.Sprintf("a push is at most %d bytes (push.MaxEnvelope)", push.MaxEnvelope)

// applyBound is how long loading one configuration may take: nginx -t,
// then the new workers' start and the old ones' retirement.
func (r *reloader) applyBound() time.Duration { return testTimeout + 2*r.cfg.ReloadTimeout }

// push checks envelope and loads its template, timing its steps; it
// returns the HTTP status, the envelope's serial once its signature is
// checked and, unless it is 200, why.
func (r *reloader) push(ctx context.Context, envelope []byte, steps *steps) (int, uint64, string) {
	code, p, msg := r.open(envelope)
	if code != http.StatusOK {
		return code, 0, msg
	}
	steps.done("verify")
	code, msg = r.load(ctx, p, steps)
	return code, p.Serial, msg
}

// open checks envelope's signature with the mounted identity's key and
// that it names this pod's gateway.
func (r *reloader) open(envelope []byte) (int, push.Payload, string) {
	id, err := r.pushIdentity()
	if err != nil {
		return http.StatusForbidden, push.Payload{}, "pushes are off: " + err.Error()
	}
	p, err := push.Open(id.PublicKey, envelope, push.MaxEnvelope)
	switch {
	case errors.Is(err, push.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, p, err.Error()
	case errors.Is(err, push.ErrMalformed):
		return http.StatusBadRequest, p, err.Error()
	case err != nil:
		return http.StatusForbidden, p, err.Error()
	case !id.Names(p):
		return http.StatusForbidden, p, fmt.Sprintf("the push is for %s/%s (uid %s); this pod serves %s/%s (uid %s)",
			p.Namespace, p.Name, p.UID, id.Namespace, id.Name, id.UID)
	}
	return http.StatusOK, p, ""
}

// load loads p's template unless it is not newer than what nginx serves.
func (r *reloader) load(ctx context.Context, p push.Payload, steps *steps) (int, string) {
	select {
	case r.applying <- struct{}{}:
		defer func() { <-r.applying }()
	case <-time.After(r.applyBound()):
		return http.StatusServiceUnavailable, "nginx is not serving yet, or another configuration is still loading; retry"
	case <-ctx.Done():
		return http.StatusServiceUnavailable, "shutting down"
	}
	steps.done("wait")
	o := offer{template: p.Template, uid: p.UID, serial: p.Serial}
	hash := Hash(p.Template)
	switch order := r.served.order(o); {
	case order == 0 && hash == r.snapshot().Loaded:
		// A retry of a push that took.
		return http.StatusOK, ""
	case order <= 0:
		return http.StatusConflict, fmt.Sprintf("serial %d is not newer than the served serial %d", p.Serial, r.served.serial)
	}
	r.reload(ctx, o, steps)
	return pushOutcome(r.snapshot(), hash, ctx.Err() != nil)
}

// pushIdentity is the identity in the pod's current volume.
func (r *reloader) pushIdentity() (push.Identity, error) {
	data, err := os.ReadFile(r.cfg.PushIdentity)
	if err != nil {
		return push.Identity{}, err
	}
	return push.ParseIdentity(data)
}

// pushOutcome is the answer to a push of hash, once loaded or refused,
// from the Status it left.
func pushOutcome(st Status, hash string, stopping bool) (int, string) {
	switch {
	case st.Loaded == hash:
		return http.StatusOK, ""
	case stopping:
		return http.StatusServiceUnavailable, "shutting down"
	case st.Refused != nil && st.Refused.Hash == hash && st.Refused.Reason == ReasonNginxTestFailed:
		return http.StatusUnprocessableEntity, st.Refused.Message
	case st.Refused != nil && st.Refused.Hash == hash:
		return http.StatusInternalServerError, st.Refused.Reason + ": " + st.Refused.Message
	default:
		return http.StatusInternalServerError, "the configuration was neither loaded nor refused"
	}
}
