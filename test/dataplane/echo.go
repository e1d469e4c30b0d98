package dataplane

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// EchoReply is what every echo backend answers: its Service name and the
// request as it reached it (the raw request URI, and its path decoded).
type EchoReply struct {
	Service    string `json:"service"`
	RequestURI string `json:"requestURI"`
	Path       string `json:"path"`
	Host       string `json:"host"`
	// ForwardedFor and RealIP are the X-Forwarded-For and X-Real-IP
	// headers the backend received.
	ForwardedFor string `json:"forwardedFor,omitempty"`
	RealIP       string `json:"realIP,omitempty"`
	// ForwardedHost, ForwardedProto, ForwardedPort and Forwarded are the
	// X-Forwarded-Host, X-Forwarded-Proto, X-Forwarded-Port and Forwarded
	// headers the backend received, several lines joined by ", ".
	ForwardedHost  string `json:"forwardedHost,omitempty"`
	ForwardedProto string `json:"forwardedProto,omitempty"`
	ForwardedPort  string `json:"forwardedPort,omitempty"`
	Forwarded      string `json:"forwarded,omitempty"`
	// OtherForwarded are the X-Forwarded-Prefix, -Ssl and -Scheme headers
	// the backend received, as "Name: value" lines.
	OtherForwarded []string `json:"otherForwarded,omitempty"`
	// Upgrade and Connection are the hop-by-hop headers the backend
	// received from the gateway (not the client's).
	Upgrade    string `json:"upgrade,omitempty"`
	Connection string `json:"connection,omitempty"`
	// Method and Body are the request's method and body as the backend
	// received them.
	Method string `json:"method,omitempty"`
	Body   string `json:"body,omitempty"`
}

// StartEchoBackends starts one echo backend on 127.0.0.1 per Service name
// and returns each one's port, which is the route's backendService.port:
// the DNS of StartServiceDNS resolves every Service to 127.0.0.1, so nginx
// reaches Service s at 127.0.0.1:ports[s].
func StartEchoBackends(t testing.TB, services ...string) map[string]int32 {
	t.Helper()
	ports := map[string]int32{}
	for _, name := range services {
		ports[name] = StartEchoBackend(t, name, "127.0.0.1:0")
	}
	return ports
}

// StartEchoBackend starts the echo backend of Service name on addr
// (host:port, port 0 for a free one) until the test ends and returns its
// port.
func StartEchoBackend(t testing.TB, name, addr string) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		header := func(name string) string { return strings.Join(r.Header.Values(name), ", ") }
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		_ = json.NewEncoder(w).Encode(EchoReply{Service: name, RequestURI: r.RequestURI, Path: r.URL.Path, Host: r.Host,
			ForwardedFor: header("X-Forwarded-For"), RealIP: r.Header.Get("X-Real-IP"),
			ForwardedHost: header("X-Forwarded-Host"), ForwardedProto: header("X-Forwarded-Proto"),
			ForwardedPort: header("X-Forwarded-Port"), Forwarded: header("Forwarded"),
			OtherForwarded: otherForwarded(r.Header),
			Upgrade:        header("Upgrade"), Connection: header("Connection"), Method: r.Method, Body: string(body)})
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// otherForwarded are h's X-Forwarded-Prefix, -Ssl and -Scheme lines.
func otherForwarded(h http.Header) []string {
	var out []string
	for _, name := range []string{"X-Forwarded-Prefix", "X-Forwarded-Ssl", "X-Forwarded-Scheme"} {
		for _, v := range h.Values(name) {
			out = append(out, name+": "+v)
		}
	}
	return out
}
