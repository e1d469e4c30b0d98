package inflight

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

// Budget is the bytes the requests in flight may hold together.
type Budget struct {
	limit   int64 // what all requests may hold together
	reserve int64 // the part of limit only small requests may take
	small   int64 // the most a small request holds
	maxWait time.Duration

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
	return &Budget{limit: limit, reserve: reserve, small: reserve / reserveShare,
		maxWait: defaultMaxWait, freed: make(chan struct{})}, nil
}

// maxBody is the largest body a request whose handler holds copies bytes
// per byte may have: it must fit outside the reserve.
func (b *Budget) maxBody(copies int64) int64 {
	return (b.limit - b.reserve - requestOverhead) / copies
}

// Wrap returns next behind the budget, for a handler that holds copies
// bytes per byte of the request body. The request's context carries its
// reservation, which next may grow with Charge.
func (b *Budget) Wrap(next http.Handler, copies int64) http.Handler {
	maxBody := b.maxBody(copies)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := r.ContentLength
		if size > maxBody {
			http.Error(w, fmt.Sprintf("the request body of %d bytes is larger than the %d bytes the webhook server accepts on %s: "+
				"all requests in flight together may hold %d bytes, and one to %s holds %d times its body",
				size, maxBody, r.URL.Path, b.limit, r.URL.Path, copies), http.StatusRequestEntityTooLarge)
			return
		}
		if size < 0 { // unknown (chunked): it may grow to the largest
			size = maxBody
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		h := &hold{budget: b, deadline: time.Now().Add(b.wait(r))}
		if err := h.grow(r.Context(), size*copies+requestOverhead); err != nil {
			WriteError(w, err)
			return
		}
		defer h.releaseAll()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holdKey{}, h)))
	})
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

// acquire reserves weight more bytes for a request that holds held
// already, waiting up to wait for room, and reports whether it did; it
// gives up at once when ctx ends (the client left).
func (b *Budget) acquire(ctx context.Context, held, weight int64, wait time.Duration) bool {
	freed, ok := b.tryAcquire(held, weight)
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
		if freed, ok = b.tryAcquire(held, weight); ok {
			return true
		}
	}
}

// tryAcquire reserves weight more bytes for a request that holds held
// already, if they fit now; if not, it returns the channel closed when
// bytes are next given back. A request that would hold more than a small
// one does not fit into the reserve.
func (b *Budget) tryAcquire(held, weight int64) (<-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit
	if held+weight > b.small {
		room -= b.reserve
	}
	if b.held+weight > room {
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
