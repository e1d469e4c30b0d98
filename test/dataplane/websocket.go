package dataplane

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
)

// WebSocketEcho is a WebSocket backend: it accepts any handshake and
// sends every message it receives back, whole, as a binary message. It is
// golang.org/x/net/websocket's server, so the frames are real RFC 6455
// frames, masked from the client.
func WebSocketEcho() http.Handler {
	return websocket.Server{Handler: func(ws *websocket.Conn) {
		for {
			var msg []byte
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				return
			}
			if err := websocket.Message.Send(ws, msg); err != nil {
				return
			}
		}
	}}
}

// StartWebSocketEcho serves WebSocketEcho on addr (host:port, port 0 for
// a free one) until the test ends and returns its port.
func StartWebSocketEcho(t testing.TB, addr string) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(WebSocketEcho())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	// Close waits for the handlers, whose connections nginx may keep.
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// DialWebSocket opens a WebSocket to ws://host/path through the gateway
// at addr: the handshake succeeds only on a 101 with the right
// Sec-WebSocket-Accept. Every read and write on it has Wait to finish.
func DialWebSocket(addr, host, path string) (*websocket.Conn, error) {
	config, err := websocket.NewConfig("ws://"+host+path, "http://"+host)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialTimeout("tcp", addr, Wait)
	if err != nil {
		return nil, err
	}
	if err := conn.SetDeadline(time.Now().Add(Wait)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	ws, err := websocket.NewClient(config, conn)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return ws, nil
}

// EchoOver sends msg on ws and returns the message that comes back.
func EchoOver(ws *websocket.Conn, msg []byte) ([]byte, error) {
	if err := ws.SetDeadline(time.Now().Add(Wait)); err != nil {
		return nil, err
	}
	if err := websocket.Message.Send(ws, msg); err != nil {
		return nil, err
	}
	var got []byte
	err := websocket.Message.Receive(ws, &got)
	return got, err
}
