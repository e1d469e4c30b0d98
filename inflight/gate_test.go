package inflight

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipeConn is the server end of a net.Pipe, which reports whether it was
// closed; peer is the client end, at the address remote.
type pipeConn struct {
	net.Conn
	peer   net.Conn
	remote net.Addr
	closed chan struct{}
}

func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

func (c *pipeConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return c.Conn.Close()
}

func (c *pipeConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// testGate is a gate of max connections on a clock the test moves.
type testGate struct {
	*gate
	clock time.Time
}

func newTestGate(maxConns int) *testGate {
	g := &testGate{gate: newGate(maxConns), clock: time.Unix(0, 0)}
	g.now = func() time.Time { return g.clock }
	g.epoch = g.clock
	return g
}

// open admits a new connection from 10.0.0.1 a second after the last
// event.
func (g *testGate) open(t *testing.T) (*gatedConn, *pipeConn) {
	t.Helper()
	return g.openFrom(t, "10.0.0.1")
}

// openFrom admits a new connection from ip a second after the last event.
func (g *testGate) openFrom(t *testing.T, ip string) (*gatedConn, *pipeConn) {
	t.Helper()
	g.clock = g.clock.Add(time.Second)
	server, client := net.Pipe()
	t.Cleanup(func() { _ = client.Close() })
	raw := &pipeConn{Conn: server, peer: client, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}, closed: make(chan struct{})}
	return g.admit(raw), raw
}

// request is a request that came on c, with a verified client
// certificate when trusted.
func request(c *gatedConn, trusted bool) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	if trusted {
		r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{}}}
	}
	return r.WithContext(context.WithValue(r.Context(), connKey{}, c))
}

// TestGateShedsTheLongestWaiting: at the cap a new connection is admitted
// and the one silent longest is closed: not one in a handler, and not one
// that has just sent a byte after waiting idle.
func TestGateShedsTheLongestWaiting(t *testing.T) {
	g := newTestGate(3)
	first, firstRaw := g.open(t)
	second, secondRaw := g.open(t)
	_, thirdRaw := g.open(t)

	// The first is in a handler; the second, the oldest of the others,
	// has just begun its next request.
	require.NoError(t, startWork(request(first, false)))
	g.clock = g.clock.Add(time.Minute)
	read := make(chan struct{})
	go func() {
		_, _ = second.Read(make([]byte, 1))
		close(read)
	}()
	_, err := secondRaw.peer.Write([]byte("P"))
	require.NoError(t, err)
	<-read

	fourth, _ := g.open(t)
	require.NotNil(t, fourth)
	assert.True(t, thirdRaw.isClosed(), "the third waited longest")
	assert.False(t, firstRaw.isClosed(), "in a handler")
	assert.False(t, secondRaw.isClosed(), "sending a request")
	open, working := g.counts()
	assert.Equal(t, 3, open)
	assert.Equal(t, 1, working)
	assert.Equal(t, int64(1), g.shed.Load())
}

// TestGateRefusesWhenEveryConnectionWorks: with every counted connection
// in a handler, the new one is closed; once one is done, the next is
// admitted, shedding it.
func TestGateRefusesWhenEveryConnectionWorks(t *testing.T) {
	g := newTestGate(2)
	a, aRaw := g.open(t)
	b, _ := g.open(t)
	require.NoError(t, startWork(request(a, false)))
	require.NoError(t, startWork(request(b, false)))
	c, cRaw := g.open(t)
	assert.Nil(t, c)
	assert.True(t, cRaw.isClosed())
	assert.Equal(t, int64(1), g.refused.Load())

	endWork(request(a, false))
	d, _ := g.open(t)
	require.NotNil(t, d)
	assert.True(t, aRaw.isClosed())
	assert.ErrorIs(t, startWork(request(a, false)), errShed, "a request on a shed connection")
}

// TestGateTrustsVerifiedClients: a connection whose request came with a
// verified client certificate is no longer counted, and never shed.
func TestGateTrustsVerifiedClients(t *testing.T) {
	g := newTestGate(2)
	trusted, trustedRaw := g.open(t)
	require.NoError(t, startWork(request(trusted, true)))
	endWork(request(trusted, true))
	for range 5 {
		c, _ := g.open(t)
		require.NotNil(t, c)
	}
	assert.False(t, trustedRaw.isClosed())
	open, _ := g.counts()
	assert.Equal(t, 2, open)
	require.NoError(t, trusted.Close())
	open, _ = g.counts()
	assert.Equal(t, 2, open, "closing a trusted connection leaves the count alone")
}

// TestGateForgetsClosedConnections: a connection its server closed no
// longer counts.
func TestGateForgetsClosedConnections(t *testing.T) {
	g := newTestGate(2)
	a, _ := g.open(t)
	g.open(t)
	require.NoError(t, a.Close())
	open, _ := g.counts()
	assert.Equal(t, 1, open)
	_, _ = g.open(t)
	assert.Zero(t, g.shed.Load())
}

// TestGateShedsFromTheLargestSource: at the cap the connection closed is
// one of the address that holds the most, even when another address's
// connection has been silent longer: an attacker's flood pushes out its
// own connections, never the few of the API server.
func TestGateShedsFromTheLargestSource(t *testing.T) {
	g := newTestGate(4)
	_, apiServerRaw := g.openFrom(t, "10.0.0.1") // silent longest
	var attacker []*pipeConn
	for range 3 {
		_, raw := g.openFrom(t, "10.0.0.66")
		attacker = append(attacker, raw)
	}
	for range 10 {
		_, raw := g.openFrom(t, "10.0.0.66")
		attacker = append(attacker, raw)
	}
	assert.False(t, apiServerRaw.isClosed(), "the API server's connection")
	closed := 0
	for _, c := range attacker {
		if c.isClosed() {
			closed++
		}
	}
	assert.Equal(t, 10, closed, "the attacker's oldest ten")

	// A new source with one connection, when another holds three: the
	// larger one loses its silent-longest.
	_, newcomer := g.openFrom(t, "10.0.0.2")
	assert.False(t, newcomer.isClosed())
	assert.False(t, apiServerRaw.isClosed())
	assert.Equal(t, map[string]int{"10.0.0.1": 1, "10.0.0.66": 2, "10.0.0.2": 1}, g.bySource)
}
