package dataplane

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// ServeConns listens on a port of 127.0.0.1 the kernel picks, hands each
// connection to handle on a goroutine of its own until the test ends, and
// returns the address: the backend that closes, echoes or holds what it
// is sent, in one place.
func ServeConns(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}
