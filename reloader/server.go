package reloader

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveStatus serves GET StatusPath on addr with what status returns, as
// JSON, and POST PushPath with pushes when it is not nil, until the
// returned stop is called. It serves nothing else: the port is the
// operator's window on the pod, read-only but for signed pushes.
func serveStatus(addr string, status func() Status, pushes http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StatusPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(status())
	})
	if pushes != nil {
		mux.Handle("POST "+PushPath, pushes)
	}
	return serve(ln, mux, "status server", log), nil
}

// readTimeout is the status server's ReadTimeout: see serve.
const readTimeout = 10 * time.Second

// serve serves mux on ln until the returned stop is called; name is the
// server's in the log. ReadTimeout bounds the whole request, a push's
// body included (1 MiB in 10 s is 100 KiB/s, far below a pod network): a
// slow sender holds the push slot that long at most. A push's handler
// extends its own write deadline past WriteTimeout to cover nginx -t and
// the reload.
func serve(ln net.Listener, mux *http.ServeMux, name string, log *slog.Logger) (stop func()) {
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       readTimeout,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(name, "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
}
