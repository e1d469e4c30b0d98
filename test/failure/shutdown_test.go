package failure

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// inFlight is the number of concurrent AdmissionReviews held in the server
// while it shuts down.
const inFlight = 32

// SIGTERM cancels the manager's context (ctrl.SetupSignalHandler). Requests
// the server accepted before must all be answered, and correctly: the
// webhook server stops last and drains its connections. The gate holds each
// request inside the server until the listener is closed, so they are
// provably in flight while shutdown runs. Requests sent after the listener
// closed are refused at connect, which the API server treats as the
// webhook being unreachable; they are not counted.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	gate := make(chan struct{})
	var entered atomic.Int32
	gated := func(path string) func(webhook.Server) {
		return func(s webhook.Server) {
			real, pattern := s.WebhookMux().Handler(&http.Request{Method: http.MethodPost, URL: mustURL(path)})
			require.Equal(t, path, pattern)
			s.Register("/gated"+path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered.Add(1)
				<-gate
				real.ServeHTTP(w, r)
			}))
		}
	}
	srv := startWebhookServer(t, func(s webhook.Server) { gated(mutatePath)(s); gated(validatePath)(s) })

	// Open the keep-alive connections first: in-flight requests ride on
	// established connections, as the API server's do.
	type result struct {
		uid string
		err error
	}
	results := make(chan result, inFlight)
	var warm sync.WaitGroup
	for i := range inFlight {
		warm.Add(1)
		uid := fmt.Sprintf("warm-%d", i)
		body := admissionReview(t, uid, gateway("default", uid))
		go func() {
			defer warm.Done()
			_, err := srv.admit(validatePath, body)
			assert.NoError(t, err, "warming up")
		}()
	}
	warm.Wait()
	for i := range inFlight {
		path := "/gated" + []string{mutatePath, validatePath}[i%2]
		uid := fmt.Sprintf("req-%d", i)
		body := admissionReview(t, uid, gateway("default", uid))
		go func() {
			resp, err := srv.admit(path, body)
			switch {
			case err != nil:
			case !resp.Allowed:
				err = fmt.Errorf("denied: %+v", resp.Result)
			case string(resp.UID) != uid:
				err = fmt.Errorf("answered %q", resp.UID)
			}
			results <- result{uid, err}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return entered.Load() == inFlight, nil
	}), "only %d of %d requests reached the server", entered.Load())

	srv.Cancel() // SIGTERM
	require.NoError(t, wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		// A bare TCP probe (the server logs a handshake error for it): a
		// TLS handshake would fail already, the server's base context
		// being cancelled, while the listener is still open.
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", srv.addr)
		if err != nil {
			return true, nil
		}
		_ = conn.Close()
		return false, nil
	}), "the webhook server kept listening after the manager was cancelled")
	close(gate)

	for range inFlight {
		select {
		case r := <-results:
			assert.NoError(t, r.err, "request %s", r.uid)
		case <-ctx.Done():
			t.Fatal("in-flight requests were not answered")
		}
	}
	srv.Stop(t)
}

func mustURL(path string) *url.URL {
	return &url.URL{Path: path}
}
