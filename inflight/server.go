package inflight

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Limits bound what each connection to the webhook server may take: time
// for its request, bytes of headers, and, together, how many may be open.
// The zero value of a field means its default.
type Limits struct {
	// HeaderTimeout is how long a connection may take for its TLS
	// handshake, and then for each request's headers: the API server
	// sends them at once. Default 5 s.
	HeaderTimeout time.Duration
	// ReadTimeout is how long a request may take, headers and body
	// together; Budget.Wrap holds room only for the body bytes that came.
	// Default 10 s: a 128 MiB conversion review crosses a cluster network
	// in about one.
	ReadTimeout time.Duration
	// WriteTimeout is how long a response may take to be written, from
	// the end of the request's headers: the API server gives up on a
	// webhook after at most 30 s. Default 30 s.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request. Default 90 s, the API server's own keep-alive.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (net/http allows 4 KiB
	// more). Default 4 KiB: the API server sends about 300 bytes
	// (measured: an AdmissionReview with a traceparent, 303).
	MaxHeaderBytes int
	// MaxConnections caps the connections open from callers without a
	// client certificate the client CA signed (see gate). Default 512:
	// the API server's calls to one webhook take a few dozen at most, and
	// 512 connections with unfinished headers hold some 25 MiB.
	MaxConnections int
}

// The defaults of Limits.
const (
	DefaultHeaderTimeout  = 5 * time.Second
	DefaultReadTimeout    = 10 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	DefaultIdleTimeout    = 90 * time.Second
	DefaultMaxHeaderBytes = 4 << 10
	DefaultMaxConnections = 512
)

// withDefaults fills in the defaults.
func (l Limits) withDefaults() Limits {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&l.HeaderTimeout, DefaultHeaderTimeout)
	set(&l.ReadTimeout, DefaultReadTimeout)
	set(&l.WriteTimeout, DefaultWriteTimeout)
	set(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConnections == 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	return l
}

// Validate reports a limit that is negative, or a read timeout shorter
// than the header timeout it includes.
func (l Limits) Validate() error {
	for name, d := range map[string]time.Duration{"header timeout": l.HeaderTimeout, "read timeout": l.ReadTimeout,
		"write timeout": l.WriteTimeout, "idle timeout": l.IdleTimeout} {
		if d < 0 {
			return fmt.Errorf("webhook server %s %v: must not be negative", name, d)
		}
	}
	if l.MaxHeaderBytes < 0 || l.MaxConnections < 0 {
		return fmt.Errorf("webhook server limits: max header bytes %d and max connections %d must not be negative",
			l.MaxHeaderBytes, l.MaxConnections)
	}
	if d := l.withDefaults(); d.ReadTimeout < d.HeaderTimeout {
		return fmt.Errorf("webhook server read timeout %v: must be at least the header timeout (%v), which it includes",
			d.ReadTimeout, d.HeaderTimeout)
	}
	return nil
}

// Server is the webhook server: controller-runtime's webhook.Server for
// what is registered on it (its mux, which keeps the
// controller_runtime_webhook_* metrics), served by an http.Server with
// Limits behind the connection gate. controller-runtime builds its own
// http.Server with no read timeout, a 32 s header timeout and 1 MiB of
// headers, and offers no option for them: an unauthenticated caller could
// hold the whole in-flight budget with slow bodies, and 300 unfinished
// headers took the operator from 85 MB to 868 MB.
type Server struct {
	webhook.Server // Register, WebhookMux, NeedLeaderElection
	opts           webhook.Options
	limits         Limits
	invalid        error // the limits' Validate
	gate           *gate

	mu      sync.Mutex
	started bool
}

var _ webhook.Server = &Server{}

