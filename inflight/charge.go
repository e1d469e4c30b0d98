package inflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// hold is one request's reservation in its budget.
type hold struct {
	budget   *Budget
	share    Share
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
	if largest := b.largest(h.share); held+n > largest {
		return &Error{Code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf(
			"the request would hold %d bytes, more than the %d bytes any request to this path of the webhook server may hold: "+
				"all requests in flight together may hold %d bytes", held+n, largest, b.limit)}
	}
	if !b.acquire(ctx, h.share, held, n, time.Until(h.deadline)) {
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

// firstChunk is the least the buffer of a body larger than it starts
// with.
const firstChunk = 16 << 10

// bufferSizes are the capacities readBody's buffer takes, in order, for a
// body of at most limit bytes: limit/4^k, ..., limit/16, limit/4, limit,
// starting with the smallest that is at least firstChunk. Each is four
// times the one before, so the buffer never holds room for more than four
// times what came (four times firstChunk at first), and the arrays it
// outgrew add up to at most a third of limit.
func bufferSizes(limit int64) []int64 {
	sizes := []int64{limit}
	for s := limit / 4; s >= firstChunk; s /= 4 {
		sizes = append(sizes, s)
	}
	slices.Reverse(sizes)
	return sizes
}

// readBody reads r's body whole, at most limit bytes (exactly its
// Content-Length when it declares one), into one buffer that grows as
// bytes arrive (bufferSizes). Each growth is charged before it is made
// and stays charged: the arrays it replaced are garbage the collector may
// not have reclaimed yet. A body that would exceed the limit fails with
// an *http.MaxBytesError.
func (h *hold) readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength >= 0 {
		limit = r.ContentLength
	}
	sizes := bufferSizes(limit)
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == limit {
				return buf, expectEnd(r.Body, limit)
			}
			size := sizes[0]
			sizes = sizes[1:]
			if err := h.grow(r.Context(), size); err != nil {
				return nil, err
			}
			buf = append(make([]byte, 0, size), buf...)
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// expectEnd reads what follows the first limit bytes of a body: nothing,
// or the body is larger than the limit.
func expectEnd(body io.Reader, limit int64) error {
	var one [1]byte
	for {
		n, err := body.Read(one[:])
		switch {
		case n > 0:
			return &http.MaxBytesError{Limit: limit}
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}
