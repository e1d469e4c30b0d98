package testenv

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// HeapGrowth runs serve with GOGC at gcPercent and returns the peak size
// of the heap's objects (live, or dead and not yet collected) above what
// it was before: sampled every 100 µs (less often when serve keeps every
// CPU busy), and whenever serve calls sample, at the moments it knows to
// matter. A low gcPercent collects so often that the heap holds little
// garbage: the peak is then close to what serve really holds alive.
func HeapGrowth(gcPercent int, serve func(sample func())) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	p := &heapPeak{sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	runtime.GC()
	runtime.GC() // the second finishes sweeping what the first freed
	base := p.read()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			p.read()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	serve(func() { p.read() })
	p.read()
	close(stop)
	wg.Wait()
	return p.peak - min(base, p.peak)
}

// heapPeak keeps the largest heap size it read.
type heapPeak struct {
	mu     sync.Mutex
	sample []metrics.Sample
	peak   uint64
}

func (p *heapPeak) read() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	metrics.Read(p.sample)
	v := p.sample[0].Value.Uint64()
	p.peak = max(p.peak, v)
	return v
}

// DiscardResponse is an http.ResponseWriter that keeps only the status and
// the size of the body, as a connection holds no more than its buffers
// (an httptest.ResponseRecorder would hold a copy of the response, which
// HeapGrowth would count). OnWrite, when set, is called before the first
// write: the moment a handler holds its whole answer.
type DiscardResponse struct {
	Code    int
	Size    int
	OnWrite func()
	header  http.Header
}

// Header implements http.ResponseWriter.
func (w *DiscardResponse) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

// Write implements http.ResponseWriter.
func (w *DiscardResponse) Write(p []byte) (int, error) {
	if w.Size == 0 && w.OnWrite != nil {
		w.OnWrite()
	}
	if w.Code == 0 {
		w.Code = http.StatusOK
	}
	w.Size += len(p)
	return len(p), nil
}

// WriteHeader implements http.ResponseWriter.
func (w *DiscardResponse) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
}
