package dataplane

import (
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"

	"example.com/apigateway-operator/test/wsecho"
)

// StartWebSocketEcho serves wsecho.Handler on addr (host:port, port 0 for
// a free one) until the test ends and returns its port.
func StartWebSocketEcho(t testing.TB, addr string) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(wsecho.Handler())
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
