package inflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// inflightShare: requests in flight may hold a quarter of the
	// process's memory limit. The rest holds what the operator keeps
	// whatever arrives: its informer caches, which grow with the cluster,
	// the runtime, and the collector's headroom (with GOMEMLIMIT a live
	// heap close to the limit makes the garbage collector run nonstop).
	inflightShare = 4
	// fallbackBytes is the bound of a process with no memory limit.
	fallbackBytes = 64 << 20
	// MinBytes is the smallest bound that serves admission
	// requests of the largest gateways (100 routes, old and new object)
	// from the reserve below.
	MinBytes = 8 << 20
	// A request is small when it holds at most an eighth of the reserve,
	// which is an eighth of the bound: large requests may hold the other
	// seven eighths together, and the reserve stays for small ones (every
	// admission request and the conversion of a single object or a short
	// list), which are then answered however many large ones wait.
	reserveShare = 8
	// Another eighth of the bound is kept for the admission paths, which
	// with client authentication only the API server reaches: requests
	// to /convert, which anyone who reaches the port may send, hold at
	// most seven eighths, large ones six. An eighth holds some 30
	// admission reviews of the largest gateways (100 routes) at the
	// manifest's 128 MiB bound, and one at the MinBytes floor.
	admissionShare = 8
	// requestOverhead is what any request holds besides its body: the
	// connection's buffers, the handler's goroutine, decoded headers.
	requestOverhead = 32 << 10
	// defaultMaxWait is the longest a request waits for room. The API
	// server gives a conversion call 30 s and an admission call its
	// timeoutSeconds (sent as the timeout query parameter, of which a
	// request waits at most half, leaving the rest for the handler).
	defaultMaxWait = 10 * time.Second
	// retryAfter is the Retry-After of a 429, in seconds.
	retryAfter = "1"
)

// cgroupMemoryMax is where cgroup v2 shows the container's memory limit.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// DefaultBytes is the default bound on the bytes all webhook
// requests in flight hold together: a quarter of the process's memory
// limit, which is GOMEMLIMIT when set, else the cgroup v2 memory limit;
// 64 MiB when neither is set; never less than MinBytes.
func DefaultBytes() int64 {
	cgroup, _ := os.ReadFile(cgroupMemoryMax)
	return defaultBytes(debug.SetMemoryLimit(-1), string(cgroup))
}

// defaultBytes is DefaultBytes for a GOMEMLIMIT
// (math.MaxInt64 when unset) and the content of cgroup v2's memory.max
// ("max" when unlimited, empty when unreadable).
func defaultBytes(goMemLimit int64, cgroupMax string) int64 {
	limit := goMemLimit
	if limit <= 0 || limit == math.MaxInt64 {
		var err error
		if limit, err = strconv.ParseInt(strings.TrimSpace(cgroupMax), 10, 64); err != nil || limit <= 0 {
			return fallbackBytes
		}
	}
	return max(limit/inflightShare, MinBytes)
}

// Share is the part of the budget a path's requests may take.
type Share int

const (
	// Open paths (the conversion webhook: the API server presents no
	// client certificate to it, so it cannot require one) may take all
	// but the admission reserve.
	Open Share = iota
	// Admission paths may take all of the budget: what the open path
	// holds, however it is flooded, never starves them.
	Admission
)

// Budget is the bytes the requests in flight may hold together.
//
// Two parts of it are kept: an eighth for admission requests (Share
// Admission) and an eighth for small requests. A request to an open path
// never holds the admission reserve, and a large request never the small
// one, so an admission review is answered however many conversions are in
// flight, and a small request however many large ones.
type Budget struct {
	limit     int64 // what all requests may hold together
	admission int64 // the part of limit only admission requests may take
	reserve   int64 // the part of limit only small requests may take
	small     int64 // the most a small request holds
	maxWait   time.Duration

	mu   sync.Mutex
	held int64
	peak int64
	// freed is closed, and replaced, whenever bytes are given back: the
	// waiters then look again.
	freed chan struct{}
}

// New returns the budget of maxBytes bytes: 0 for DefaultBytes(), else at
// least MinBytes.
func New(maxBytes int64) (*Budget, error) {
	limit := maxBytes
	switch {
	case limit == 0:
		limit = DefaultBytes()
	case limit < MinBytes:
		return nil, fmt.Errorf("max in-flight bytes %d: must be 0 (the default) or at least %d", limit, MinBytes)
	}
	reserve := limit / reserveShare
	b := &Budget{limit: limit, admission: limit / admissionShare, reserve: reserve, small: reserve / reserveShare,
		maxWait: defaultMaxWait, freed: make(chan struct{})}
	published.budget.Store(b)
	return b, nil
}

// room is what all requests may hold together when one of share, which
// holds held bytes, takes weight more.
func (b *Budget) room(share Share, held, weight int64) int64 {
	room := b.limit
	if share != Admission {
		room -= b.admission
	}
	if held+weight > b.small {
		room -= b.reserve
	}
	return room
}

// largest is the most one request of share may hold.
func (b *Budget) largest(share Share) int64 { return b.room(share, 0, b.limit) }

