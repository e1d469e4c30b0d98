package inflight

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// hold is one request's reservation in its budget.
type hold struct {
	budget   *Budget
	deadline time.Time // the most the request waits for room, all charges together

	mu   sync.Mutex // conversion workers charge one request concurrently
	held int64
}

type holdKey struct{}

// Error is a request the budget cannot take: Code is 413 when it could
// never fit, 429 when it does not fit now.
type Error struct {
	Code int
	msg  string
}

func (e *Error) Error() string { return e.msg }

// WriteError answers err with the status of the *Error it wraps (and
// Retry-After on 429), or 500 when it wraps none.
func WriteError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if e := (*Error)(nil); errors.As(err, &e) {
		code = e.Code
	}
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfter)
	}
	http.Error(w, err.Error(), code)
}

// Charge grows the reservation of the request ctx belongs to by n bytes,
// waiting for room as the request did, and fails with an *Error when the
// request would hold more than any request may, or no room comes. A
// context without a reservation (a handler called outside Wrap) is charged
// nothing. The bytes stay reserved until the request ends, or Refund.
func Charge(ctx context.Context, n int64) error {
	h, ok := ctx.Value(holdKey{}).(*hold)
	if !ok {
		return nil
	}
	return h.grow(ctx, n)
}

// Refund gives back n bytes Charge reserved for the request ctx belongs
// to, once the values they stood for are garbage.
func Refund(ctx context.Context, n int64) {
	if h, ok := ctx.Value(holdKey{}).(*hold); ok && n > 0 {
		h.mu.Lock()
		h.held -= n
		h.mu.Unlock()
		h.budget.release(n)
	}
}

func (h *hold) grow(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	b := h.budget
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	if held+n > b.limit-b.reserve {
		return &Error{Code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf(
			"the request would hold %d bytes, more than the %d bytes any request to the webhook server may hold: "+
				"all requests in flight together may hold %d bytes", held+n, b.limit-b.reserve, b.limit)}
	}
	if !b.acquire(ctx, held, n, time.Until(h.deadline)) {
		return &Error{Code: http.StatusTooManyRequests, msg: fmt.Sprintf(
			"the webhook server is holding all the memory it may for requests in flight (%d bytes): retry later", b.limit)}
	}
	h.mu.Lock()
	h.held += n
	h.mu.Unlock()
	return nil
}

// releaseAll gives back everything the request holds.
func (h *hold) releaseAll() {
	h.mu.Lock()
	n := h.held
	h.held = 0
	h.mu.Unlock()
	if n > 0 {
		h.budget.release(n)
	}
}
