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
// the webhooks off. It closes instead a connection of the source address
// that holds the most, the one of them silent longest (no byte read
// since), unless its request is in its handler. An attacker in a pod has
// one address; the API server calls from its own (its host's, a
// konnectivity agent's or a managed control plane's) and holds a few
// connections: however fast the attacker connects, and however busy it
// keeps the server, the connections it pushes out are its own. Within a
// source, the silent ones go first: the API server sends its request
// whole, at once, so what goes is a slow sender or an idle keep-alive
// connection, whose owner pays a new handshake for its next request. Only
// when every counted connection is in a handler is the new one refused.
type gate struct {
	max   int
	now   func() time.Time
	epoch time.Time

	mu    sync.Mutex
	conns map[*gatedConn]struct{} // counted: not trusted, not closed
	// bySource counts the counted connections of each source address.
	bySource map[string]int
	// shed counts the connections the gate closed, refused counts the new
	// ones it refused.
	shed, refused atomic.Int64
}

func newGate(maxConns int) *gate {
	return &gate{max: maxConns, now: time.Now, epoch: time.Now(),
		conns: make(map[*gatedConn]struct{}, maxConns), bySource: map[string]int{}}
}

// gatedConn is a connection the gate counts, below TLS.
type gatedConn struct {
	net.Conn
	gate   *gate
	source string // the remote address, without its port
	// lastRead is when a read last brought bytes (or the connection was
	// accepted), in nanoseconds since the gate's epoch: without a lock,
	// since every read sets it.
	lastRead atomic.Int64

	// Guarded by gate.mu.
	working int  // its requests in their handlers (HTTP/2 has several)
	counted bool // in gate.conns
	shed    bool // closed by the gate
}

// sourceOf is the address c comes from, without its port.
func sourceOf(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// admit counts c and returns it wrapped, closing another connection when
// the gate is full (see gate); it returns nil, having closed c, when every
// counted connection is in a handler.
func (g *gate) admit(c net.Conn) *gatedConn {
	gc := &gatedConn{Conn: c, gate: g, source: sourceOf(c)}
	g.mu.Lock()
	var victim *gatedConn
	if len(g.conns) >= g.max {
		if victim = g.victim(gc.source); victim == nil {
			g.mu.Unlock()
			g.refused.Add(1)
			_ = c.Close()
			return nil
		}
		g.forget(victim)
		victim.shed = true
	}
	gc.lastRead.Store(g.clock())
	gc.counted = true
	g.conns[gc] = struct{}{}
	g.bySource[gc.source]++
	g.mu.Unlock()
	if victim != nil {
		g.shed.Add(1)
		_ = victim.Conn.Close()
	}
	return gc
}

// victim is the connection to close for a new one from source: of the
// connections not in a handler, one of the source that would hold the
// most (the new one counted), the one silent longest; nil when every
// connection is in a handler. A scan, under the cap: keeping them
// ordered would cost every read a lock, to save a few microseconds per
// new connection at the cap.
func (g *gate) victim(source string) *gatedConn {
	var (
		best      *gatedConn
		bestCount int
		bestRead  int64
	)
	for c := range g.conns {
		if c.working > 0 {
			continue
		}
		count := g.bySource[c.source]
		if c.source == source {
			count++
		}
		read := c.lastRead.Load()
		if best == nil || count > bestCount || count == bestCount && read < bestRead {
			best, bestCount, bestRead = c, count, read
		}
	}
	return best
}

// clock is the gate's time, in nanoseconds since its epoch.
func (g *gate) clock() int64 { return int64(g.now().Sub(g.epoch)) }

// forget stops counting c; the caller holds g.mu.
func (g *gate) forget(c *gatedConn) {
	c.counted = false
	delete(g.conns, c)
	if g.bySource[c.source]--; g.bySource[c.source] == 0 {
		delete(g.bySource, c.source)
	}
}

// Read notes when bytes came.
func (c *gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.lastRead.Store(c.gate.clock())
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
