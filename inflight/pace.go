package inflight

import (
	"context"
	"net/http"
	"time"
)

// An answer's bytes must keep leaving: each writeChunk of it within
// writeChunkTimeout (32 KiB/s at the least), or the write fails, the
// handler returns and the request's reservation is given back. The API
// server reads an answer as fast as the network brings it; a caller that
// reads nothing held its reservation (80-95 MB of a 128 MiB budget with 5
// requests to /convert) for the server's whole write timeout before,
// since a handler blocked in Write never returns. The write timeout still
// bounds the whole answer: no chunk's deadline passes it.
const (
	writeChunk        = 64 << 10
	writeChunkTimeout = 2 * time.Second
)

type writeTimeoutKey struct{}

// withWriteTimeout records on a connection's context the server's write
// timeout, which the pacing keeps as the end of every answer.
func withWriteTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, writeTimeoutKey{}, d)
}

// pacedWriter is an http.ResponseWriter whose writes each have a deadline
// (see writeChunk): a large write is cut into chunks, each given its own.
type pacedWriter struct {
	http.ResponseWriter
	rc  *http.ResponseController
	end time.Time // the server's write deadline; zero when unknown
}

// paced wraps w for r, whose headers have just been read: net/http sets
// the connection's write deadline, WriteTimeout from now, at that moment.
func paced(w http.ResponseWriter, r *http.Request) *pacedWriter {
	p := &pacedWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
	if d, ok := r.Context().Value(writeTimeoutKey{}).(time.Duration); ok {
		p.end = time.Now().Add(d)
	}
	return p
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), writeChunk)
		deadline := time.Now().Add(writeChunkTimeout)
		if !p.end.IsZero() && p.end.Before(deadline) {
			deadline = p.end
		}
		// A writer that cannot take a deadline (a test's recorder) leaves
		// the server's write timeout alone in charge.
		_ = p.rc.SetWriteDeadline(deadline)
		m, err := p.ResponseWriter.Write(b[:n])
		written += m
		if err != nil {
			return written, err
		}
		b = b[n:]
	}
	return written, nil
}

// Unwrap lets http.ResponseController reach the server's writer (Flush).
func (p *pacedWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
