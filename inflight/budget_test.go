package inflight

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultInflightBytes(t *testing.T) {
	const mi = 1 << 20
	tests := map[string]struct {
		goMemLimit int64
		cgroupMax  string
		want       int64
	}{
		"GOMEMLIMIT":                        {goMemLimit: 230 * mi, cgroupMax: "268435456\n", want: 230 * mi / 4},
		"cgroup limit without GOMEMLIMIT":   {goMemLimit: math.MaxInt64, cgroupMax: "268435456\n", want: 64 * mi},
		"no limit at all":                   {goMemLimit: math.MaxInt64, cgroupMax: "max\n", want: fallbackBytes},
		"no cgroup v2":                      {goMemLimit: math.MaxInt64, cgroupMax: "", want: fallbackBytes},
		"a limit too small for the floor":   {goMemLimit: 16 * mi, want: MinBytes},
		"a large cgroup limit":              {goMemLimit: math.MaxInt64, cgroupMax: "4294967296", want: 1 << 30},
		"garbage in memory.max":             {goMemLimit: math.MaxInt64, cgroupMax: "lots", want: fallbackBytes},
		"GOMEMLIMIT 0 (as good as unset)":   {goMemLimit: 0, cgroupMax: "268435456", want: 64 * mi},
		"GOMEMLIMIT wins over the cgroup's": {goMemLimit: 1 << 30, cgroupMax: "268435456", want: 1 << 28},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, defaultBytes(tc.goMemLimit, tc.cgroupMax))
		})
	}
}

func TestNewInflightOptions(t *testing.T) {
	l, err := New(0)
	require.NoError(t, err)
	assert.Equal(t, DefaultBytes(), l.limit)

	l, err = New(100 << 20)
	require.NoError(t, err)
	assert.Equal(t, int64(100<<20), l.limit)
	assert.Equal(t, int64(100<<20)/8, l.reserve)
	assert.Equal(t, int64(100<<20)/8, l.admission)

	for _, bad := range []int64{-1, 1, MinBytes - 1} {
		_, err := New(bad)
		assert.ErrorContains(t, err, "must be 0 (the default) or at least", "%d", bad)
	}
}

func TestInflightWait(t *testing.T) {
	tests := map[string]struct {
		query string
		want  time.Duration
	}{
		"no timeout":                   {query: "", want: defaultMaxWait},
		"the API server's admission":   {query: "?timeout=10s", want: 5 * time.Second},
		"a long timeout":               {query: "?timeout=1m", want: defaultMaxWait},
		"not a duration":               {query: "?timeout=soon", want: defaultMaxWait},
		"negative":                     {query: "?timeout=-3s", want: defaultMaxWait},
		"a short one, as webhooks set": {query: "?timeout=2s", want: time.Second},
	}
	l, err := New(MinBytes)
	require.NoError(t, err)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, l.wait(httptest.NewRequest(http.MethodPost, "/x"+tc.query, nil)))
		})
	}
}

// inflightServer serves, on 127.0.0.1, a handler behind a budget of
// MinBytes, for requests to an open path that hold copies bytes per byte,
// and /admission/ paths behind the same budget with share Admission:
// /hold (and /admission/hold) reads the body and answers once unblock is
// closed (or the client leaves); anything else reads the body and
// answers at once. entered receives the body size of every request the
// budget let through to a /hold.
type inflightServer struct {
	*httptest.Server
	budget  *Budget
	copies  int64
	entered chan int
	unblock chan struct{}
}

func newInflightServer(t *testing.T, copies int64, maxWait time.Duration) *inflightServer {
	t.Helper()
	budget, err := New(MinBytes)
	require.NoError(t, err)
	budget.maxWait = maxWait
	s := &inflightServer{budget: budget, copies: copies, entered: make(chan int, 16), unblock: make(chan struct{})}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/hold") {
			s.entered <- int(n)
			select {
			case <-s.unblock:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "read %d bytes", n)
	})
	mux := http.NewServeMux()
	mux.Handle("/", budget.Wrap(h, copies, Open))
	mux.Handle("/admission/", budget.Wrap(h, copies, Admission))
	s.Server = httptest.NewUnstartedServer(mux)
	// As the webhook server bounds a request's arrival by default
	// (Limits). A tighter bound made the requests the tests send, a
	// megabyte or more, time out arriving under load (a 400 where the
	// test waited for its 429): arrival is not what these tests are about.
	s.Config.ReadTimeout = DefaultReadTimeout
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// weight is what a request of size bytes, its body read whole, holds.
func (s *inflightServer) weight(size int64) int64 {
	var buffers int64
	for _, b := range bufferSizes(size) {
		buffers += b
	}
	return buffers + (s.copies-1)*size + requestOverhead
}

