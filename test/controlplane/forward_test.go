package controlplane

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startForwarder(t *testing.T, target string) *Forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := Forward(ln, target)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func dialForwarder(t *testing.T, f *Forwarder) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

func TestForwarderCarriesBytesBothWays(t *testing.T) {
	f := startForwarder(t, echoServer(t))
	for _, msg := range []string{"first", "second connection"} {
		got, err := roundTrip(dialForwarder(t, f), msg, 10*time.Second)
		require.NoError(t, err)
		assert.Equal(t, msg, got)
	}
}

// A client's half-close reaches the target, whose answer and end still
// come back: port-forward and exec streams rely on it.
func TestForwarderPassesHalfClose(t *testing.T) {
	f := startForwarder(t, echoServer(t))
	c := dialForwarder(t, f)
	_, err := c.Write([]byte("bye"))
	require.NoError(t, err)
	require.NoError(t, c.CloseWrite())
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	require.NoError(t, err, "the echo's end (EOF) came back")
	assert.Equal(t, "bye", string(got))
}

// A target that refuses closes the client's connection at once.
func TestForwarderClosesWhenTheTargetRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := dialForwarder(t, startForwarder(t, refused))
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	assert.Zero(t, n)
	assert.ErrorIs(t, err, io.EOF)
}

// Close ends the open connections and stops listening.
func TestForwarderClose(t *testing.T) {
	f := startForwarder(t, echoServer(t))
	c := dialForwarder(t, f)
	_, err := roundTrip(c, "hello", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "the open connection ends")
	_, err = net.DialTimeout("tcp", f.Addr().String(), 5*time.Second)
	assert.Error(t, err, "no longer listening")
}
