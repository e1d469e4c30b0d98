package testenv

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/apigateway-operator/inflight"
)

// ManagerOptions are the options of a manager under test: the env's scheme,
// no metrics or probe listeners, no leader election, and, when the env
// installed webhook configurations, a webhook server on the host, port and
// certificates those configurations point at.
func (e *Env) ManagerOptions() manager.Options {
	opts := manager.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several managers may start in one test binary; controller names
		// need only be unique within one of them.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if w := e.Webhooks; w != nil {
		// The operator's webhook server, with its default limits.
		opts.WebhookServer = inflight.NewServer(webhook.Options{
			Host:    w.LocalServingHost,
			Port:    w.LocalServingPort,
			CertDir: w.LocalServingCertDir,
		}, inflight.Limits{})
	}
	return opts
}

// StartManager runs mgr until the test ends and returns once its caches have
// synced and, when it has one, its webhook server is serving TLS. The test
// fails if the manager stops with an error.
func (e *Env) StartManager(t testing.TB, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})

	waitCtx, waitCancel := context.WithTimeout(ctx, time.Minute)
	defer waitCancel()
	if !mgr.GetCache().WaitForCacheSync(waitCtx) {
		t.Fatal("manager caches did not sync within a minute")
	}
	if e.Webhooks == nil {
		return
	}
	started := mgr.GetWebhookServer().StartedChecker()
	err := wait.PollUntilContextCancel(waitCtx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return started(nil) == nil, nil
	})
	if err != nil {
		t.Fatalf("webhook server did not serve TLS within a minute: %v", errors.Join(err, started(nil)))
	}
}