// post sends size bytes to path and returns the answer's status, its
// Retry-After and body.
func (s *inflightServer) post(ctx context.Context, path string, size int) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, bytes.NewReader(make([]byte, size)))
	if err != nil {
		return 0, "", "", err
	}
	res, err := s.Client().Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Retry-After"), string(body), err
}

// held is the bytes the budget holds now.
func (s *inflightServer) held() int64 {
	now, _ := s.budget.Holding()
	return now
}

// waitHolding waits until the budget holds want bytes.
func (s *inflightServer) waitHolding(t *testing.T, want int64) {
	t.Helper()
	require.Eventually(t, func() bool { return s.held() == want }, 10*time.Second, 5*time.Millisecond,
		"holding %d bytes, want %d", s.held(), want)
}

// checkNoLeak fails unless, once every client has its answer, no
// goroutine is left in the budget or the test's handler. (Counting all
// goroutines would count the suite's control plane connections too; and
// it must look before closing the server, which waits for its handlers.)
func checkNoLeak(t *testing.T) {
	t.Helper()
	var left []string
	ok := assert.Eventually(t, func() bool {
		buf := make([]byte, 4<<20)
		left = nil
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "inflight.(*Budget).") || strings.Contains(g, "inflight.newInflightServer") {
				left = append(left, g)
			}
		}
		return len(left) == 0
	}, 10*time.Second, 10*time.Millisecond)
	if !ok {
		t.Fatalf("goroutines left:\n%s", strings.Join(left, "\n\n"))
	}
}

// TestInflightLargeRequestsWaitThen429WhileSmallAreAnswered fills most of
// the budget outside the reserves with one large request: the next large
// ones wait and get 429 with Retry-After, while small requests keep being
// answered from the reserve; once the first completes the budget is whole
// again and large requests pass.
func TestInflightLargeRequestsWaitThen429WhileSmallAreAnswered(t *testing.T) {
	const copies = 2
	s := newInflightServer(t, copies, 300*time.Millisecond)
	largest := s.budget.maxBody(copies, Open)

	held := make(chan int, 1)
	go func() {
		code, _, _, _ := s.post(context.Background(), "/hold", int(largest))
		held <- code
	}()
	require.Equal(t, int(largest), <-s.entered)
	s.waitHolding(t, s.weight(largest))
	require.Greater(t, s.weight(largest)+s.weight(1<<20), s.budget.largest(Open), "no room for another large request")

	var wg sync.WaitGroup
	refused := make(chan string, 3)
	for range 3 {
		wg.Go(func() {
			code, retry, body, err := s.post(context.Background(), "/", 1<<20)
			assert.NoError(t, err)
			assert.Equal(t, http.StatusTooManyRequests, code, body)
			assert.Equal(t, "1", retry)
			refused <- body
		})
	}
	// Small requests pass while the large ones wait and after.
	for i := range 50 {
		code, _, body, err := s.post(context.Background(), "/", 2<<10)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "small request %d: %s", i, body)
	}
	wg.Wait()
	close(refused)
	for body := range refused {
		assert.Contains(t, body, fmt.Sprintf("the webhook server is holding all the memory it may for requests in flight (%d bytes): retry later", MinBytes))
	}
	s.waitHolding(t, s.weight(largest))

	close(s.unblock)
	require.Equal(t, http.StatusOK, <-held)
	s.waitHolding(t, 0)
	code, _, body, err := s.post(context.Background(), "/", int(largest))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, body)
	s.waitHolding(t, 0)
	checkNoLeak(t)
}

