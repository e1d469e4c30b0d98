package inflight

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// gate caps the connections the webhook server keeps open for callers it
// cannot tell from an attacker: every connection until it shows a client
// certificate the server's client CA signed (see ClientAuth in package
// certs), which only the API server has.
//
// A full gate does not refuse the next connection: that one may be the
// API server's, and an attacker who keeps the gate full would then switch
// the webhooks off. It closes instead the connection that has waited
// longest for its peer (Accept, the end of its last response, or the first
// byte of the request it is sending, whichever came last), unless that
// connection's request is in its handler. The API server sends a request
// whole, at once, and its connections wait for it only between requests;
// a connection that has waited longest is a slow sender or an idle one,
// and closing an idle keep-alive connection costs its owner a new
// handshake. Only when every connection is in a handler is the new one
// refused.
type gate struct {
	max int
	now func() time.Time

	mu    sync.Mutex
	conns map[*gatedConn]struct{} // counted: not trusted, not closed
	// shed counts the connections the gate closed, refused counts the new
	// ones it refused.
	shed, refused atomic.Int64
}

func newGate(maxConns int) *gate {
	return &gate{max: maxConns, now: time.Now, conns: make(map[*gatedConn]struct{}, maxConns)}
}

// gatedConn is a connection the gate counts, below TLS.
type gatedConn struct {
	net.Conn
	gate *gate
	// idle is set between requests: the next byte read starts one.
	idle atomic.Bool

	// Guarded by gate.mu.
	since   time.Time // when it last began waiting for its peer
	working int       // its requests in their handlers (HTTP/2 has several)
	counted bool      // in gate.conns
	shed    bool      // closed by the gate
}

// admit counts c and returns it wrapped, closing the connection that has
// waited longest when the gate is full; it returns nil, having closed c,
// when every counted connection is in a handler.
func (g *gate) admit(c net.Conn) *gatedConn {
	gc := &gatedConn{Conn: c, gate: g}
	g.mu.Lock()
	var victim *gatedConn
	if len(g.conns) >= g.max {
		if victim = g.longestWaiting(); victim == nil {
			g.mu.Unlock()
			g.refused.Add(1)
			_ = c.Close()
			return nil
		}
		g.forget(victim)
		victim.shed = true
	}
	gc.since, gc.counted = g.now(), true
	g.conns[gc] = struct{}{}
	g.mu.Unlock()
	if victim != nil {
		g.shed.Add(1)
		_ = victim.Conn.Close()
	}
	return gc
}

// longestWaiting is the counted connection not in a handler that has
// waited longest, or nil. A scan, under the cap: a heap would cost every
// request an update to save a few microseconds per new connection at the
// cap.
func (g *gate) longestWaiting() *gatedConn {
	var oldest *gatedConn
	for c := range g.conns {
		if c.working == 0 && (oldest == nil || c.since.Before(oldest.since)) {
			oldest = c
		}
	}
	return oldest
}

// forget stops counting c; the caller holds g.mu.
func (g *gate) forget(c *gatedConn) {
	c.counted = false
	delete(g.conns, c)
}

// Read notes the first byte of a request on an idle connection: from then
// on it waits for the rest of the request, not for a new one.
func (c *gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.idle.Load() && c.idle.CompareAndSwap(true, false) {
		c.gate.mu.Lock()
		c.since = c.gate.now()
		c.gate.mu.Unlock()
	}
	return n, err
}

// Close stops counting the connection and closes it.
func (c *gatedConn) Close() error {
	c.gate.mu.Lock()
	if c.counted {
		c.gate.forget(c)
	}
	c.gate.mu.Unlock()
	return c.Conn.Close()
}

// gateListener passes accepted connections through the gate.
type gateListener struct {
	net.Listener
	gate *gate
}

// Accept returns the next connection the gate admits.
func (l gateListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.gate.admit(c); gc != nil {
			return gc, nil
		}
	}
}

type connKey struct{}

// gatedOf is the gated connection below c (a *tls.Conn over one), or nil.
func gatedOf(c net.Conn) *gatedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	gc, _ := c.(*gatedConn)
	return gc
}

// connContext is the http.Server's ConnContext: a request's context leads
// to its connection, which Budget.Wrap marks as working.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if gc := gatedOf(c); gc != nil {
		return context.WithValue(ctx, connKey{}, gc)
	}
	return ctx
}

// connState is the http.Server's ConnState: an HTTP/1 connection that
// finished a response waits for its peer's next request from now on.
func connState(c net.Conn, state http.ConnState) {
	if state != http.StateIdle {
		return
	}
	if gc := gatedOf(c); gc != nil {
		gc.gate.mu.Lock()
		gc.since = gc.gate.now()
		gc.gate.mu.Unlock()
		gc.idle.Store(true)
	}
}

// connOf is the gated connection r came on, or nil.
func connOf(ctx context.Context) *gatedConn {
	gc, _ := ctx.Value(connKey{}).(*gatedConn)
	return gc
}

// errShed is the error of a request whose connection the gate closed.
var errShed = errors.New("the webhook server closed the connection to make room for another")

// startWork marks the request's connection as in a handler, which the
// gate never closes, and trusts it from now on when the request came with
// a verified client certificate: the gate stops counting it. It fails when
// the gate closed the connection already.
func startWork(r *http.Request) error {
	c := connOf(r.Context())
	if c == nil {
		return nil
	}
	g := c.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.shed {
		return errShed
	}
	c.working++
	if c.counted && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		g.forget(c)
	}
	return nil
}

// endWork undoes startWork.
func endWork(r *http.Request) {
	if c := connOf(r.Context()); c != nil {
		c.gate.mu.Lock()
		c.working--
		c.gate.mu.Unlock()
	}
}

// counts is what the gate holds: counted connections, and of those, the
// ones in a handler.
func (g *gate) counts() (open, working int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		if c.working > 0 {
			working++
		}
	}
	return len(g.conns), working
}