// maxBody is the largest body a request of share whose handler holds
// copies bytes per byte may have: it must fit outside the reserves it may
// not take, with one copy more for the arrays the body's buffer outgrew
// while it was read (bufferSizes: at most a third of the body).
func (b *Budget) maxBody(copies int64, share Share) int64 {
	return (b.largest(share) - requestOverhead) / (copies + 1)
}

// Wrap returns next behind the budget, for a path of share whose handler
// holds copies bytes per byte of the request body.
//
// It reads the body itself, before next runs, into one buffer that grows
// as bytes arrive: the request is charged for each growth before it is
// made, so a request holds room for what its client sent, never for the
// Content-Length it declared. (The server's read deadline bounds how long
// the body may take; see Limits.) Once the body is whole, the request is
// charged copies-1 more per byte (the buffer is the first copy) and
// requestOverhead, its connection counts as working, which the connection
// gate never closes, and next runs with the body in memory (Body). The
// request's context carries its reservation, which next may grow with
// Charge; all of it is given back when next returns. The answer must keep
// leaving (see writeChunk), or next's write fails: a client that does not
// read cannot keep the reservation for the server's whole write timeout.
func (b *Budget) Wrap(next http.Handler, copies int64, share Share) http.Handler {
	maxBody := b.maxBody(copies, share)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server set the connection's write deadline when it read
		// the headers, just now: before the body, which may take long.
		w = paced(w, r)
		if r.ContentLength > maxBody {
			http.Error(w, fmt.Sprintf("the request body of %d bytes is larger than the %d bytes the webhook server accepts on %s: "+
				"all requests in flight together may hold %d bytes, and one to %s holds %d times its body",
				r.ContentLength, maxBody, r.URL.Path, b.limit, r.URL.Path, copies), http.StatusRequestEntityTooLarge)
			return
		}
		h := &hold{budget: b, share: share, deadline: time.Now().Add(b.wait(r))}
		defer h.releaseAll()
		body, err := h.readBody(r, maxBody)
		if err == nil {
			err = h.grow(r.Context(), (copies-1)*int64(len(body))+requestOverhead)
		}
		if err != nil {
			writeBodyError(w, r, err)
			return
		}
		if startWork(r) != nil {
			return // the connection is closed: nobody to answer
		}
		defer endWork(r)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		ctx := context.WithValue(context.WithValue(r.Context(), holdKey{}, h), bodyKey{}, body)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// writeBodyError answers a request whose body could not be read whole.
func writeBodyError(w http.ResponseWriter, r *http.Request, err error) {
	switch maxErr := (*http.MaxBytesError)(nil); {
	case errors.As(err, new(*Error)):
		WriteError(w, err)
	case errors.As(err, &maxErr):
		http.Error(w, fmt.Sprintf("the request body is larger than the %d bytes the webhook server accepts on %s", maxErr.Limit, r.URL.Path),
			http.StatusRequestEntityTooLarge)
	default:
		// A deadline passed, or the client left: the connection is
		// likely gone, but answer in case it is not.
		http.Error(w, fmt.Sprintf("reading the request body: %v", err), http.StatusBadRequest)
	}
}

type bodyKey struct{}

// Body is the body of the request ctx belongs to, as Wrap read it, and
// false outside Wrap. It is the one copy: handlers decode it in place.
func Body(ctx context.Context) ([]byte, bool) {
	body, ok := ctx.Value(bodyKey{}).([]byte)
	return body, ok
}

// wait is how long r may wait for room: maxWait, or half the timeout the
// API server sent with it when that is shorter.
func (b *Budget) wait(r *http.Request) time.Duration {
	timeout, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || timeout <= 0 {
		return b.maxWait
	}
	return min(b.maxWait, timeout/2)
}

// acquire reserves weight more bytes for a request of share that holds
// held already, waiting up to wait for room, and reports whether it did;
// it gives up at once when ctx ends (the client left).
func (b *Budget) acquire(ctx context.Context, share Share, held, weight int64, wait time.Duration) bool {
	freed, ok := b.tryAcquire(share, held, weight)
	if ok {
		return true
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		select {
		case <-freed:
		case <-timeout.C:
			return false
		case <-ctx.Done():
			return false
		}
		if freed, ok = b.tryAcquire(share, held, weight); ok {
			return true
		}
	}
}

// tryAcquire reserves weight more bytes for a request of share that
// holds held already, if they fit now (see room); if not, it returns the
// channel closed when bytes are next given back.
func (b *Budget) tryAcquire(share Share, held, weight int64) (<-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+weight > b.room(share, held, weight) {
		return b.freed, false
	}
	b.held += weight
	b.peak = max(b.peak, b.held)
	return nil, true
}

// release gives weight bytes back and wakes the waiters.
func (b *Budget) release(weight int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= weight
	close(b.freed)
	b.freed = make(chan struct{})
}

// Holding is the bytes the requests in flight hold now, and the most they
// have held together since the budget was made.
func (b *Budget) Holding() (now, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.peak
}