// NewServer returns the webhook server with opts (as webhook.NewServer
// takes them; ClientCAName is not supported: see ClientAuth in package
// certs) and limits. Start fails on limits that do not Validate.
func NewServer(opts webhook.Options, limits Limits) *Server {
	if opts.WebhookMux == nil {
		opts.WebhookMux = http.NewServeMux()
	}
	if opts.Port == 0 {
		opts.Port = webhook.DefaultPort
	}
	d := limits.withDefaults()
	return &Server{Server: webhook.NewServer(opts), opts: opts, limits: d, invalid: limits.Validate(),
		gate: newGate(max(d.MaxConnections, 1))}
}

var serverLog = logf.Log.WithName("webhook-server")

// Start serves the registered webhooks until ctx ends, then stops
// accepting connections and waits (up to a minute, as controller-runtime
// does) for the requests in flight.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.Port < 0 {
		serverLog.Info("Webhook server is disabled")
		return nil
	}
	if s.invalid != nil {
		return s.invalid
	}
	if s.opts.ClientCAName != "" {
		return errors.New("webhook server: ClientCAName is not supported; client authentication is --webhook-client-ca's")
	}
	cfg, err := s.tlsConfig(ctx)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.addr())
	if err != nil {
		return err
	}
	srv := s.httpServer(ctx)
	serverLog.Info("Serving webhook server", "host", s.opts.Host, "port", s.opts.Port, "limits", fmt.Sprintf("%+v", s.limits))
	published.gate.Store(s.gate)
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			serverLog.Error(err, "Shutting down the webhook server")
		}
		close(stopped)
	}()
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	if err := srv.Serve(tls.NewListener(gateListener{Listener: ln, gate: s.gate}, cfg)); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-stopped
	return nil
}

// tlsConfig is controller-runtime's: HTTP/2 offered unless TLSOpts say
// otherwise, and the certificate from CertDir, watched for changes, unless
// TLSOpts provide one.
func (s *Server) tlsConfig(ctx context.Context) (*tls.Config, error) {
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range s.opts.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate != nil {
		return cfg, nil
	}
	certName, keyName := s.opts.CertName, s.opts.KeyName
	if certName == "" {
		certName = "tls.crt"
	}
	if keyName == "" {
		keyName = "tls.key"
	}
	watcher, err := certwatcher.New(filepath.Join(s.opts.CertDir, certName), filepath.Join(s.opts.CertDir, keyName))
	if err != nil {
		return nil, err
	}
	cfg.GetCertificate = watcher.GetCertificate
	go func() {
		if err := watcher.Start(ctx); err != nil {
			serverLog.Error(err, "certificate watcher error")
		}
	}()
	return cfg, nil
}

func (s *Server) addr() string { return net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)) }

// httpServer is the http.Server with the limits.
func (s *Server) httpServer(ctx context.Context) *http.Server {
	return &http.Server{
		Handler:     s.WebhookMux(),
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return withWriteTimeout(connContext(ctx, c), s.limits.WriteTimeout)
		},
		ReadHeaderTimeout: s.limits.HeaderTimeout,
		ReadTimeout:       s.limits.ReadTimeout,
		WriteTimeout:      s.limits.WriteTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		ErrorLog:          log.New(debugWriter{serverLog.V(1)}, "", 0),
	}
}

// debugWriter writes net/http's server errors (TLS handshakes that failed
// or timed out, headers too large) to the debug log: any caller can cause
// them, as many as it likes.
type debugWriter struct{ log logr.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.log.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// StartedChecker is healthy once the server completes TLS handshakes.
func (s *Server) StartedChecker() healthz.Checker {
	config := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a liveness dial to ourselves
	return func(*http.Request) error {
		if s.opts.Port < 0 {
			return nil
		}
		s.mu.Lock()
		started := s.started
		s.mu.Unlock()
		if !started {
			return errors.New("webhook server has not been started yet")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", s.addr(), config)
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		if err := conn.Close(); err != nil {
			return fmt.Errorf("webhook server is not reachable: closing connection: %w", err)
		}
		return nil
	}
}
