// Package webhookserver runs a webhook server in a test.
package webhookserver

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Start runs srv until the test ends (the test fails if it stops with an
// error) and returns once it completes TLS handshakes, within 30 s.
func Start(t testing.TB, srv webhook.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the webhook server stopped with an error: %v", err)
		}
	})
	started := srv.StartedChecker()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	})
	if err != nil {
		t.Fatalf("the webhook server did not serve TLS within 30 s: %v", started(nil))
	}
}
