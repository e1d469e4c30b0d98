package webhooks

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The webhook server is part of the cluster's control plane (admission
// fails closed, every v1alpha1 read converts through it), and any pod can
// reach it: one large request, or many, must not take it past its memory
// limit. So every request reserves the bytes it will hold before its
// handler runs, from one budget for all requests in flight together, and
// gives them back when the handler returns. A request holds its body
// several times over (the body read whole, what is decoded from it, the
// answer), so it reserves its Content-Length times the copies its handler
// holds, measured per handler, plus requestOverhead. What does not fit
// waits a little for room, then is refused with 429 and Retry-After (the
// API server retries webhook calls answered 429); a body that could never
// fit is refused with 413 at once.
//
// golang.org/x/sync/semaphore does not serve here: it wakes waiters in
// order, so a large request waiting at the head would hold every small one
// behind it, which is the starvation the reserve below prevents.

const (
	// inflightShare: requests in flight may hold a quarter of the
	// process's memory limit. The rest holds what the operator keeps
	// whatever arrives: its informer caches, which grow with the cluster,
	// the runtime, and the collector's headroom (with GOMEMLIMIT a live
	// heap close to the limit makes the garbage collector run nonstop).
	inflightShare = 4
	// fallbackInflightBytes is the bound of a process with no memory limit.
	fallbackInflightBytes = 64 << 20
	// MinInflightBytes is the smallest bound that serves admission
	// requests of the largest gateways (100 routes, old and new object)
	// from the reserve below.
	MinInflightBytes = 8 << 20
	// A request is small when it holds at most an eighth of the reserve,
	// which is an eighth of the bound: large requests may hold the other
	// seven eighths together, and the reserve stays for small ones (every
	// admission request and the conversion of a single object or a short
	// list), which are then answered however many large ones wait.
	reserveShare = 8
	// requestOverhead is what any request holds besides its body: the
	// connection's buffers, the handler's goroutine, decoded headers.
	requestOverhead = 32 << 10
	// maxInflightWait is the longest a request waits for room. The API
	// server gives a conversion call 30 s and an admission call its
	// timeoutSeconds (sent as the timeout query parameter, of which a
	// request waits at most half, leaving the rest for the handler).
	maxInflightWait = 10 * time.Second
	// retryAfter is the Retry-After of a 429, in seconds.
	retryAfter = "1"
)

// admissionCopies is the bytes an admission request holds per byte of its
// body: controller-runtime's admission.Webhook reads the body whole
// (growing its buffer as it reads), decodes the review with a copy of the
// object, and the handler decodes the object once more. Measured: 4.4 on
// a 6 MiB review that is allowed, 3.0 on one validation denies
// (TestInflightAdmissionCopies holds it to the measurement).
const admissionCopies = 5

// cgroupMemoryMax is where cgroup v2 shows the container's memory limit.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// DefaultMaxInflightBytes is the default bound on the bytes all webhook
// requests in flight hold together: a quarter of the process's memory
// limit, which is GOMEMLIMIT when set, else the cgroup v2 memory limit;
// 64 MiB when neither is set; never less than MinInflightBytes.
func DefaultMaxInflightBytes() int64 {
	cgroup, _ := os.ReadFile(cgroupMemoryMax)
	return defaultInflightBytes(debug.SetMemoryLimit(-1), string(cgroup))
}

// defaultInflightBytes is DefaultMaxInflightBytes for a GOMEMLIMIT
// (math.MaxInt64 when unset) and the content of cgroup v2's memory.max
// ("max" when unlimited, empty when unreadable).
func defaultInflightBytes(goMemLimit int64, cgroupMax string) int64 {
	limit := goMemLimit
	if limit <= 0 || limit == math.MaxInt64 {
		var err error
		if limit, err = strconv.ParseInt(strings.TrimSpace(cgroupMax), 10, 64); err != nil || limit <= 0 {
			return fallbackInflightBytes
		}
	}
	return max(limit/inflightShare, MinInflightBytes)
}

// inflight is the budget of bytes the requests in flight hold together.
type inflight struct {
	limit   int64 // what all requests may hold together
	reserve int64 // the part of limit only small requests may take
	small   int64 // the most a small request holds
	maxWait time.Duration

	mu   sync.Mutex
	held int64
	// freed is closed, and replaced, whenever bytes are given back: the
	// waiters then look again.
	freed chan struct{}
}

// newInflight returns the budget Options.MaxInflightBytes asks for.
func newInflight(maxInflightBytes int64) (*inflight, error) {
	limit := maxInflightBytes
	switch {
	case limit == 0:
		limit = DefaultMaxInflightBytes()
	case limit < MinInflightBytes:
		return nil, fmt.Errorf("max in-flight bytes %d: must be 0 (the default) or at least %d", limit, MinInflightBytes)
	}
	reserve := limit / reserveShare
	return &inflight{limit: limit, reserve: reserve, small: reserve / reserveShare,
		maxWait: maxInflightWait, freed: make(chan struct{})}, nil
}

// maxBody is the largest body a request whose handler holds copies bytes
// per byte may have: it must fit outside the reserve.
func (l *inflight) maxBody(copies int64) int64 {
	return (l.limit - l.reserve - requestOverhead) / copies
}

// wrap returns next behind the budget, for a handler that holds copies
// bytes per byte of the request body.
func (l *inflight) wrap(next http.Handler, copies int64) http.Handler {
	maxBody := l.maxBody(copies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := r.ContentLength
		if size > maxBody {
			http.Error(w, fmt.Sprintf("the request body of %d bytes is larger than the %d bytes the webhook server accepts on %s: "+
				"all requests in flight together may hold %d bytes, and one to %s holds %d times its body",
				size, maxBody, r.URL.Path, l.limit, r.URL.Path, copies), http.StatusRequestEntityTooLarge)
			return
		}
		if size < 0 { // unknown (chunked): it may grow to the largest
			size = maxBody
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		weight := size*copies + requestOverhead
		if !l.acquire(r.Context(), weight, l.wait(r)) {
			w.Header().Set("Retry-After", retryAfter)
			http.Error(w, fmt.Sprintf("the webhook server is holding all the memory it may for requests in flight (%d bytes): "+
				"retry later", l.limit), http.StatusTooManyRequests)
			return
		}
		defer l.release(weight)
		next.ServeHTTP(w, r)
	})
}

// wait is how long r may wait for room: maxWait, or half the timeout the
// API server sent with it when that is shorter.
func (l *inflight) wait(r *http.Request) time.Duration {
	timeout, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || timeout <= 0 {
		return l.maxWait
	}
	return min(l.maxWait, timeout/2)
}

// acquire reserves weight bytes, waiting up to wait for room, and reports
// whether it did; it gives up at once when ctx ends (the client left).
func (l *inflight) acquire(ctx context.Context, weight int64, wait time.Duration) bool {
	freed, ok := l.tryAcquire(weight)
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
		if freed, ok = l.tryAcquire(weight); ok {
			return true
		}
	}
}

// tryAcquire reserves weight bytes if they fit now; if not, it returns the
// channel closed when bytes are next given back.
func (l *inflight) tryAcquire(weight int64) (<-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := l.limit
	if weight > l.small {
		room -= l.reserve
	}
	if l.held+weight > room {
		return l.freed, false
	}
	l.held += weight
	return nil, true
}

// release gives weight bytes back and wakes the waiters.
func (l *inflight) release(weight int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held -= weight
	close(l.freed)
	l.freed = make(chan struct{})
}

// holding is the bytes the requests in flight hold.
func (l *inflight) holding() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}
