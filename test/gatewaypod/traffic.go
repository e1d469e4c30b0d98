package gatewaypod

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// StreamHandler is a backend of long-lived responses: each streams a
// "chunk" line every interval until release is closed, then writes "end"
// and finishes (or until its client goes).
func StreamHandler(release <-chan struct{}, interval time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// nginx passes the chunks on as they come.
		w.Header().Set("X-Accel-Buffering", "no")
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-release:
				_, _ = io.WriteString(w, "end\n")
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
				_, _ = io.WriteString(w, "chunk\n")
				w.(http.Flusher).Flush()
			}
		}
	}
}

// Stream is a long-lived response read through a gateway.
type Stream struct {
	// Chunks counts the chunks read so far.
	Chunks atomic.Int64
	conn   net.Conn
	done   chan error
}

// OpenStream sends GET path for host to addr and waits until the first
// chunk of a StreamHandler's response arrives.
func OpenStream(addr, host, path string, timeout time.Duration) (*Stream, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host); err != nil {
		_ = conn.Close()
		return nil, err
	}
	s := &Stream{conn: conn, done: make(chan error, 1)}
	go s.read()
	for deadline := time.Now().Add(timeout); s.Chunks.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = conn.Close()
			return nil, fmt.Errorf("no chunk on %s within %s", path, timeout)
		}
	}
	return s, nil
}

func (s *Stream) read() {
	defer s.conn.Close()
	resp, err := http.ReadResponse(bufio.NewReader(s.conn), nil)
	if err != nil {
		s.done <- err
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "end" {
			s.done <- nil
			return
		}
		s.Chunks.Add(1)
	}
	s.done <- fmt.Errorf("cut after %d chunks: %w", s.Chunks.Load(), errors.Join(io.ErrUnexpectedEOF, sc.Err()))
}

// Done receives once: nil when the stream ended with its "end", else how
// it was cut.
func (s *Stream) Done() <-chan error { return s.done }

// Wait is Done's value, or an error after timeout.
func (s *Stream) Wait(timeout time.Duration) error {
	select {
	case err := <-s.done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("the stream did not end within %s", timeout)
	}
}

// Load sends GETs on keep-alive connections until stopped: each client
// one request at a time, on its own connection pool of one.
type Load struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	sent   atomic.Int64
	mu     sync.Mutex
	failed []string
}

// StartLoad starts clients sending GET path(client, n) for host to addr.
func StartLoad(addr, host string, clients int, path func(client, n int) string) *Load {
	l := &Load{stop: make(chan struct{})}
	for i := range clients {
		c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
		l.wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				l.sent.Add(1)
				if err := get(c, "http://"+addr+path(i, n), host); err != nil {
					l.mu.Lock()
					l.failed = append(l.failed, err.Error())
					l.mu.Unlock()
				}
			}
		})
	}
	return l
}

func get(c *http.Client, url, host string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// Stop stops the clients and returns how many requests they sent and the
// errors of those that failed (transport errors, or a status other than
// 200). It may be called more than once.
func (l *Load) Stop() (int64, []string) {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent.Load(), append([]string(nil), l.failed...)
}
