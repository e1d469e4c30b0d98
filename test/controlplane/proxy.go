package controlplane

import (
	"errors"
	"net"
	"sync"
	"time"

	"example.com/apigateway-operator/test/ports"
)

// Proxy is a TCP proxy on 127.0.0.1 between clients (an operator, through
// a kubeconfig naming Addr) and a target (the API server), which injects
// the faults of a flaky network or API server: latency, connection resets,
// silence, and being cut off. It forwards bytes as they are, so TLS runs
// end to end: the API server's certificate names 127.0.0.1, which the
// proxy's address is too.
type Proxy struct {
	target string
	addr   string
	// port stays reserved across Cut and Restore, so that no other
	// process takes it meanwhile.
	port *ports.Port

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*proxied]struct{}
	latency  time.Duration
	resumed  chan struct{} // closed while not silent
	speak    func()        // ends the current silence
	closed   bool
	accepted int
}

// proxied is one client connection and its connection to the target.
type proxied struct{ client, target net.Conn }

// StartProxy listens on a reserved port of 127.0.0.1 (see test/ports) and
// forwards what it accepts to target (host:port).
func StartProxy(target string) (*Proxy, error) {
	port, err := ports.Reserve()
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: port.Addr(), port: port, conns: map[*proxied]struct{}{}, resumed: make(chan struct{}), speak: func() {}}
	close(p.resumed)
	if err := p.Restore(); err != nil {
		return nil, errors.Join(err, port.Release())
	}
	return p, nil
}

// Addr is the proxy's address (host:port); it stays the same across Cut
// and Restore.
func (p *Proxy) Addr() string { return p.addr }

// URL is the proxy's address as an https URL, for a kubeconfig.
func (p *Proxy) URL() string { return "https://" + p.addr }

// Accepted is how many connections the proxy has accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// SetLatency delays every chunk of bytes by d in each direction, from now
// on (0 for none); it does not slow the bytes down.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Reset resets every open connection (a TCP RST to both ends, as a
// middlebox or a restarting API server does) and returns how many it
// reset. New connections are accepted as before.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for c := range p.conns {
		c.reset()
		delete(p.conns, c)
	}
	return n
}

// Silence stops moving bytes, either way, on every connection, old and
// new, until the returned func is called: the API server goes quiet, the
// connections stay open and what was sent meanwhile waits (in the proxy
// and the kernels' buffers) and is delivered when it speaks again, as
// after a network partition TCP heals.
func (p *Proxy) Silence() (speak func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.speak() // one silence at a time
	resumed := make(chan struct{})
	var once sync.Once
	p.resumed, p.speak = resumed, func() { once.Do(func() { close(resumed) }) }
	return p.speak
}

// Cut stops listening and resets every connection: clients are refused
// until Restore, as when the network between them and the API server is
// gone.
func (p *Proxy) Cut() error {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	p.mu.Unlock()
	p.Reset()
	if ln == nil {
		return nil
	}
	return ln.Close()
}

// Restore listens again at Addr after Cut.
func (p *Proxy) Restore() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.serve(ln)
	return nil
}

// Close stops the proxy for good, ends a silence, resets every
// connection and releases the port.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.speak()
	p.mu.Unlock()
	return errors.Join(p.Cut(), p.port.Release())
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = ln.Close()
		return
	}
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return // closed by Cut or Close
			}
			go p.forward(client)
		}
	}()
}

// forward connects client to the target and copies both ways until either
// side closes or the connection is reset.
func (p *Proxy) forward(client net.Conn) {
	target, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		abort(client)
		return
	}
	c := &proxied{client: client, target: target}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		c.reset()
		return
	}
	p.conns[c] = struct{}{}
	p.accepted++
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pump(target, client); done <- struct{}{} }()
	go func() { p.pump(client, target); done <- struct{}{} }()
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = client.Close()
	_ = target.Close()
}

// chunk is bytes read from one side, and when.
type chunk struct {
	data []byte
	read time.Time
}

// pump copies src to dst: a reader queues what it reads, a writer sends
// each chunk once the latency has passed since it was read and the proxy
// is not silent. A reader blocked on a full queue stops reading, so a
// silent proxy pushes back on the sender as a silent peer does.
func (p *Proxy) pump(dst, src net.Conn) {
	queue := make(chan chunk, 16)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: buf[:n], read: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		p.mu.Lock()
		latency, resumed := p.latency, p.resumed
		p.mu.Unlock()
		<-resumed
		time.Sleep(time.Until(c.read.Add(latency)))
		if _, err := dst.Write(c.data); err != nil {
			_ = src.Close() // the reader stops
			for range queue {
			}
			return
		}
	}
	// src closed: pass the half-close on.
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
}

// reset closes both ends with a TCP RST.
func (c *proxied) reset() {
	abort(c.client)
	abort(c.target)
}

// abort closes conn with a TCP RST rather than a FIN.
func abort(conn net.Conn) {
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
