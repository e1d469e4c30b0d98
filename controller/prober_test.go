package controller

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/reloader"
)

// fakePods answers the status port of every pod with loaded, or, while
// hold is set, not before the read's deadline.
type fakePods struct {
	srv    *httptest.Server
	mu     sync.Mutex
	loaded string
	hold   bool
	asked  atomic.Int32
}

func newFakePods(t *testing.T, loaded string) *fakePods {
	t.Helper()
	f := &fakePods{loaded: loaded}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.asked.Add(1)
		f.mu.Lock()
		st, hold := reloader.Status{Loaded: f.loaded}, f.hold
		f.mu.Unlock()
		if hold {
			<-r.Context().Done()
			return
		}
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePods) set(loaded string, hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loaded, f.hold = loaded, hold
}

// dial sends every pod's status port to f.
func (f *fakePods) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	return (&net.Dialer{}).DialContext(ctx, network, f.srv.Listener.Addr().String())
}

// startProber runs a prober on f's pods until the test ends; now is its
// clock.
func startProber(t *testing.T, f *fakePods, now func() time.Time) *prober {
	t.Helper()
	p := newProber(newPodStatusClient(f.dial), 0)
	p.now = now
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// awaitEvent waits for the prober to ask for a reconcile of key.
func awaitEvent(t *testing.T, p *prober, key client.ObjectKey) {
	t.Helper()
	select {
	case e := <-p.events:
		assert.Equal(t, key, client.ObjectKeyFromObject(e.Object))
	case <-time.After(waitFor):
		t.Fatal("the prober asked for no reconcile")
	}
}

// noEvent checks that the reads started so far are over and asked for
// no reconcile: they are over once the prober holds no read in flight.
func noEvent(t *testing.T, p *prober) {
	t.Helper()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, g := range p.gateways {
			if g.inFlight {
				return false
			}
		}
		return true
	}, waitFor, time.Millisecond)
	select {
	case e := <-p.events:
		t.Fatalf("an unchanged read asked for a reconcile of %s", e.Object.GetName())
	default:
	}
}

// TestProber: a reconcile gets the last reading of each pod without
// waiting; a read that finds something new asks for a reconcile, one that
// finds the same does not; the same pods are not read again within
// probeInterval for the same configuration, and a gateway has one read in
// flight at most.
func TestProber(t *testing.T) {
	pods := newFakePods(t, "old")
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	p := startProber(t, pods, now)
	key := client.ObjectKey{Namespace: "ns", Name: "gw"}
	targets := []podTarget{{podReport{name: "a", ready: true}, "10.0.0.1"}, {podReport{name: "b", ready: true}, "10.0.0.2"}}
	loaded := func(reports []podReport) []string {
		var out []string
		for _, r := range reports {
			switch {
			case r.unread:
				out = append(out, r.name+" unread")
			case r.err != nil:
				out = append(out, r.name+" error")
			default:
				out = append(out, r.name+" "+r.status.Loaded)
			}
		}
		return out
	}

	assert.Equal(t, []string{"a unread", "b unread"}, loaded(p.reports(key, "new", targets)), "nothing read yet")
	awaitEvent(t, p, key)
	assert.Equal(t, []string{"a old", "b old"}, loaded(p.reports(key, "new", targets)))
	noEvent(t, p)
	assert.Equal(t, int32(2), pods.asked.Load(), "read again within probeInterval")

	advance(probeInterval)
	pods.set("new", false)
	assert.Equal(t, []string{"a old", "b old"}, loaded(p.reports(key, "new", targets)), "the last reading, until the next arrives")
	awaitEvent(t, p, key)
	assert.Equal(t, []string{"a new", "b new"}, loaded(p.reports(key, "new", targets)))
	noEvent(t, p)

	t.Run("a reading for another configuration that says this one is loaded is not taken", func(t *testing.T) {
		// The spec changes and changes back before the pods see it.
		advance(probeInterval)
		assert.Equal(t, []string{"a new", "b new"}, loaded(p.reports(key, "newer", targets)))
		awaitEvent(t, p, key)
		advance(probeInterval)
		assert.Equal(t, []string{"a unread", "b unread"}, loaded(p.reports(key, "new", targets)))
		awaitEvent(t, p, key)
		assert.Equal(t, []string{"a new", "b new"}, loaded(p.reports(key, "new", targets)))
		noEvent(t, p)
	})

	t.Run("one read in flight per gateway", func(t *testing.T) {
		advance(probeInterval)
		pods.set("new", true)
		before := pods.asked.Load()
		p.reports(key, "new", targets)
		require.Eventually(t, func() bool { return pods.asked.Load() == before+2 }, waitFor, time.Millisecond)
		advance(probeInterval)
		p.reports(key, "new", targets)
		p.reports(key, "new", targets)
		awaitEvent(t, p, key) // the pods stopped answering
		assert.Equal(t, before+2, pods.asked.Load(), "a reconcile during a read started another")
		advance(probeInterval)
		pods.set("new", false)
		assert.Equal(t, []string{"a error", "b error"}, loaded(p.reports(key, "new", targets)))
		awaitEvent(t, p, key)
	})
}

// TestProberForgets: a gateway the prober forgets (deleted, or with no
// pods to ask) leaves nothing behind, also when a read of it was in
// flight.
func TestProberForgets(t *testing.T) {
	pods := newFakePods(t, "h")
	pods.set("h", true)
	p := startProber(t, pods, time.Now)
	targets := []podTarget{{podReport{name: "a", ready: true}, "10.0.0.1"}}
	for i := range 50 {
		key := client.ObjectKey{Namespace: "ns", Name: string(rune('a' + i%26))}
		p.reports(key, "h", targets)
		p.forget(key)
	}
	noEvent(t, p)
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.gateways)
}
