package controlplane

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/dataplane"
)

// echoServer echoes every connection on 127.0.0.1 until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	return dataplane.ServeConns(t, func(c net.Conn) { _, _ = io.Copy(c, c); _ = c.Close() })
}

func startProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := StartProxy(echoServer(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip sends msg and reads its echo, waiting at most wait.
func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	return readEcho(c, len(msg), wait)
}

func readEcho(c net.Conn, n int, wait time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, n)
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestProxyForwards(t *testing.T) {
	p := startProxy(t)
	got, err := roundTrip(dial(t, p), "hello", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "hello", got)
	assert.Equal(t, 1, p.Accepted())
}

func TestProxyLatency(t *testing.T) {
	p := startProxy(t)
	c := dial(t, p)
	p.SetLatency(100 * time.Millisecond)
	start := time.Now()
	got, err := roundTrip(c, "slow", 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "slow", got)
	// Each direction waits the latency: a lower bound, whatever the load.
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
}

func TestProxyReset(t *testing.T) {
	p := startProxy(t)
	c := dial(t, p)
	_, err := roundTrip(c, "before", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, p.Reset())
	_, err = readEcho(c, 1, 5*time.Second)
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "want a reset, got %v", err)
	got, err := roundTrip(dial(t, p), "after", 5*time.Second)
	require.NoError(t, err, "a new connection is served")
	assert.Equal(t, "after", got)
}

func TestProxySilence(t *testing.T) {
	p := startProxy(t)
	old := dial(t, p)
	_, err := roundTrip(old, "warm", 5*time.Second)
	require.NoError(t, err)
	speak := p.Silence()
	_, err = roundTrip(old, "held", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "an open connection is silent")
	fresh := dial(t, p)
	_, err = roundTrip(fresh, "new", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a new connection is silent too")
	speak()
	got, err := readEcho(old, len("held"), 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "held", got, "what was sent while silent arrives once it speaks")
	got, err = readEcho(fresh, len("new"), 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "new", got)
}

func TestProxyCutAndRestore(t *testing.T) {
	p := startProxy(t)
	c := dial(t, p)
	require.NoError(t, p.Cut())
	_, err := readEcho(c, 1, 5*time.Second)
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "open connections are reset, got %v", err)
	_, err = net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "new connections are refused")
	require.NoError(t, p.Restore())
	got, err := roundTrip(dial(t, p), "back", 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "back", got)
}