// TestInflightAdmissionReserve: requests to the open path, however many,
// never hold the part of the budget kept for admission: with the open
// share full, open requests get 429 and admission requests of the same
// size are answered.
func TestInflightAdmissionReserve(t *testing.T) {
	const copies = 2
	s := newInflightServer(t, copies, 200*time.Millisecond)
	const size = 16 << 10 // a small request, which may take the small reserve
	w := s.weight(size)
	require.LessOrEqual(t, w, s.budget.small)
	var holding []chan int
	for s.held()+w <= s.budget.room(Open, 0, w) {
		done := make(chan int, 1)
		go func() {
			code, _, _, _ := s.post(context.Background(), "/hold", size)
			done <- code
		}()
		select {
		case <-s.entered:
		case code := <-done:
			t.Fatalf("request %d of the open share: %d", len(holding), code)
		}
		holding = append(holding, done)
	}
	require.NotEmpty(t, holding)
	code, _, body, err := s.post(context.Background(), "/", size)
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, code, "the open share is full: %s", body)
	for i := range 3 {
		code, _, body, err := s.post(context.Background(), "/admission/ok", size)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, code, "admission request %d: %s", i, body)
	}
	close(s.unblock)
	for _, done := range holding {
		require.Equal(t, http.StatusOK, <-done)
	}
	s.waitHolding(t, 0)
	checkNoLeak(t)
}

// TestInflightSlowBodyHoldsWhatArrived: a client that declares the
// largest body and sends a few bytes holds room for those (the first
// chunk), not for what it declared, until the server's read deadline
// cuts it off; meanwhile large requests are answered.
func TestInflightSlowBodyHoldsWhatArrived(t *testing.T) {
	const copies = 3
	s := newInflightServer(t, copies, 200*time.Millisecond)
	largest := s.budget.maxBody(copies, Open)

	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/hold", pr)
	require.NoError(t, err)
	req.ContentLength = largest
	slow := make(chan int, 1) // its status, 0 when the connection broke
	go func() {
		res, err := s.Client().Do(req)
		if err != nil {
			slow <- 0
			return
		}
		_ = res.Body.Close()
		slow <- res.StatusCode
	}()
	_, err = pw.Write(make([]byte, 1024))
	require.NoError(t, err)
	first := bufferSizes(largest)[0]
	s.waitHolding(t, first)
	require.Less(t, first, int64(4*firstChunk))

	code, _, body, err := s.post(context.Background(), "/", int(largest))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "the largest request beside a slow one: %s", body)

	// The server's read deadline (DefaultReadTimeout) ends the slow request.
	assert.NotEqual(t, http.StatusOK, <-slow)
	_ = pw.Close()
	s.waitHolding(t, 0)
	assert.Empty(t, s.entered, "the slow request never reached the handler")
	checkNoLeak(t)
}

// TestInflightWaiterGetsRoom: a large request that waits is let through
// as soon as the one before it completes, within its wait.
func TestInflightWaiterGetsRoom(t *testing.T) {
	const copies = 3
	s := newInflightServer(t, copies, 10*time.Second)
	largest := int(s.budget.maxBody(copies, Open))
	first := make(chan int, 1)
	go func() {
		code, _, _, _ := s.post(context.Background(), "/hold", largest)
		first <- code
	}()
	<-s.entered
	second := make(chan int, 1)
	go func() {
		code, _, _, _ := s.post(context.Background(), "/hold", largest)
		second <- code
	}()
	// The second waits for room: it reaches the handler only once the
	// first has left it.
	select {
	case <-s.entered:
		t.Fatal("two requests that do not fit together were in the handler at once")
	case <-time.After(200 * time.Millisecond):
	}
	s.unblock <- struct{}{}
	require.Equal(t, http.StatusOK, <-first)
	require.Equal(t, largest, <-s.entered)
	close(s.unblock)
	require.Equal(t, http.StatusOK, <-second)
	s.waitHolding(t, 0)
}

