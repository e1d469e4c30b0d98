// Package wsecho is the tests' WebSocket backend, in a package of its own
// so that the node's echo server image links nothing else of the tests.
package wsecho

import (
	"net/http"

	"golang.org/x/net/websocket"
)

// Handler is a WebSocket backend: it accepts any handshake and sends
// every message it receives back, whole, as a binary message. It is
// golang.org/x/net/websocket's server, so the frames are real RFC 6455
// frames, masked from the client.
func Handler() http.Handler {
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
