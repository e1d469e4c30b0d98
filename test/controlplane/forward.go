package controlplane

import (
	"io"
	"net"
	"sync"
	"time"
)

// Forwarder joins each connection a listener accepts to a new connection
// to a target address, bytes as they are (TLS runs end to end).
//
// It lets a listener of one network namespace lead into another: `make
// run` with a node runs the control plane in network namespaces of its
// own (EnterNodeNamespaces), and passes it a listener bound on the
// machine's loopback before it entered them; a socket stays in the
// namespace it was made in, so the machine's kubectl and curl reach it,
// and the forwarder dials the API server on the node's loopback.
type Forwarder struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	done   chan struct{}
}

// Forward serves ln, forwarding to target (host:port), until Close.
func Forward(ln net.Listener, target string) *Forwarder {
	f := &Forwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go f.serve()
	return f
}

// Addr is the listener's address.
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }

// Close stops listening and closes every open connection, both ends.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	err := f.ln.Close()
	<-f.done
	return err
}

func (f *Forwarder) serve() {
	defer close(f.done)
	for {
		client, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		go f.forward(client)
	}
}

// track adds conns to those Close closes, or closes them when it already
// ran; it reports whether they are tracked.
func (f *Forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = struct{}{}
	}
	return true
}

func (f *Forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		delete(f.conns, c)
		_ = c.Close()
	}
}

// forward copies both ways until both sides have finished sending; a
// side's end of input is passed on as a half-close, as kubectl's
// port-forward and exec streams expect of TCP.
func (f *Forwarder) forward(client net.Conn) {
	target, err := net.DialTimeout("tcp", f.target, 10*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	if !f.track(client, target) {
		return
	}
	var wg sync.WaitGroup
	for _, pair := range [][2]net.Conn{{target, client}, {client, target}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(pair[0], pair[1])
			if tcp, ok := pair[0].(*net.TCPConn); ok {
				_ = tcp.CloseWrite()
			} else {
				_ = pair[0].Close()
			}
		}()
	}
	wg.Wait()
	f.untrack(client, target)
}
