package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ClientAuth lets only callers with a client certificate signed by a CA from
// a file reach the webhook server, except on the paths left open.
//
// The kube-apiserver presents a client certificate to admission webhooks
// when its admission configuration gives it one (WebhookAdmission's
// kubeConfigFile), but never to CRD conversion webhooks: it builds their
// clients with no kubeconfig at all. So the TLS layer verifies a certificate
// when one is given (tls.VerifyClientCertIfGiven) and an HTTP middleware
// demands a verified one on every path except the open ones (the conversion
// webhook, which answers only with what it was sent).
//
// The CA file is re-read every reload interval, so a rotated client CA
// applies to new connections without a restart.
//
// The webhook server (package inflight) trusts a connection whose request
// came with a verified certificate: its connection cap no longer counts it,
// nor ever closes it, so no flood of connections without one reaches the
// API server's. Requests refused here (401) are answered before the
// in-flight budget reads their bodies.
type ClientAuth struct {
	file string
	open []string
	log  logr.Logger

	pool atomic.Pointer[x509.CertPool]
	// pem is the file content pool was built from; only the reload loop
	// touches it.
	pem []byte
	// interval is how often the file is re-read.
	interval time.Duration
}

// clientCAReloadInterval matches controller-runtime's certwatcher.
const clientCAReloadInterval = 10 * time.Second

// NewClientAuth reads the PEM CA bundle in file. open are the paths served
// without a client certificate.
func NewClientAuth(file string, open ...string) (*ClientAuth, error) {
	a := &ClientAuth{file: file, open: open, interval: clientCAReloadInterval, log: ctrl.Log.WithName("client-auth")}
	if _, err := a.reload(); err != nil {
		return nil, fmt.Errorf("--webhook-client-ca: %w", err)
	}
	return a, nil
}

// reload reads the file and swaps the pool when its content changed. A file
// that no longer parses leaves the old pool in place.
func (a *ClientAuth) reload() (bool, error) {
	data, err := os.ReadFile(a.file)
	if err != nil {
		return false, err
	}
	if a.pool.Load() != nil && bytes.Equal(data, a.pem) {
		return false, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return false, fmt.Errorf("%s holds no PEM certificate", a.file)
	}
	a.pool.Store(pool)
	a.pem = data
	return true, nil
}

// TLSConfig is a webhook.Options.TLSOpts func. Each handshake gets a copy of
// the server's final configuration with the current pool, so a reload
// applies to the next connection. Session tickets are off: a resumed
// session would skip verification against the current pool.
func (a *ClientAuth) TLSConfig(c *tls.Config) {
	c.ClientAuth = tls.VerifyClientCertIfGiven
	c.ClientCAs = a.pool.Load()
	c.SessionTicketsDisabled = true
	base := c
	c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base.Clone()
		cfg.GetConfigForClient = nil
		cfg.ClientCAs = a.pool.Load()
		return cfg, nil
	}
}

// Server wraps srv so that every handler registered on it, except on the
// open paths, refuses requests without a verified client certificate.
func (a *ClientAuth) Server(srv webhook.Server) webhook.Server {
	return clientAuthServer{Server: srv, auth: a}
}

type clientAuthServer struct {
	webhook.Server
	auth *ClientAuth
}

func (s clientAuthServer) Register(path string, hook http.Handler) {
	if slices.Contains(s.auth.open, path) {
		s.Server.Register(path, hook)
		return
	}
	s.Server.Register(path, requireClientCert(hook))
}

// requireClientCert serves next only for requests that came with a client
// certificate the TLS layer verified; others get 401.
func requireClientCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			http.Error(w, "a client certificate signed by the webhook's client CA is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Start re-reads the CA file every interval until ctx ends.
func (a *ClientAuth) Start(ctx context.Context) error {
	t := time.NewTicker(a.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			changed, err := a.reload()
			if err != nil {
				a.log.Error(err, "reloading the webhook client CA; keeping the previous one", "file", a.file)
			} else if changed {
				a.log.Info("reloaded the webhook client CA", "file", a.file)
			}
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhooks.
func (a *ClientAuth) NeedLeaderElection() bool { return false }