func TestInflightRefusesOversizedAtOnce(t *testing.T) {
	const copies = 4
	s := newInflightServer(t, copies, time.Minute)
	largest := int(s.budget.maxBody(copies, Open))

	t0 := time.Now()
	code, _, body, err := s.post(context.Background(), "/hold", largest+1)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	assert.Less(t, time.Since(t0), 10*time.Second, "refused at once, not after waiting")
	assert.Contains(t, body, fmt.Sprintf("the request body of %d bytes is larger than the %d bytes the webhook server accepts on /hold: "+
		"all requests in flight together may hold %d bytes, and one to /hold holds 4 times its body", largest+1, largest, MinBytes))
	assert.Empty(t, s.entered, "the handler never saw it")
	s.waitHolding(t, 0)

	code, _, body, err = s.post(context.Background(), "/", largest)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, body)
}

// TestInflightUnknownLength: a chunked body holds room for what arrived,
// and one longer than the largest body is cut off there with 413.
func TestInflightUnknownLength(t *testing.T) {
	const copies = 2
	s := newInflightServer(t, copies, 200*time.Millisecond)
	largest := s.budget.maxBody(copies, Open)
	chunked := func(ctx context.Context, path string, size int64) (int, error) {
		// A reader of unknown length makes the client send it chunked.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, io.MultiReader(bytes.NewReader(make([]byte, size))))
		if err != nil {
			return 0, err
		}
		res, err := s.Client().Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		return res.StatusCode, nil
	}

	held := make(chan int, 1)
	go func() {
		code, _ := chunked(context.Background(), "/hold", 10)
		held <- code
	}()
	require.Equal(t, 10, <-s.entered)
	s.waitHolding(t, bufferSizes(largest)[0]+(copies-1)*10+requestOverhead)
	close(s.unblock)
	require.Equal(t, http.StatusOK, <-held)
	s.waitHolding(t, 0)

	code, err := chunked(context.Background(), "/", largest)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	code, err = chunked(context.Background(), "/", largest+1)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code)
	s.waitHolding(t, 0)
}

// TestInflightClientCancel: a client that leaves while its request is in
// the handler gives its bytes back at once; one that leaves while its
// request waits for room gives back what it held, and no goroutine is
// left behind.
func TestInflightClientCancel(t *testing.T) {
	const copies = 2
	s := newInflightServer(t, copies, 500*time.Millisecond)
	largest := s.budget.maxBody(copies, Open)
	weight := s.weight(largest)

	inHandler, leave := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, _, err := s.post(inHandler, "/hold", int(largest))
		done <- err
	}()
	<-s.entered
	s.waitHolding(t, weight)

	waiting, leaveWaiting := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, _, _, err := s.post(waiting, "/hold", int(largest))
		waited <- err
	}()
	select {
	case <-s.entered:
		t.Fatal("a request that does not fit reached the handler")
	case <-time.After(100 * time.Millisecond):
	}
	leaveWaiting()
	require.ErrorIs(t, <-waited, context.Canceled)
	s.waitHolding(t, weight)

	leave()
	require.ErrorIs(t, <-done, context.Canceled)
	s.waitHolding(t, 0)
	checkNoLeak(t)
}

func TestBufferSizes(t *testing.T) {
	tests := map[string]struct {
		limit int64
		want  []int64
	}{
		"empty":                {limit: 0, want: []int64{0}},
		"smaller than a chunk": {limit: 100, want: []int64{100}},
		"a chunk":              {limit: firstChunk, want: []int64{firstChunk}},
		"four chunks":          {limit: 4 * firstChunk, want: []int64{firstChunk, 4 * firstChunk}},
		"just under four":      {limit: 4*firstChunk - 1, want: []int64{4*firstChunk - 1}},
		"1 MiB":                {limit: 1 << 20, want: []int64{16 << 10, 64 << 10, 256 << 10, 1 << 20}},
		"1,000,000 bytes":      {limit: 1e6, want: []int64{62500, 250000, 1e6}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := bufferSizes(tc.limit)
			assert.Equal(t, tc.want, got)
			var outgrown int64
			for i, s := range got[:len(got)-1] {
				outgrown += s
				assert.LessOrEqual(t, got[i+1], 4*s, "grows at most fourfold")
			}
			assert.LessOrEqual(t, outgrown, tc.limit/3, "the arrays outgrown")
		})
	}
}
