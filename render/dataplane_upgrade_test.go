package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/dataplane"
)

// TestDataPlaneWebSocket checks, through real nginx, that every route
// passes WebSockets with no setting: the handshake gets its 101 and
// messages go both ways (in a location with the gateway's headers and in
// one that repeats them), an idle one is closed after the route's
// readSeconds, one open across a reload keeps working, and a request
// without Upgrade, or asking for h2c, reaches its backend as a plain
// request. (TestDataPlanePooledConnections passes one through a pool.)
func TestDataPlaneWebSocket(t *testing.T) {
	bin := nginxBinary(t)
	ports := startEchoBackends(t, "users", "fresh")
	chat := dataplane.StartWebSocketEcho(t, "127.0.0.1:0")
	resolver := startServiceDNS(t)
	const host = "api.example.com"
	gw := func(withNew bool) *v1.APIGateway {
		headers := route(host, "/headers", v1.PathTypePrefix, "chat", chat)
		headers.RequestHeaders = &v1.HeaderModifier{Set: []v1.HTTPHeader{{Name: "X-Team", Value: "chat"}}}
		idle := route(host, "/idle", v1.PathTypePrefix, "chat", chat)
		idle.Timeouts = &v1.RouteTimeouts{ReadSeconds: ptr.To[int32](1)}
		g := gateway("ws", route(host, "/chat", v1.PathTypePrefix, "chat", chat), headers, idle,
			route(host, "/users", v1.PathTypePrefix, "users", ports["users"]))
		if withNew {
			g.Spec.Routes = append(g.Spec.Routes, route(host, "/new", v1.PathTypePrefix, "fresh", ports["fresh"]))
		}
		return g
	}
	render := func(withNew bool) func(Options) (string, error) {
		return func(opts Options) (string, error) { return Config(gw(withNew), opts) }
	}
	nginx := startNginx(t, bin, render(false), resolver)

	for _, path := range []string{"/chat/room", "/headers/room"} {
		t.Run("a WebSocket echoes through "+path, func(t *testing.T) {
			ws, err := dataplane.DialWebSocket(nginx.httpAddr, host, path)
			require.NoError(t, err, "no 101:\n%s", nginx.logs())
			defer ws.Close()
			big := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, several TCP segments
			for _, msg := range [][]byte{[]byte("hello"), big, []byte("again")} {
				got, err := dataplane.EchoOver(ws, msg)
				require.NoError(t, err, nginx.logs())
				assert.Equal(t, msg, got)
			}
		})
	}

	t.Run("an idle WebSocket is closed after the route's readSeconds", func(t *testing.T) {
		ws, err := dataplane.DialWebSocket(nginx.httpAddr, host, "/idle/room")
		require.NoError(t, err, nginx.logs())
		defer ws.Close()
		got, err := dataplane.EchoOver(ws, []byte("before"))
		require.NoError(t, err)
		require.Equal(t, []byte("before"), got)
		start := time.Now()
		var msg []byte
		err = websocket.Message.Receive(ws, &msg) // the deadline is dataplane.Wait
		var timeout net.Error
		require.Error(t, err, "the idle WebSocket carried a message")
		assert.False(t, errors.As(err, &timeout) && timeout.Timeout(), "nginx did not close the idle connection within %s: %v", dataplane.Wait, err)
		assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "closed before readSeconds (1 s)")
	})

	plain := func(t *testing.T, headers ...string) echoReply {
		t.Helper()
		status, body, err := rawRequest(nginx.httpAddr, "GET /users/1 HTTP/1.1", host, headers...)
		require.NoError(t, err, nginx.logs())
		require.Equal(t, http.StatusOK, status, body)
		var got echoReply
		require.NoError(t, json.Unmarshal([]byte(body), &got), body)
		return got
	}
	t.Run("a request without Upgrade reaches the backend as any other", func(t *testing.T) {
		got := plain(t)
		assert.Empty(t, got.Upgrade, "Upgrade at the backend")
		assert.Empty(t, got.Connection, "Connection at the backend (none: HTTP/1.1 keep-alive)")
	})
	t.Run("an h2c upgrade is not passed on", func(t *testing.T) {
		for _, upgrade := range []string{"h2c", "H2C", "websocket, h2c"} {
			got := plain(t, "Upgrade: "+upgrade, "HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA")
			assert.Empty(t, got.Upgrade, "Upgrade at the backend for %q", upgrade)
			assert.Empty(t, got.Connection, "Connection at the backend for %q", upgrade)
		}
	})
	t.Run("a route's backend that does not upgrade answers as usual", func(t *testing.T) {
		_, err := dataplane.DialWebSocket(nginx.httpAddr, host, "/users/1")
		var status *websocket.ProtocolError
		require.Error(t, err)
		assert.True(t, errors.As(err, &status) || errors.Is(err, websocket.ErrBadStatus), "%v", err)
	})

	t.Run("a WebSocket open across a reload keeps working", func(t *testing.T) {
		ws, err := dataplane.DialWebSocket(nginx.httpAddr, host, "/chat/long")
		require.NoError(t, err, nginx.logs())
		defer ws.Close()
		got, err := dataplane.EchoOver(ws, []byte("before"))
		require.NoError(t, err)
		require.Equal(t, []byte("before"), got)
		config, err := render(true)(nginx.opts)
		require.NoError(t, err)
		nginx.reload(t, config)
		require.Eventually(t, func() bool {
			status, _, err := rawRequest(nginx.httpAddr, "GET /new/1 HTTP/1.1", host)
			return err == nil && status == http.StatusOK
		}, dataPlaneWait, 20*time.Millisecond, "the reload did not take:\n%s", nginx.logs())
		// The old worker still serves the connection it has.
		got, err = dataplane.EchoOver(ws, []byte("after the reload"))
		require.NoError(t, err, nginx.logs())
		assert.Equal(t, []byte("after the reload"), got)
	})
}
